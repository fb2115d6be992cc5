"""One Cassandra 5.0 node on loopback for the harnesses: the versions and classpath
``scripts/install/cassandra.sh`` installs, the Java 17 command line, the generated
``cassandra.yaml`` and ``logback.xml``, and the driver connection (``server`` runs one node,
``cluster`` three)."""

from __future__ import annotations

import dataclasses
import glob
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from chatmem.testing.harness import Unavailable, cache_dir

PRODUCT = "Apache Cassandra"
VERSIONS = ("5.0.8", "5.0.7", "5.0.6", "5.0.5", "5.0.4")
"""Versions ``scripts/install/cassandra.sh`` may have installed, preferred first."""
TEST_KEYSPACE = "chatmem_test"
LOCAL_DC = "datacenter1"  # SimpleSnitch's data-center name
START_TIMEOUT = 300.0
PAXOS_VARIANT = "v2"
"""Cassandra 5.0's Paxos v2 needs half the round trips of v1 for a lightweight transaction,
and every chatmem write is one (``CHATMEM_CASSANDRA_PAXOS=v1`` tests the 5.0 default)."""

# Cassandra's conf/jvm17-server.options (JPMS + netty) and conf/jvm-server.options essentials.
JVM17_OPTIONS = [
    "-Djdk.attach.allowAttachSelf=true",
    "--add-exports",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports",
    "java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports",
    "java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports",
    "java.sql/java.sql=ALL-UNNAMED",
    "--add-exports",
    "java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports",
    "jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-exports",
    "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports",
    "jdk.attach/sun.tools.attach=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens",
    "jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.io=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens",
    "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
    "-ea",
    "-da:net.openhft...",
    "-XX:+UseG1GC",
    "-XX:+UseTLAB",
    "-XX:+ResizeTLAB",
    "-XX:+PerfDisableSharedMem",
    "-Xss256k",
    "-Djava.net.preferIPv4Stack=true",
]

# Make a fresh single node start in seconds instead of a minute (no gossip settling, no ring
# delay, no fsync), and keep it from phoning home.
FAST_START = [
    "-Dcassandra-foreground=yes",
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
    "-Dcassandra.ring_delay_ms=1000",
    "-Dcassandra.superuser_setup_delay_ms=0",
    "-Dcassandra.unsafesystem=true",
    "-Dcassandra.skip_sync=true",
    "-Dcassandra.available_processors=2",
    "-Dchronicle.analytics.disable=true",
]

YAML = """\
cluster_name: {cluster_name}
num_tokens: 1
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "{seeds}"
listen_address: {address}
rpc_address: {address}
storage_port: {storage_port}
native_transport_port: {native_port}
start_native_transport: true
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
data_file_directories:
  - {root}/data
commitlog_directory: {root}/commitlog
saved_caches_directory: {root}/saved_caches
hints_directory: {root}/hints
cdc_raw_directory: {root}/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 32MiB
auto_snapshot: false
snapshot_before_compaction: false
concurrent_reads: 8
concurrent_writes: 8
concurrent_counter_writes: 4
concurrent_compactors: 1
memtable_flush_writers: 1
native_transport_max_threads: 32
key_cache_size: 16MiB
counter_cache_size: 0MiB
prepared_statements_cache_size: 16MiB
paxos_variant: {paxos}
{extra}"""

LOGBACK = """\
<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%-5level [%thread] %date{{ISO8601}} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
  <logger name="org.apache.cassandra" level="INFO"/>
  <logger name="com.thinkaurelius.thrift" level="ERROR"/>
</configuration>
"""


def find_java17() -> str:
    """The Java 17 ``java`` binary (not a newer default JDK, which refuses Cassandra's SM)."""
    override = os.environ.get("CHATMEM_CASSANDRA_JAVA")
    if override:
        return override
    for candidate in sorted(glob.glob("/usr/lib/jvm/java-17*/bin/java")):
        if os.access(candidate, os.X_OK):
            return candidate
    raise Unavailable("no Java 17 under /usr/lib/jvm/java-17*: run scripts/install/cassandra.sh")


