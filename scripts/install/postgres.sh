#!/usr/bin/env bash
# Install what the local PostgreSQL test server needs: Debian's PostgreSQL 15 (server binaries
# under /usr/lib/postgresql/15/bin) and libpq5 (plain psycopg 3 loads it). The harness runs a
# throwaway cluster (initdb in a temp dir, owned by the `postgres` user); the packaged
# cluster is not used. Idempotent, non-interactive, quick when installed.
set -euo pipefail

if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && [[ "$(ldconfig -p)" == *"libpq.so.5"* ]]; then
  echo "postgres: $(ls -d /usr/lib/postgresql/*/bin/initdb | head -n1) and libpq5 already installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq postgresql libpq5 >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq postgresql libpq5 >/dev/null
fi
# The package starts its own cluster on port 5432; the tests never use it.
echo "postgres: installed $(ls -d /usr/lib/postgresql/*/bin/initdb | head -n1)"
