#!/usr/bin/env bash
# Docker for the testcontainers route: Docker 20.10 and debootstrap from Debian, a daemon
# started in the background (scripts/docker/dockerd.sh), and the local server images built
# from what this machine can reach (scripts/docker/build-images.sh; cached: a second run
# only checks each image's recipe hash). Idempotent, non-interactive.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io debootstrap >/dev/null
fi
bash "$HERE/../docker/dockerd.sh"
bash "$HERE/../docker/build-images.sh"
