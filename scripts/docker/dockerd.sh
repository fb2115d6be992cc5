#!/usr/bin/env bash
# Start a Docker daemon in the background if none answers (idempotent): the vfs storage
# driver (overlay is not available on these machines), published container ports bound to
# 127.0.0.1 only (--ip), logs under ~/.cache/chatmem/docker.
# Prints nothing but a one-line status; exits non-zero if the daemon does not come up.
set -euo pipefail
CACHE="${CHATMEM_CACHE:-$HOME/.cache/chatmem}/docker"
mkdir -p "$CACHE"
DOCKER=/usr/bin/docker
[[ -x $DOCKER ]] || DOCKER=docker

if "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  echo "docker: daemon up ($("$DOCKER" version --format '{{.Server.Version}}'))"
  exit 0
fi
command -v dockerd >/dev/null || { echo "docker: dockerd not installed (scripts/install/docker.sh)" >&2; exit 1; }
if [[ $(id -u) != 0 ]]; then
  echo "docker: no daemon and not root: cannot start dockerd" >&2
  exit 1
fi
# Detached from this shell (setsid) so it outlives the test run and is reused next time.
setsid nohup dockerd --storage-driver=vfs --ip=127.0.0.1 >>"$CACHE/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 1 120); do
  if "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    echo "docker: daemon started ($("$DOCKER" version --format '{{.Server.Version}}'), log $CACHE/dockerd.log)"
    exit 0
  fi
  sleep 0.5
done
echo "docker: dockerd did not answer within 60 s; log tail:" >&2
tail -n 30 "$CACHE/dockerd.log" >&2
exit 1
