#!/usr/bin/env bash
# Install what chatmem's local Neo4j test server needs: Java 17, Maven, the neo4j-harness
# 5.26 LTS runtime classpath from Maven Central, and the compiled launcher.
#
# Result: $CACHE/neo4j-<version>/{lib/*.jar, classes/Launcher.class, java, VERSION, .complete}
# where CACHE is $CHATMEM_CACHE or ~/.cache/chatmem. Idempotent: a complete cache returns in
# well under a second. Override the versions tried with CHATMEM_NEO4J_VERSIONS="5.26.28 ...".
set -euo pipefail

CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LAUNCHER_SRC="$HERE/../servers/neo4j/Launcher.java"
# Newest 5.26 LTS patch first; walk down until Maven Central resolves one.
VERSIONS="${CHATMEM_NEO4J_VERSIONS:-5.26.28 5.26.27 5.26.26 5.26.25 5.26.24 5.26.23 5.26.22 5.26.21 5.26.20}"

log() { echo "[install/neo4j] $*" >&2; }

# shellcheck source=../lib/java17.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/java17.sh"

# 1. Java 17 (Neo4j 5.26 runs on 17; the 2025.x line would need 21) and Maven.
if ! JAVA="$(find_java17)" || ! command -v mvn >/dev/null; then
    log "installing openjdk-17 and maven with apt"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
    JAVA="$(find_java17)"
fi
JAVAC="$(dirname "$JAVA")/javac"

# 2. Already installed? (newest complete cache with a launcher compiled from today's source)
for dir in $(ls -d "$CACHE"/neo4j-5.26.* 2>/dev/null | sort -V -r); do
    if [ -f "$dir/.complete" ] && [ -f "$dir/classes/Launcher.class" ] \
       && [ "$dir/classes/Launcher.class" -nt "$LAUNCHER_SRC" ]; then
        log "ready: $dir ($(cat "$dir/VERSION"))"
        exit 0
    fi
done

# 3. Resolve the runtime classpath of org.neo4j.test:neo4j-harness with Maven.
mkdir -p "$CACHE"
resolved=""
for version in $VERSIONS; do
    dir="$CACHE/neo4j-$version"
    if [ -f "$dir/.complete" ]; then resolved="$version"; break; fi
    work="$(mktemp -d)"
    cat > "$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>chatmem</groupId><artifactId>neo4j-server-classpath</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.neo4j.test</groupId><artifactId>neo4j-harness</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
</project>
POM
    log "resolving org.neo4j.test:neo4j-harness:$version"
    rm -rf "$dir.tmp"
    if mvn -B -q -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
           -DoutputDirectory="$dir.tmp/lib" >"$work/mvn.log" 2>&1; then
        rm -rf "$dir" && mv "$dir.tmp" "$dir"
        echo "$version" > "$dir/VERSION"
        touch "$dir/.complete"
        resolved="$version"
        rm -rf "$work"
        break
    fi
    log "neo4j-harness:$version did not resolve: $(grep -m1 -E 'ERROR' "$work/mvn.log" || tail -1 "$work/mvn.log")"
    rm -rf "$work" "$dir.tmp"
done
if [ -z "$resolved" ]; then
    log "no neo4j-harness 5.26.x version resolved from Maven Central (tried: $VERSIONS)"
    exit 1
fi
dir="$CACHE/neo4j-$resolved"

# 4. Compile the launcher once (a single-file source launch would recompile on every start).
rm -rf "$dir/classes.tmp" && mkdir -p "$dir/classes.tmp"
"$JAVAC" -nowarn -cp "$dir/lib/*" -d "$dir/classes.tmp" "$LAUNCHER_SRC"
rm -rf "$dir/classes" && mv "$dir/classes.tmp" "$dir/classes"
echo "$JAVA" > "$dir/java"
log "ready: $dir ($resolved, java $JAVA)"
