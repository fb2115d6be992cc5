#!/usr/bin/env bash
# Docker for the testcontainers route: Docker 20.10 and debootstrap from Debian, a daemon
# started in the background (scripts/docker/dockerd.sh), and the local server images built
# from what this machine can reach (scripts/docker/build-images.sh; cached: a second run
# only checks each image's recipe hash). With CHATMEM_TC_IMAGES=official nothing is built
# (Docker pulls the official images). Idempotent, non-interactive.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
local_images=true
[[ "${CHATMEM_TC_IMAGES:-local}" == official ]] && local_images=false

daemon_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
missing=()
daemon_up || command -v dockerd >/dev/null || missing+=(docker.io)
$local_images && ! command -v debootstrap >/dev/null && missing+=(debootstrap)
if [[ ${#missing[@]} -gt 0 ]]; then
  [[ $(id -u) == 0 ]] || { echo "docker: ${missing[*]} missing and not root" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
bash "$HERE/../docker/dockerd.sh"
if ! $local_images; then
  echo "docker: CHATMEM_TC_IMAGES=official: Docker pulls the official images, none built"
  exit 0
fi
bash "$HERE/../docker/build-images.sh"
