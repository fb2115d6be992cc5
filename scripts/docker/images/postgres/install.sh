#!/bin/bash
# PostgreSQL 15 from Debian (server + psql, which the readiness check runs inside), no
# packaged cluster: the entrypoint initialises $PGDATA like the official postgres image.
set -euo pipefail
mkdir -p /etc/postgresql-common
echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  -o Dpkg::Options::=--force-confold postgresql-15 postgresql-client-15 >/dev/null
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
install -m 755 /ctx/entrypoint.sh /usr/local/bin/docker-entrypoint.sh
