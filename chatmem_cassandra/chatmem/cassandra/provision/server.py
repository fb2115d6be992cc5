"""Apache Cassandra 5.0 harness: a real single-node Cassandra on loopback, started with our tooling.

Routes (see ``chatmem_testing/chatmem/testing/harness.py``):

- ``CHATMEM_TEST_CASSANDRA_URL`` (``cassandra://host:port/keyspace?local_dc=dc``);
- local: ``scripts/install/cassandra.sh`` copies the runtime classpath of
  ``org.apache.cassandra:cassandra-all`` from Maven Central into
  ``~/.cache/chatmem/cassandra-<version>/lib``; we generate a ``cassandra.yaml`` (free loopback
  ports, temp directories, small settings) and a ``logback.xml``, and run
  ``org.apache.cassandra.service.CassandraDaemon`` on Java 17 (Cassandra's SecurityManager
  is refused by Java 21+) with the ``--add-exports``/``--add-opens`` set of Cassandra's own
  ``conf/jvm17-server.options`` and a 1 GiB heap;
- testcontainers: ``CassandraContainer`` on the pinned ``cassandra:5.0`` image (or
  ``CHATMEM_TC_IMAGE_CASSANDRA``), on machines with Docker.

Every test gets its own table in one shared keyspace; ``cleanup`` drops it.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import (
    Harness,
    ServerInfo,
    Unavailable,
    cache_dir,
    container_extra,
    free_port,
    start_container,
    stop_process,
    tail,
    testcontainers_class,
    testcontainers_image,
    unique_suffix,
    wait_for_port,
)

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


class CassandraHarness(Harness):
    name = "cassandra"
    env_var = "CHATMEM_TEST_CASSANDRA_URL"
    testcontainers_image: ClassVar[str | None] = "cassandra:5.0"
    test_replication = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    """The replication map (CQL) of the shared test keyspace."""

    # -- provisioning ---------------------------------------------------------------
    def from_env(self, url: str) -> ServerInfo:
        from chatmem.cassandra import parse_url

        target = parse_url(url)
        cluster = connect(target.contact_points[0], target.port, target.local_dc or LOCAL_DC)
        session = cluster.connect()
        return self._info(
            session, cluster, url, "env", lambda: None, keyspace=target.keyspace or TEST_KEYSPACE
        )

    def start_local(self, workdir: Path) -> ServerInfo:
        require_driver()
        java = find_java17()
        version, lib = find_classpath()
        native_port, storage_port = free_port(), free_port()
        while storage_port == native_port:
            storage_port = free_port()
        node = Node.create(
            workdir,
            address="127.0.0.1",
            native_port=native_port,
            storage_port=storage_port,
            seeds=f"127.0.0.1:{storage_port}",
        )
        cmd = node.command(java, lib, os.environ.get("CHATMEM_CASSANDRA_HEAP", "768M"))
        root, log, out = node.root, node.log, node.out
        proc = launch(cmd, root, out)

        procs = [proc]  # restart() appends the new process; stop() ends the current one

        def stop() -> None:
            stop_process(procs[-1], grace=30.0)
            shutil.rmtree(root, ignore_errors=True)

        try:
            wait_for_port(native_port, START_TIMEOUT, proc, out)
            cluster, session, answered = self._connect_when_ready(native_port, proc, out)
        except BaseException:
            logs = f"{tail(out)}\n--- system.log ---\n{tail(log)}"
            stop()
            raise Unavailable(f"Cassandra {version} did not start:\n{logs}") from None
        if not answered.startswith(version):
            stop()
            raise Unavailable(f"expected Cassandra {version}, server says {answered}")
        url = f"cassandra://127.0.0.1:{native_port}/{TEST_KEYSPACE}?local_dc={LOCAL_DC}"

        def stop_all() -> None:
            cluster.shutdown()
            stop()

        return self._info(
            session,
            cluster,
            url,
            "local",
            stop_all,
            keyspace=TEST_KEYSPACE,
            root=str(root),
            pid=proc.pid,
            cmd=cmd,
            procs=procs,
            port=native_port,
            log=str(out),
        )

    def restart(self, server: ServerInfo, downtime: float = 2.0) -> None:
        """SIGTERM (Cassandra drains on shutdown), then the same command: same data
        directories, same ports; returns once the harness's session and control connection
        (which DDL waits on) work again."""
        if server.route != "local":
            super().restart(server, downtime)
        procs = server.extra["procs"]
        stop_process(procs[-1], grace=60.0)
        time.sleep(downtime)
        log = Path(server.extra["log"])
        proc = launch(server.extra["cmd"], Path(server.extra["root"]), log, append=True)
        procs.append(proc)
        wait_for_port(server.extra["port"], START_TIMEOUT, proc, log)
        deadline = time.monotonic() + START_TIMEOUT
        while True:  # the harness's session and control connection reconnect with backoff
            try:
                ask_version(server.extra["session"])
                cluster = server.extra["cluster"]
                cluster.refresh_schema_metadata(max_schema_agreement_wait=10)
                # what DDL waits on: the control connection must be a live one again
                if cluster.control_connection.wait_for_schema_agreement(wait_time=10):
                    return
            except Exception:
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise Unavailable(f"Cassandra schema did not agree after the restart: {tail(log)}")
            time.sleep(1.0)

    def _connect_when_ready(
        self, port: int, proc: subprocess.Popen[bytes], log: Path
    ) -> tuple[Any, Any, str]:
        deadline = time.monotonic() + START_TIMEOUT
        last: Exception | None = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise Unavailable(f"Cassandra exited with {proc.returncode}")
            cluster = connect("127.0.0.1", port)
            try:
                session = cluster.connect()
                return cluster, session, ask_version(session)
            except Exception as exc:  # not ready yet: the driver raises several kinds
                last = exc
                cluster.shutdown()
                time.sleep(1.0)
        raise Unavailable(f"no answer to SELECT release_version within {START_TIMEOUT}s: {last}")

    def start_testcontainers(self) -> ServerInfo:
        CassandraContainer = testcontainers_class("cassandra", "CassandraContainer")
        container = CassandraContainer(testcontainers_image(self))
        labels = start_container(container)
        cluster = None
        try:
            host = container.get_container_host_ip()
            port = int(container.get_exposed_port(9042))
            local_dc = container.get_local_datacenter()
            cluster = connect(host, port, local_dc, timeout=30.0)
            session = cluster.connect()
            url = f"cassandra://{host}:{port}/{TEST_KEYSPACE}?local_dc={local_dc}"

            def stop() -> None:
                cluster.shutdown()
                container.stop()

            return self._info(
                session,
                cluster,
                url,
                "testcontainers",
                stop,
                keyspace=TEST_KEYSPACE,
                **container_extra(container, labels),
            )
        except BaseException:
            if cluster is not None:
                cluster.shutdown()
            container.stop()
            raise

    def _info(
        self, session: Any, cluster: Any, url: str, route: str, stop: Any, **extra: Any
    ) -> ServerInfo:
        version = ask_version(session)
        session.execute(
            f'CREATE KEYSPACE IF NOT EXISTS "{extra["keyspace"]}" WITH replication = '
            f"{self.test_replication}"
        )
        cluster.control_connection.wait_for_schema_agreement()
        return ServerInfo(
            product=PRODUCT,
            version=version,
            url=url,
            route=route,
            stop=stop,
            extra={"session": session, "cluster": cluster, **extra},
        )

    # -- repositories -------------------------------------------------------------------
    def make_repository(self, server: ServerInfo, **options: Any) -> BaseChatMemoryRepository:
        from chatmem.cassandra import CassandraChatMemoryRepository

        options.setdefault("keyspace", server.extra["keyspace"])
        options.setdefault("table_name", f"t_{unique_suffix()}")
        return CassandraChatMemoryRepository(server.extra["session"], **options)

    def namespace_options(self) -> dict[str, Any]:
        return {"table_name": f"t_{unique_suffix()}"}

    def connect_spec(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> tuple[str, dict[str, Any]] | None:
        """Every option of the repository's config (names, TTL, consistency, fetch size),
        so another process or the async twin reads and writes exactly the same table; the
        schema already exists (``"never"``), so replication does not matter."""
        config = repository.config  # type: ignore[attr-defined]
        options = {
            f.name: getattr(config, f.name)
            for f in dataclasses.fields(config)
            if f.name not in ("initialize_schema", "replication")
        }
        options["initialize_schema"] = "never"
        return str(server.url), options

    def cleanup(self, server: ServerInfo, repository: BaseChatMemoryRepository) -> None:
        config = repository.config  # type: ignore[attr-defined]
        session = server.extra["session"]
        session.execute(f'DROP TABLE IF EXISTS "{config.keyspace}"."{config.table_name}"')
        if config.keyspace != server.extra["keyspace"]:
            session.execute(f'DROP KEYSPACE IF EXISTS "{config.keyspace}"')

    def cold_default_url(self, server: ServerInfo) -> str:
        """The server's URL naming a keyspace that does not exist yet (the URL path is how
        the README names a keyspace); the repository creates it and its default table."""
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(str(server.url))
        return urlunsplit(parts._replace(path=f"/cold_{unique_suffix()}"))

    def cleanup_cold_default(self, server: ServerInfo, url: str) -> None:
        from urllib.parse import urlsplit

        keyspace = urlsplit(url).path.strip("/")
        assert keyspace.startswith("cold_")
        server.extra["session"].execute(f'DROP KEYSPACE IF EXISTS "{keyspace}"', timeout=120)


HARNESS = CassandraHarness
