#!/bin/bash
# Run the in-process Neo4j launcher: Bolt on all interfaces, NEO4J_AUTH honoured.
set -euo pipefail
exec java -Xms128m "-Xmx${NEO4J_HEAP:-512m}" -XX:+UseSerialGC -XX:-OmitStackTraceInFastThrow \
  -XX:+DisableExplicitGC -Djdk.nio.maxCachedBufferSize=1024 \
  -Dio.netty.tryReflectionSetAccessible=true -Dlog4j2.disable.jmx=true \
  -Djava.net.preferIPv4Stack=true --add-opens=java.base/java.nio=ALL-UNNAMED \
  --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
  -cp "/opt/neo4j/classes:/opt/neo4j/lib/*" ContainerLauncher /data
