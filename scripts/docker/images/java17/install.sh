#!/bin/bash
# The Java 17 runtime shared by the Cassandra and Neo4j images (one JRE layer for both).
set -euo pipefail
mkdir -p /usr/share/man/man1
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  openjdk-17-jre-headless >/dev/null
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
java -version
