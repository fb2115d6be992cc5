#!/usr/bin/env bash
# Install what the local MariaDB test server needs: Debian's MariaDB 10.11 server
# (mariadbd, mariadb-install-db). The harness runs a throwaway instance (its own data dir,
# socket and loopback port, --user=mysql); the packaged service is not used.
# Idempotent, non-interactive, quick when installed.
set -euo pipefail

if command -v mariadb-install-db >/dev/null 2>&1 && { command -v mariadbd >/dev/null 2>&1 || [[ -x /usr/sbin/mariadbd ]]; }; then
  echo "mariadb: $(/usr/sbin/mariadbd --version 2>/dev/null || mariadbd --version) already installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d 101 keeps the package from starting its own service during install.
cleanup_policy=0
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  cleanup_policy=1
fi
trap 'if [[ $cleanup_policy == 1 ]]; then rm -f /usr/sbin/policy-rc.d; fi' EXIT
if ! apt-get install -y -qq mariadb-server >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq mariadb-server >/dev/null
fi
echo "mariadb: installed $(/usr/sbin/mariadbd --version)"
