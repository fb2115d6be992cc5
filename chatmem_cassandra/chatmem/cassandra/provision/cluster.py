"""A real 3-node Apache Cassandra 5.0 cluster on loopback (127.0.0.1, .2, .3), started by us.

Backend name ``cassandra_cluster``. The nodes are started from the same cached jars, JVM
options and ``cassandra.yaml`` template as the single-node harness (``cassandra.py``'s
``Node``): one JVM each (``CHATMEM_CASSANDRA_CLUSTER_HEAP``, default 512M), the same native
and storage port numbers on the three addresses, seed 127.0.0.1, one evenly spaced token
each, no JMX. They start one after the other (a node joins only once the previous one is in
the ring); the cluster is ready when every node coordinates a read at consistency ``ALL``
on the replication-factor-3 test keyspace, i.e. each node sees all three up and normal
("UN"). The whole start has one deadline, ``START_TIMEOUT``, and fails with every node's log.

Routes: ``CHATMEM_TEST_CASSANDRA_CLUSTER_URL``
(``cassandra://h1,h2,h3:port/keyspace?local_dc=dc``, a cluster you run: no node control) or
local. The failover tests use ``stop_node`` / ``start_node`` / ``wait_all_up`` here: a real
process stop (SIGTERM, or SIGKILL with ``kill=True``) of one JVM, and the same command again
on the same data.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatmem.testing.harness import ServerInfo, Unavailable, free_port, stop_process, tail

from ._node import (
    LOCAL_DC,
    START_TIMEOUT,
    TEST_KEYSPACE,
    Node,
    ask_version,
    find_classpath,
    find_java17,
    launch,
    require_driver,
)
from .server import CassandraHarness

ADDRESSES = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
SEED = ADDRESSES[0]
REPLICATION_FACTOR = 3
CLUSTER_NAME = "chatmem-test-cluster"
PROBE_TABLE = "chatmem_ring_probe"
SERVER_TIMEOUTS = """\
write_request_timeout: 8000ms
read_request_timeout: 8000ms
range_request_timeout: 8000ms
cas_contention_timeout: 4000ms
"""
"""Cassandra's own replica timeouts, raised from 2 s / 5 s / 10 s / 1 s: three JVMs on two
shared cores answer a Paxos round late under the suite's 16 racing writers (measured: CAS
write timeouts with 0 of 2 replies at the defaults). Still below the driver's 10 s."""
STOP_GRACE = 30.0
"""Seconds a SIGTERMed node may take to drain before it is SIGKILLed."""


