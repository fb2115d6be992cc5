# Sourced by the installers that run a JVM: find_java17 prints the first Java 17 binary found
# (the distribution's, Temurin's, $JAVA_HOME's, then the one on PATH) or returns 1.
# The version banner is read whole: under pipefail, an early-closing `| head | grep -q` can
# kill java with SIGPIPE and skip a good candidate.
find_java17() {
    local candidate
    for candidate in /usr/lib/jvm/java-17-openjdk-*/bin/java /usr/lib/jvm/temurin-17-*/bin/java \
                     "${JAVA_HOME:-/nonexistent}/bin/java" "$(command -v java || true)"; do
        [ -x "$candidate" ] || continue
        if [[ "$("$candidate" -version 2>&1 || true)" =~ version\ \"17[.\"] ]]; then
            echo "$candidate"; return 0
        fi
    done
    return 1
}
