#!/bin/bash
# Neo4j 5.26 Community: the org.neo4j.test:neo4j-harness runtime classpath from Maven Central
# (the jars scripts/install/neo4j.sh cached) and ContainerLauncher (compiled on the host) on
# the shared Java 17 image.
set -euo pipefail
mkdir -p /opt/neo4j /data
cp -r /ctx/lib /opt/neo4j/lib
cp -r /ctx/classes /opt/neo4j/classes
install -m 755 /ctx/entrypoint.sh /usr/local/bin/docker-entrypoint.sh