def tokens(n: int) -> list[int]:
    """``n`` evenly spaced Murmur3 tokens, so each node owns a third of the ring."""
    return [-(2**63) + i * (2**64 // n) for i in range(n)]


def free_port_everywhere(addresses: Sequence[str], taken: set[int]) -> int:
    """A port number free on every address (each node binds the same number on its own)."""
    for _ in range(100):
        port = free_port()
        if port in taken:
            continue
        try:
            for address in addresses:
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                    s.bind((address, port))
        except OSError:
            continue
        return port
    raise Unavailable(f"no port free on all of {', '.join(addresses)}")


def wait_listening(
    address: str, port: int, deadline: float, proc: subprocess.Popen[bytes], log: Path
) -> None:
    """Wait until ``address:port`` accepts, failing early (with the log) if the JVM died."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Unavailable(f"node {address} exited with {proc.returncode}: {tail(log)}")
        try:
            with socket.create_connection((address, port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise Unavailable(f"node {address} did not listen on {port} in time: {tail(log)}")


@dataclass
class ClusterNode:
    """One node: its address, files, command line and every process run for it."""

    address: str
    node: Node
    cmd: list[str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def running(self) -> bool:
        return bool(self.procs) and self.procs[-1].poll() is None

    def start(self) -> None:
        self.procs.append(launch(self.cmd, self.node.root, self.node.out, append=True))

    def stop(self, *, kill: bool = False) -> None:
        if not self.procs:
            return
        proc = self.procs[-1]
        if kill and proc.poll() is None:
            proc.kill()
            proc.wait(30)
        stop_process(proc, grace=STOP_GRACE)

    def logs(self) -> str:
        """The ends of the node's stdout and system.log, for error messages."""
        return (
            f"--- {self.address} stdout ---\n{tail(self.node.out, 15)}\n"
            f"--- {self.address} system.log ---\n{tail(self.node.log, 25)}"
        )


def cluster_for(addresses: Sequence[str], port: int, request_timeout: float = 30.0) -> Any:
    """The harness's own driver ``Cluster``: every node as a contact point, round robin in
    the one data center (DDL, cleanup and the ring checks run through it)."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy

    profile = ExecutionProfile(
        load_balancing_policy=DCAwareRoundRobinPolicy(local_dc=LOCAL_DC),
        request_timeout=request_timeout,
    )
    return Cluster(
        list(addresses),
        port=port,
        protocol_version=5,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=10.0,
        control_connection_timeout=10.0,
        # a restarted node is reconnected within seconds (the default backs off to 10 min)
        reconnection_policy=ExponentialReconnectionPolicy(0.5, 5.0),
    )


def ring_problem(session: Any, cluster: Any, keyspace: str, expected: int) -> str | None:
    """None when every one of ``expected`` nodes is up in the driver's view, gossips all of
    them as NORMAL and coordinates a read at consistency ALL of the probe table (so its
    failure detector sees every replica up: "UN" from every node); else what is wrong."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    hosts = sorted(cluster.metadata.all_hosts(), key=lambda h: h.address)
    if len(hosts) != expected:
        return f"the driver knows {len(hosts)} of {expected} nodes"
    down = [h.address for h in hosts if not h.is_up]
    if down:
        return f"the driver sees {', '.join(down)} down"
    probe = SimpleStatement(
        f'SELECT k FROM "{keyspace}"."{PROBE_TABLE}" WHERE k = 0',
        consistency_level=ConsistencyLevel.ALL,
    )
    for host in hosts:
        try:
            states = dict(
                session.execute(
                    "SELECT address, status_with_port FROM system_views.gossip_info", host=host
                )
            )
            abnormal = {a: s for a, s in states.items() if not (s or "").startswith("NORMAL")}
            if len(states) != expected or abnormal:
                return f"{host.address} gossips {states}, not {expected} NORMAL nodes"
            session.execute(probe, host=host, timeout=10)
        except Exception as exc:
            return f"{host.address} cannot read at ALL: {type(exc).__name__}: {exc}"
    return None


class CassandraClusterHarness(CassandraHarness):
    name = "cassandra_cluster"
    env_var = "CHATMEM_TEST_CASSANDRA_CLUSTER_URL"
    testcontainers_image = None
    test_replication = f"{{'class': 'NetworkTopologyStrategy', '{LOCAL_DC}': {REPLICATION_FACTOR}}}"

    def from_env(self, url: str) -> ServerInfo:
        from chatmem.cassandra import parse_url

        target = parse_url(url)
        cluster = cluster_for(target.contact_points, target.port)
        session = cluster.connect()
        keyspace = target.keyspace or TEST_KEYSPACE
        return self._cluster_info(session, cluster, url, "env", lambda: None, keyspace, [], 0.0)

    def start_local(self, workdir: Path) -> ServerInfo:
        require_driver()
        java = find_java17()
        version, lib = find_classpath()
        heap = os.environ.get("CHATMEM_CASSANDRA_CLUSTER_HEAP", "512M")
        started = time.monotonic()
        deadline = started + START_TIMEOUT
        native_port = free_port_everywhere(ADDRESSES, set())
        storage_port = free_port_everywhere(ADDRESSES, {native_port})
        root = Path(tempfile.mkdtemp(prefix="cassandra-cluster-", dir=workdir))
        nodes: list[ClusterNode] = []
        for address, token in zip(ADDRESSES, tokens(len(ADDRESSES)), strict=True):
            node = Node.create(
                root,
                address=address,
                native_port=native_port,
                storage_port=storage_port,
                seeds=f"{SEED}:{storage_port}",
                cluster_name=CLUSTER_NAME,
                # fresh and empty: join with a fixed token at once, nothing to stream
                extra_yaml=f"initial_token: {token}\nauto_bootstrap: false\n{SERVER_TIMEOUTS}",
            )
            nodes.append(ClusterNode(address, node, node.command(java, lib, heap)))
        cluster: Any = None

        def stop() -> None:
            if cluster is not None:
                cluster.shutdown()
            for n in reversed(nodes):
                n.stop()
            shutil.rmtree(root, ignore_errors=True)

        try:
            session = None
            for i, n in enumerate(nodes):  # one after the other: each joins a settled ring
                n.start()
                wait_listening(n.address, native_port, deadline, n.procs[-1], n.node.out)
                if cluster is None:
                    cluster = cluster_for(ADDRESSES, native_port)
                    session = self._connect(cluster, deadline)
                self._wait_joined(session, cluster, n, i + 1, deadline)
            answered = ask_version(session)
            if not answered.startswith(version):
                raise Unavailable(f"expected Cassandra {version}, server says {answered}")
            hosts = ",".join(ADDRESSES)
            url = f"cassandra://{hosts}:{native_port}/{TEST_KEYSPACE}?local_dc={LOCAL_DC}"
            info = self._cluster_info(
                session, cluster, url, "local", stop, TEST_KEYSPACE, nodes, deadline
            )
        except BaseException as exc:
            logs = "\n".join(n.logs() for n in nodes)
            stop()
            raise Unavailable(
                f"the 3-node Cassandra {version} cluster did not start within "
                f"{START_TIMEOUT:.0f}s: {exc}\n{logs}"
            ) from None
        seconds = time.monotonic() - started
        info.extra["start_seconds"] = seconds
        # to the real stderr (shown with -s, and in the captured setup output on failure)
        print(
            f"\ncassandra_cluster: 3 nodes up (every node reads at ALL) in {seconds:.0f} s",
            file=sys.__stderr__,
        )
        return info

    @staticmethod
    def _connect(cluster: Any, deadline: float) -> Any:
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                return cluster.connect()
            except Exception as exc:  # not answering CQL yet
                last = exc
                time.sleep(1.0)
        raise Unavailable(f"no CQL session to the first node: {last}")

    @staticmethod
    def _wait_joined(
        session: Any, cluster: Any, node: ClusterNode, count: int, deadline: float
    ) -> None:
        """Wait until the driver sees ``count`` nodes up and node 1 lists the new node as a
        peer (it has joined the ring)."""
        while True:
            hosts = [h for h in cluster.metadata.all_hosts() if h.is_up]
            peers = (
                {str(r[0]) for r in session.execute("SELECT peer FROM system.peers_v2", host=h)}
                if (h := cluster.metadata.get_host(SEED)) is not None and h.is_up
                else set()
            )
            if len(hosts) >= count and (node.address == SEED or node.address in peers):
                return
            if not node.running:
                raise Unavailable(f"node {node.address} exited")
            if time.monotonic() > deadline:
                raise Unavailable(
                    f"node {node.address} did not join: driver sees {len(hosts)} up, "
                    f"{SEED} lists peers {sorted(peers)}"
                )
            time.sleep(0.5)

    def _cluster_info(
        self,
        session: Any,
        cluster: Any,
        url: str,
        route: str,
        stop: Any,
        keyspace: str,
        nodes: list[ClusterNode],
        deadline: float,
    ) -> ServerInfo:
        info = self._info(session, cluster, url, route, stop, keyspace=keyspace, nodes=nodes)
        session.execute(
            f'CREATE TABLE IF NOT EXISTS "{keyspace}"."{PROBE_TABLE}" (k int PRIMARY KEY)',
            timeout=120,
        )
        cluster.control_connection.wait_for_schema_agreement()
        info.version = f"{info.version} (3 nodes, RF {REPLICATION_FACTOR})"
        if nodes:
            self.wait_all_up(info, timeout=max(deadline - time.monotonic(), 10.0))
        return info

    # -- node control (local route only) ----------------------------------------------------
    def nodes(self, server: ServerInfo) -> list[ClusterNode]:
        nodes: list[ClusterNode] = server.extra.get("nodes") or []
        if not nodes:
            raise Unavailable(f"{self.name}: the {server.route} route cannot stop its nodes")
        return nodes

    def stop_node(self, server: ServerInfo, index: int, *, kill: bool = False) -> None:
        """Stop node ``index`` (0-2): SIGTERM (drains, then SIGKILL after a grace), or
        SIGKILL at once with ``kill=True``."""
        self.nodes(server)[index].stop(kill=kill)

    def start_node(self, server: ServerInfo, index: int) -> None:
        """Start node ``index`` again with the same command, data and ports; returns when it
        listens (``wait_all_up`` waits for the ring)."""
        node = self.nodes(server)[index]
        if node.running:
            return
        node.start()
        port = int(server.extra["cluster"].port)
        wait_listening(
            node.address, port, time.monotonic() + START_TIMEOUT, node.procs[-1], node.node.out
        )

    def wait_all_up(self, server: ServerInfo, timeout: float = START_TIMEOUT) -> float:
        """Wait until all three nodes are up and normal from every node's view; the seconds
        it took. Unavailable (with the logs) on timeout."""
        started = time.monotonic()
        session, cluster = server.extra["session"], server.extra["cluster"]
        while True:
            problem = ring_problem(session, cluster, server.extra["keyspace"], len(ADDRESSES))
            if problem is None:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                logs = "\n".join(n.logs() for n in server.extra.get("nodes", []))
                raise Unavailable(f"cluster not all up after {timeout:.0f}s: {problem}\n{logs}")
            time.sleep(1.0)

    def restart(self, server: ServerInfo, downtime: float = 2.0) -> None:
        raise Unavailable(
            f"{self.name}: a whole-cluster restart is not a failover; the node-failure tests "
            "stop and start single nodes (chatmem_cassandra/tests/test_cassandra_cluster.py)"
        )


HARNESS = CassandraClusterHarness
