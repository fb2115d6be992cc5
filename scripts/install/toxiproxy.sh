#!/usr/bin/env bash
# Toxiproxy, the TCP proxy the reliability suite puts between client and server to inject
# latency, resets and stalls. Built from source with `go install` from the Go module proxy
# (`@latest` resolved to v2.5.0 here, whose server lives in cmd/server) and cached as
# ~/.cache/chatmem/toxiproxy-<version>/toxiproxy-server. Idempotent; instant when cached.
set -euo pipefail

VERSION="v2.5.0"
CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"
DEST="$CACHE/toxiproxy-${VERSION#v}"
BIN="$DEST/toxiproxy-server"

if [[ -x "$BIN" ]] && "$BIN" -version >/dev/null 2>&1; then
  echo "toxiproxy: cached $BIN ($("$BIN" -version 2>&1 | head -n1))"
  exit 0
fi

GO="$(command -v go || true)"
[[ -n "$GO" ]] || GO=/usr/local/go/bin/go
[[ -x "$GO" ]] || { echo "toxiproxy: no Go toolchain (need go, e.g. /usr/local/go/bin/go)" >&2; exit 1; }

mkdir -p "$DEST"
BUILD="$(mktemp -d)"
trap 'rm -rf "$BUILD"' EXIT
GOBIN="$BUILD/bin" GOFLAGS=-mod=mod "$GO" install "github.com/Shopify/toxiproxy/v2/cmd/server@${VERSION}"
install -m 0755 "$BUILD/bin/server" "$BIN"
"$BIN" -version
echo "toxiproxy: installed $BIN"