def find_classpath() -> tuple[str, Path]:
    """The installed Cassandra version and its ``lib`` folder of jars."""
    for version in VERSIONS:
        lib = cache_dir() / f"cassandra-{version}" / "lib"
        if (lib / ".complete").exists():
            return version, lib
    raise Unavailable(
        "Cassandra jars not installed in ~/.cache/chatmem: run scripts/install/cassandra.sh"
    )


def require_driver() -> None:
    """Unavailable (not an ImportError) when the cassandra extra is not installed."""
    try:
        import cassandra  # noqa: F401
    except ImportError as exc:
        raise Unavailable('cassandra-driver missing: pip install "chatmem[cassandra]"') from exc


@dataclasses.dataclass(frozen=True)
class Node:
    """One Cassandra node's files: a temp root with its data folders, ``cassandra.yaml``
    (loopback address, ports, seeds) and ``logback.xml``; shared by the single-node harness
    and the 3-node cluster one (``cassandra_cluster.py``)."""

    root: Path
    yaml: Path
    logback: Path

    @property
    def log(self) -> Path:
        """Cassandra's own log (``system.log``)."""
        return self.root / "logs" / "system.log"

    @property
    def out(self) -> Path:
        """The JVM's stdout and stderr."""
        return self.root / "logs" / "stdout.log"

    @classmethod
    def create(
        cls,
        workdir: Path,
        *,
        address: str,
        native_port: int,
        storage_port: int,
        seeds: str,
        cluster_name: str = "chatmem-test",
        extra_yaml: str = "",
    ) -> Node:
        """Write the node's folders and configuration under a fresh folder of ``workdir``;
        ``extra_yaml`` (whole lines) comes before ``CHATMEM_CASSANDRA_YAML_EXTRA``."""
        root = Path(tempfile.mkdtemp(prefix="cassandra-", dir=workdir))
        for sub in ("data", "commitlog", "saved_caches", "hints", "cdc_raw", "logs", "conf"):
            (root / sub).mkdir()
        yaml = root / "conf" / "cassandra.yaml"
        yaml.write_text(
            YAML.format(
                cluster_name=cluster_name,
                seeds=seeds,
                address=address,
                root=root,
                native_port=native_port,
                storage_port=storage_port,
                paxos=os.environ.get("CHATMEM_CASSANDRA_PAXOS", PAXOS_VARIANT),
                extra=extra_yaml + os.environ.get("CHATMEM_CASSANDRA_YAML_EXTRA", ""),
            )
        )
        logback = root / "conf" / "logback.xml"
        logback.write_text(LOGBACK.format(log=root / "logs" / "system.log"))
        return cls(root, yaml, logback)

    def command(self, java: str, lib: Path, heap: str) -> list[str]:
        """The ``java`` command line that runs this node in the foreground."""
        return [
            java,
            f"-Xms{heap}",
            f"-Xmx{heap}",
            *JVM17_OPTIONS,
            *FAST_START,
            f"-Dcassandra.config={self.yaml.as_uri()}",
            f"-Dcassandra.storagedir={self.root}",
            f"-Dcassandra.logdir={self.root / 'logs'}",
            f"-Dlogback.configurationFile={self.logback.as_uri()}",
            "-cp",
            f"{lib}/*",
            "org.apache.cassandra.service.CassandraDaemon",
        ]


def launch(
    cmd: list[str], root: Path, out: Path, *, append: bool = False
) -> subprocess.Popen[bytes]:
    """Start a node's JVM in its own session (so a stop never reaches the test process),
    stdout and stderr into ``out``."""
    with out.open("ab" if append else "wb") as sink:
        return subprocess.Popen(
            cmd,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=root,
            start_new_session=True,
        )


def connect(host: str, port: int, local_dc: str = LOCAL_DC, timeout: float = 10.0) -> Any:
    """A driver ``Cluster`` bound to one loopback node (no peers discovered elsewhere)."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, WhiteListRoundRobinPolicy

    policy = (
        WhiteListRoundRobinPolicy([host])
        if host in ("127.0.0.1", "localhost")
        else DCAwareRoundRobinPolicy(local_dc=local_dc)
    )
    profile = ExecutionProfile(load_balancing_policy=policy, request_timeout=30.0)
    return Cluster(
        [host],
        port=port,
        protocol_version=5,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=timeout,
        control_connection_timeout=timeout,
    )


def ask_version(session: Any) -> str:
    row = session.execute("SELECT release_version FROM system.local").one()
    return str(row[0])
