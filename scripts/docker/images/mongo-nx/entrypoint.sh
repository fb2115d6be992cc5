#!/bin/bash
# Run nx-27017 on all interfaces; once its port accepts, print mongod's readiness line.
set -euo pipefail
/opt/nx/bin/nx-27017 --db memory --host 0.0.0.0 -p 27017 --log-file /dev/stdout \
  --pid-file /tmp/nx.pid "$@" &
pid=$!
trap 'kill -TERM $pid; wait $pid' TERM INT
for _ in $(seq 1 600); do
  if (exec 3<>/dev/tcp/127.0.0.1/27017) 2>/dev/null; then
    echo '{"msg":"Waiting for connections","attr":{"port":27017},"stand-in":"nx-27017 0.8.1"}'
    break
  fi
  kill -0 $pid 2>/dev/null || exit 1
  sleep 0.1
done
wait $pid
