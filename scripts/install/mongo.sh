#!/usr/bin/env bash
# Local MongoDB stand-in for the chatmem mongo tests. No real mongod can be installed on these
# machines (none in Debian, PyPI or npm; mongodb-memory-server and friends download binaries at
# run time), so the harness runs PyPI's nx-27017, a MongoDB wire-protocol server over SQLite,
# and reports it as a stand-in. It goes into a cache venv outside the checkout.
# Idempotent, non-interactive; fast when already installed.
set -euo pipefail

PINS="nx-27017==0.8.1"
# shellcheck source=../lib/cached_venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/cached_venv.sh"
cached_venv mongo "$PINS"
[[ -x "$VENV/bin/nx-27017" ]] || { echo "mongo: missing $VENV/bin/nx-27017 after install" >&2; exit 1; }
"$VENV/bin/python" -c 'import importlib.metadata as m; print("nx-27017", m.version("nx-27017"))'
echo "$PINS" > "$STAMP"
echo "mongo: installed in $VENV"
