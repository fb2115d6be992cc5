#!/usr/bin/env bash
# FerretDB 1.24.2 (a second MongoDB wire-protocol implementation, on its SQLite backend) to
# cross-check the nx-27017 stand-in: built from the Go module proxy's source with the Go
# toolchain at /usr/local/go. `go install ...@v1.24.2` alone gives a binary that panics at
# start (the module zip lacks build/version/version.txt, which the release build generates
# from git), so the source is copied and the version file written before `go build`.
# Cached in ~/.cache/chatmem/ferretdb-1.24.2/ferretdb. Idempotent; fast when cached.
set -euo pipefail
VERSION=1.24.2
CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"
DEST="$CACHE/ferretdb-$VERSION"
# --version is read whole before it is matched: under pipefail, `| grep -q` or `| head`
# closing the pipe early kills it with SIGPIPE now and then, failing a good install
installed_version() { "$DEST/ferretdb" --version 2>/dev/null || true; }
if [[ -x "$DEST/ferretdb" ]] && [[ "$(installed_version)" == *"version: v$VERSION"* ]]; then
  echo "ferretdb: $VERSION already installed in $DEST"
  exit 0
fi
export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "ferretdb: no Go toolchain (/usr/local/go/bin/go)" >&2; exit 1; }
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
go mod download -json "github.com/FerretDB/FerretDB@v$VERSION" >"$work/mod.json"
src="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["Dir"])' "$work/mod.json")"
cp -r "$src" "$work/src" && chmod -R u+w "$work/src"
echo "v$VERSION" >"$work/src/build/version/version.txt"
echo "main" >"$work/src/build/version/branch.txt"
echo "unknown" >"$work/src/build/version/commit.txt"
echo "0" >"$work/src/build/version/package.txt"
cd "$work/src"
mkdir -p "$DEST"
go build -trimpath -o "$DEST/ferretdb.tmp" ./cmd/ferretdb
mv "$DEST/ferretdb.tmp" "$DEST/ferretdb"
[[ "$(installed_version)" == *"version: v$VERSION"* ]] || { echo "ferretdb: built binary does not report v$VERSION" >&2; exit 1; }
echo "ferretdb: installed $VERSION in $DEST"
