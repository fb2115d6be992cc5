#!/bin/bash
# MariaDB 10.11 from Debian; the entrypoint initialises /var/lib/mysql like the official image.
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  mariadb-server mariadb-client >/dev/null
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/lib/mysql/*
mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
install -m 755 /ctx/entrypoint.sh /usr/local/bin/docker-entrypoint.sh
