#!/usr/bin/env bash
# Install the Spring AI harness chatmem's Spring-layout tests drive: Java 17, Maven, Spring AI's
# own JdbcChatMemoryRepository (spring-ai-model-chat-memory-repository-jdbc) with spring-jdbc
# and the PostgreSQL and MariaDB JDBC drivers from Maven Central, and the compiled harness.
#
# Result: $CACHE/spring-ai-<version>/{lib/*.jar, classes/SpringAiHarness.class, java, VERSION,
# .complete} where CACHE is $CHATMEM_CACHE or ~/.cache/chatmem. Idempotent: a complete cache
# with a harness compiled from today's source returns at once. Override the Spring AI version
# with CHATMEM_SPRING_AI_VERSION.
set -euo pipefail

CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HARNESS_SRC="$HERE/../servers/spring-ai/SpringAiHarness.java"
VERSION="${CHATMEM_SPRING_AI_VERSION:-2.0.1}"
POSTGRES_DRIVER=42.7.14
MARIADB_DRIVER=3.5.7
dir="$CACHE/spring-ai-$VERSION"

log() { echo "[install/spring-ai] $*" >&2; }

# shellcheck source=../lib/java17.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/java17.sh"

# 1. Already installed with a harness compiled from today's source?
if [ -f "$dir/.complete" ] && [ -f "$dir/classes/SpringAiHarness.class" ] \
   && [ "$dir/classes/SpringAiHarness.class" -nt "$HARNESS_SRC" ] && [ -x "$(cat "$dir/java")" ]; then
    log "ready: $dir"
    exit 0
fi

# 2. Java 17 (Spring Framework 7's baseline) and Maven.
if ! JAVA="$(find_java17)" || ! command -v mvn >/dev/null; then
    log "installing openjdk-17 and maven with apt"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
    JAVA="$(find_java17)"
fi
JAVAC="$(dirname "$JAVA")/javac"

# 3. Resolve the runtime classpath once (versions of Spring AI's modules from its BOM).
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
        <version>$VERSION</version><type>pom</type><scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>org.springframework.ai</groupId>
      <artifactId>spring-ai-model-chat-memory-repository-jdbc</artifactId>
    </dependency>
    <dependency>
      <groupId>org.postgresql</groupId><artifactId>postgresql</artifactId>
      <version>$POSTGRES_DRIVER</version>
    </dependency>
    <dependency>
      <groupId>org.mariadb.jdbc</groupId><artifactId>mariadb-java-client</artifactId>
      <version>$MARIADB_DRIVER</version>
    </dependency>
  </dependencies>
</project>
POM
    log "resolving spring-ai-model-chat-memory-repository-jdbc:$VERSION"
    rm -rf "$dir.tmp"
    if ! mvn -B -q -Dstyle.color=never -f "$work/pom.xml" dependency:copy-dependencies \
            -DincludeScope=runtime -DoutputDirectory="$dir.tmp/lib" >"$work/mvn.log" 2>&1; then
        log "did not resolve: $(grep -m1 -E 'ERROR' "$work/mvn.log" || tail -1 "$work/mvn.log")"
        rm -rf "$work" "$dir.tmp"
        exit 1
    fi
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    echo "$VERSION" > "$dir/VERSION"
    touch "$dir/.complete"
    rm -rf "$work"
fi

# 4. Compile the harness once (a single-file source launch would recompile on every run).
rm -rf "$dir/classes.tmp" && mkdir -p "$dir/classes.tmp"
"$JAVAC" -nowarn -cp "$dir/lib/*" -d "$dir/classes.tmp" "$HARNESS_SRC"
rm -rf "$dir/classes" && mv "$dir/classes.tmp" "$dir/classes"
echo "$JAVA" > "$dir/java"
log "ready: $dir ($VERSION, java $JAVA)"
