#!/usr/bin/env bash
# Install the Spring AI harnesses chatmem's Spring-layout tests drive: Java 17, Maven, Spring
# AI's own chat memory repositories from Maven Central, and the compiled harnesses.
#
# - spring-ai-<2.0.1>: spring-ai-model-chat-memory-repository-jdbc with spring-jdbc and the
#   PostgreSQL, MariaDB and SQLite (org.xerial:sqlite-jdbc) JDBC drivers; harness
#   SpringAiHarness (Jackson 3).
# - spring-ai-<1.1.2>: spring-ai-model-chat-memory-repository-cassandra, -neo4j and -mongodb
#   (with the DataStax, Neo4j and MongoDB sync drivers they bring); harness SpringAi11Harness
#   (Jackson 2). On 2026-12-04 Maven
#   Central had no 2.0.1 of the Cassandra, Neo4j, MongoDB or Redis repositories (and no Redis
#   one at 1.1.2), so the Cassandra and Neo4j layouts are checked against 1.1.2, Spring's newest there.
#
# Result: $CACHE/spring-ai-<version>/{lib/*.jar, classes/<Harness>.class, java, VERSION,
# .complete} where CACHE is $CHATMEM_CACHE or ~/.cache/chatmem. Idempotent: a complete cache
# with harnesses compiled from today's source returns at once. Override the versions with
# CHATMEM_SPRING_AI_VERSION (JDBC) and CHATMEM_SPRING_AI_CASSANDRA_VERSION.
set -euo pipefail

CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SOURCES="$HERE/../servers/spring-ai"
VERSION="${CHATMEM_SPRING_AI_VERSION:-2.0.1}"
CASSANDRA_VERSION="${CHATMEM_SPRING_AI_CASSANDRA_VERSION:-1.1.2}"
POSTGRES_DRIVER=42.7.14
MARIADB_DRIVER=3.5.7
SQLITE_DRIVER=3.54.1.0

log() { echo "[install/spring-ai] $*" >&2; }

# shellcheck source=../lib/java17.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/java17.sh"

# ready DIR DEPENDENCIES_XML HARNESS...: a complete cache of these dependencies whose
# harnesses are newer than their sources
ready() {
    local dir="$1" deps="$2" name
    shift 2
    [ -f "$dir/.complete" ] && [ -x "$(cat "$dir/java" 2>/dev/null)" ] || return 1
    [ "$(cat "$dir/DEPENDENCIES" 2>/dev/null)" = "$deps" ] || return 1
    for name in "$@"; do
        [ "$dir/classes/$name.class" -nt "$SOURCES/$name.java" ] || return 1
    done
}

# install VERSION DEPENDENCIES_XML HARNESS...: resolve the classpath once, compile the harnesses
install() {
    local version="$1" deps="$2" dir="$CACHE/spring-ai-$1" work name
    shift 2
    if ready "$dir" "$deps" "$@"; then
        log "ready: $dir"
        return 0
    fi
    # resolved for other dependencies (an older harness set): resolve again
    [ "$(cat "$dir/DEPENDENCIES" 2>/dev/null)" = "$deps" ] || rm -f "$dir/.complete"
    if ! JAVA="$(find_java17)" || ! command -v mvn >/dev/null; then
        log "installing openjdk-17 and maven with apt"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
        JAVA="$(find_java17)"
    fi
    mkdir -p "$CACHE"
    if [ ! -f "$dir/.complete" ]; then
        work="$(mktemp -d)"
        cat > "$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>chatmem</groupId><artifactId>spring-ai-harness-classpath</artifactId><version>1</version>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>org.springframework.ai</groupId><artifactId>spring-ai-bom</artifactId>
        <version>$version</version><type>pom</type><scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>$deps
  </dependencies>
</project>
POM
        log "resolving Spring AI $version: $*"
        rm -rf "$dir.tmp"
        if ! mvn -B -q -Dstyle.color=never -f "$work/pom.xml" dependency:copy-dependencies \
                -DincludeScope=runtime -DoutputDirectory="$dir.tmp/lib" >"$work/mvn.log" 2>&1; then
            log "did not resolve: $(grep -m1 -E 'ERROR' "$work/mvn.log" || tail -1 "$work/mvn.log")"
            rm -rf "$work" "$dir.tmp"
            exit 1
        fi
        rm -rf "$dir" && mv "$dir.tmp" "$dir"
        echo "$version" > "$dir/VERSION"
        printf '%s' "$deps" > "$dir/DEPENDENCIES"
        touch "$dir/.complete"
        rm -rf "$work"
    fi
    # compiled once (a single-file source launch would recompile on every run)
    rm -rf "$dir/classes.tmp" && mkdir -p "$dir/classes.tmp"
    for name in "$@"; do
        "$(dirname "$JAVA")/javac" -nowarn -cp "$dir/lib/*" -d "$dir/classes.tmp" "$SOURCES/$name.java"
    done
    rm -rf "$dir/classes" && mv "$dir/classes.tmp" "$dir/classes"
    echo "$JAVA" > "$dir/java"
    log "ready: $dir ($version, java $JAVA)"
}

spring() {  # one Spring AI artifact whose version the BOM gives
    echo "
    <dependency>
      <groupId>org.springframework.ai</groupId><artifactId>$1</artifactId>
    </dependency>"
}

install "$VERSION" "$(spring spring-ai-model-chat-memory-repository-jdbc)
    <dependency>
      <groupId>org.postgresql</groupId><artifactId>postgresql</artifactId>
      <version>$POSTGRES_DRIVER</version>
    </dependency>
    <dependency>
      <groupId>org.mariadb.jdbc</groupId><artifactId>mariadb-java-client</artifactId>
      <version>$MARIADB_DRIVER</version>
    </dependency>
    <dependency>
      <groupId>org.xerial</groupId><artifactId>sqlite-jdbc</artifactId>
      <version>$SQLITE_DRIVER</version>
    </dependency>" SpringAiHarness

install "$CASSANDRA_VERSION" "$(spring spring-ai-model-chat-memory-repository-cassandra)$(
    spring spring-ai-model-chat-memory-repository-neo4j)$(
    spring spring-ai-model-chat-memory-repository-mongodb)" SpringAi11Harness
