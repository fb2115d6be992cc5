#!/bin/bash
# redis-server on all interfaces, no persistence, RediSearch + RedisJSON loaded.
# shellcheck disable=SC2086
exec /opt/redis-stack/redis-server --bind 0.0.0.0 --protected-mode no --save "" --appendonly no \
  --loadmodule /opt/redis-stack/redisearch.so --loadmodule /opt/redis-stack/rejson.so \
  ${REDIS_ARGS:-} "$@"
