#!/usr/bin/env bash
# Install what the local Apache Cassandra server needs: Java 17 + Maven (Debian packages) and
# the runtime classpath of org.apache.cassandra:cassandra-all from Maven Central, copied into
# ~/.cache/chatmem/cassandra-<version>/lib. Idempotent, non-interactive; fast when cached.
#
# The 3-node cluster harness (chatmem_cassandra/chatmem/cassandra/provision/cluster.py) runs the same
# jars on 127.0.0.1, 127.0.0.2 and 127.0.0.3: Linux routes all of 127.0.0.0/8 to lo, nothing to
# set up (macOS would need `ifconfig lo0 alias 127.0.0.2 up` and .3).
#
# CHATMEM_CASSANDRA_VERSION pins a version; otherwise the first of CANDIDATES that resolves
# is used (5.0.8 resolved on Maven Central when this was written).
set -euo pipefail

CANDIDATES=(${CHATMEM_CASSANDRA_VERSION:-5.0.8 5.0.7 5.0.6 5.0.5 5.0.4})
CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"

# A cached classpath is complete once its marker exists: nothing to do.
for v in "${CANDIDATES[@]}"; do
  if [[ -f "$CACHE/cassandra-$v/lib/.complete" ]]; then
    echo "cassandra: $v already installed in $CACHE/cassandra-$v"
    exit 0
  fi
done

java17() { ls -d /usr/lib/jvm/java-17*/bin/java 2>/dev/null | head -n1; }
if [[ -z "$(java17)" ]] || ! command -v mvn >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq openjdk-17-jre-headless maven >/dev/null
fi
JAVA="$(java17)"
export JAVA_HOME="${JAVA%/bin/java}"

for v in "${CANDIDATES[@]}"; do
  dest="$CACHE/cassandra-$v"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>chatmem</groupId><artifactId>cassandra-classpath</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId>
      <version>$v</version>
    </dependency>
  </dependencies>
</project>
POM
  rm -rf "$dest.tmp"
  if mvn -q -B -Dstyle.color=never -f "$work/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dest.tmp/lib"; then
    rm -rf "$dest"
    mv "$dest.tmp" "$dest"
    echo "$v" >"$dest/lib/.complete"
    echo "cassandra: installed $v ($(ls "$dest/lib" | wc -l) jars) in $dest"
    exit 0
  fi
  echo "cassandra: $v did not resolve, trying the next candidate" >&2
  rm -rf "$dest.tmp" "$work"
done
echo "cassandra: no candidate version resolved from Maven Central: ${CANDIDATES[*]}" >&2
exit 1
