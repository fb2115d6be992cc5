#!/bin/bash
# A MongoDB wire-protocol STAND-IN (PyPI nx-27017 over SQLite), not MongoDB: no mongod can be
# obtained here.
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  python3 python3-venv >/dev/null
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
python3 -m venv /opt/nx
/opt/nx/bin/pip install -q --no-cache-dir --disable-pip-version-check --no-index \
  --find-links /ctx/wheels -r /ctx/requirements.txt
install -m 755 /ctx/entrypoint.sh /usr/local/bin/docker-entrypoint.sh
