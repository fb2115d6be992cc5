#!/usr/bin/env bash
# Local MongoDB stand-in for the chatmem mongo tests. No real mongod can be installed on these
# machines (none in Debian, PyPI or npm; mongodb-memory-server and friends download binaries at
# run time), so the harness runs PyPI's nx-27017, a MongoDB wire-protocol server over SQLite,
# and reports it as a stand-in. It goes into a cache venv outside the checkout.
# Idempotent, non-interactive; fast when already installed.
set -euo pipefail

CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"
VENV="$CACHE/mongo-venv"
STAMP="$VENV/.chatmem-mongo-installed"
PINS="nx-27017==0.8.1"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$PINS" ]]; then
  echo "mongo: already installed in $VENV"
  exit 0
fi

PYTHON="${PYTHON:-python3}"
mkdir -p "$CACHE"
if [[ ! -x "$VENV/bin/python" ]]; then
  if ! "$PYTHON" -m venv "$VENV"; then
    rm -rf "$VENV"
    apt-get update -qq && apt-get install -y -qq python3-venv
    "$PYTHON" -m venv "$VENV"
  fi
fi
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $PINS
[[ -x "$VENV/bin/nx-27017" ]] || { echo "mongo: missing $VENV/bin/nx-27017 after install" >&2; exit 1; }
"$VENV/bin/python" -c 'import importlib.metadata as m; print("nx-27017", m.version("nx-27017"))'
echo "$PINS" > "$STAMP"
echo "mongo: installed in $VENV"
