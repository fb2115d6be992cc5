#!/usr/bin/env bash
# The whole test suite: installs the tools and the local servers, then runs every nox
# session (lint, typecheck, unit tests on every Python, conformance per backend x Python)
# and prints the conformance summary. Arguments go to nox (e.g. -s conformance).
set -uo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

# Every CPython that pyenv has (never downloaded); nox skips the missing ones.
if command -v pyenv >/dev/null 2>&1; then
  versions=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.(10|11|12|13)\.[0-9]+$' | sort -t. -k2,2n -r || true)
  main=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.11\.' | head -n1 || true)
  if [ -n "$versions" ]; then
    export PYENV_VERSION=$( (echo "$main"; echo "$versions") | grep -v '^$' | awk '!seen[$0]++' | paste -sd: -)
  fi
fi

python3 -m venv .work/tools >/dev/null
.work/tools/bin/pip install -q --disable-pip-version-check "nox>=2024.3" "uv>=0.4" || exit 1
export PATH="$PWD/.work/tools/bin:$PATH"

# The testcontainers sessions run on the images scripts/install/docker.sh builds here
# (CHATMEM_TC_IMAGES=official: on the official images, pulled by Docker).
export CHATMEM_TC_IMAGES="${CHATMEM_TC_IMAGES:-local}"
for installer in scripts/install/*.sh; do
  [ -e "$installer" ] || continue
  echo "== installing servers: $installer"
  bash "$installer" || { echo "installer failed: $installer"; exit 1; }
done

# Backends that must run here: a missing server fails the run instead of skipping.
export CHATMEM_REQUIRE_BACKENDS="${CHATMEM_REQUIRE_BACKENDS:-memory,sqlite,postgres,mariadb,redis,redis_cluster,mongo,cassandra,cassandra_cluster,neo4j,pgvector,ferretdb}"
export CHATMEM_SUMMARY_DIR="$PWD/.work/summary"
rm -rf "$CHATMEM_SUMMARY_DIR" .work/times.md  # times.json stays: it balances the next run

if [ $# -gt 0 ]; then
  nox "$@"
  status=$?
else
  # every default session plus the reliability suite's short profile on the servers that
  # start in seconds (the full profile on every backend: nox -s reliability -- --profile
  # full), two sessions at a time; the per-session time table comes last
  enforce=()
  [ "${CHATMEM_ENFORCE_BUDGET:-0}" = 1 ] && enforce=(--enforce-budget)
  python3 scripts/lib/lanes.py --budget "${CHATMEM_BUDGET_MINUTES:-60}" "${enforce[@]}" --since "$started" \
    --also "reliability(sqlite)" "reliability(postgres)" "reliability(mariadb)" \
    "reliability(redis)" "reliability(mongo)"
  status=$?
fi
nox -s summary >/dev/null 2>&1 || true
[ -f conformance-summary.md ] && cat conformance-summary.md
[ -f .work/times.md ] && cat .work/times.md
exit $status
