#!/bin/bash
# Write cassandra.yaml for a single node on the container's address (like the official image:
# CASSANDRA_* variables, MAX_HEAP_SIZE, HEAP_NEWSIZE, JVM_OPTS), then run CassandraDaemon in the
# foreground, logging to stdout.
set -euo pipefail
CONF=/opt/cassandra/conf DATA=/var/lib/cassandra
IP="$(hostname -i | awk '{print $1}')"
SNITCH="${CASSANDRA_ENDPOINT_SNITCH:-SimpleSnitch}"
mkdir -p "$DATA"/{data,commitlog,saved_caches,hints,cdc_raw}
if [[ "$SNITCH" == GossipingPropertyFileSnitch ]]; then
  printf 'dc=%s\nrack=%s\n' "${CASSANDRA_DC:-datacenter1}" "${CASSANDRA_RACK:-rack1}" \
    >"$CONF/cassandra-rackdc.properties"
fi
cat >"$CONF/cassandra.yaml" <<YAML
cluster_name: '${CASSANDRA_CLUSTER_NAME:-Test Cluster}'
num_tokens: ${CASSANDRA_NUM_TOKENS:-16}
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: $SNITCH
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$IP:7000"
listen_address: $IP
rpc_address: 0.0.0.0
broadcast_rpc_address: $IP
storage_port: 7000
native_transport_port: 9042
start_native_transport: true
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
data_file_directories:
  - $DATA/data
commitlog_directory: $DATA/commitlog
saved_caches_directory: $DATA/saved_caches
hints_directory: $DATA/hints
cdc_raw_directory: $DATA/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
auto_snapshot: false
concurrent_compactors: 1
memtable_flush_writers: 1
paxos_variant: ${CASSANDRA_PAXOS_VARIANT:-v2}
YAML
HEAP="${MAX_HEAP_SIZE:-1024M}"
mapfile -t OPTS < <(grep -v '^#' "$CONF/jvm17.options")
# shellcheck disable=SC2086
exec java "-Xms$HEAP" "-Xmx$HEAP" "-Xmn${HEAP_NEWSIZE:-128M}" "${OPTS[@]}" \
  -Dcassandra-foreground=yes -Dcassandra.unsafesystem=true -Dcassandra.skip_sync=true \
  -Dcassandra.ring_delay_ms=1000 -Dcassandra.superuser_setup_delay_ms=0 \
  -Dchronicle.analytics.disable=true \
  "-Dcassandra.config=file://$CONF/cassandra.yaml" "-Dcassandra.storagedir=$DATA" \
  "-Dcassandra.logdir=$DATA" "-Dlogback.configurationFile=file://$CONF/logback.xml" \
  ${JVM_OPTS:-} -cp "$CONF:/opt/cassandra/lib/*" org.apache.cassandra.service.CassandraDaemon
