#!/bin/bash
# Apache Cassandra 5.0.8: the cassandra-all runtime classpath from Maven Central (the jars
# scripts/install/cassandra.sh cached) on the shared Java 17 image.
set -euo pipefail
mkdir -p /opt/cassandra/conf /var/lib/cassandra
cp -r /ctx/lib /opt/cassandra/lib
install -m 644 /ctx/jvm17.options /ctx/logback.xml /opt/cassandra/conf/
install -m 755 /ctx/entrypoint.sh /usr/local/bin/docker-entrypoint.sh
rm -f /opt/cassandra/lib/.complete
