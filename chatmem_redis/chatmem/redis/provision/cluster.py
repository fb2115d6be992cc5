"""Redis Cluster harness: 3 masters + 3 replicas of the single-node harness's Redis 8.2
(the same ``redis-server`` and RediSearch/RedisJSON modules), on free loopback ports.

Routes:

- ``CHATMEM_TEST_REDIS_CLUSTER_URL`` (``redis+cluster://host:port,host:port``): a cluster
  whose every master has both modules loaded;
- local: six ``redis-server --cluster-enabled yes`` processes; the cluster is made from
  Python (``CLUSTER ADDSLOTSRANGE`` on the masters, ``CLUSTER MEET``, ``CLUSTER REPLICATE``),
  since the only shipped ``redis-cli`` needs libssl1.1, absent on Debian 12.

Every test gets its own key prefix and index name (as on one node); ``cleanup`` drops the
index on every master and deletes the keys, scanned master by master.
"""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import time
from pathlib import Path
from typing import Any

from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import (
    Harness,
    ServerInfo,
    Unavailable,
    free_port,
    stop_process,
    unique_suffix,
    wait_for_port,
)

from .server import describe, find_binaries

PRODUCT = "Redis Cluster"
MASTERS = 3
REPLICAS_PER_MASTER = 1
START_TIMEOUT = 60.0
SLOTS = 16384


def _client(port: int) -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)


def _wait(what: str, check: Any, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise Unavailable(f"redis cluster: {what} not reached within {timeout:.0f}s")
        time.sleep(0.1)


def form_cluster(ports: list[int], bus: dict[int, int], masters: int) -> None:
    """Make one cluster of fresh cluster-enabled nodes (``bus``: each one's cluster bus
    port): the first ``masters`` ports get even slot ranges, the others replicate them in
    turn; returns when every node says ``ok`` and every replica is in sync."""
    clients = [_client(p) for p in ports]
    try:
        for i, c in enumerate(clients[:masters]):
            c.execute_command(
                "CLUSTER", "ADDSLOTSRANGE", SLOTS * i // masters, SLOTS * (i + 1) // masters - 1
            )
        for p in ports[1:]:
            clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", p, bus[p])

        def everyone_met() -> bool:
            return all(len(c.execute_command("CLUSTER", "NODES").splitlines()) == len(ports)
                       for c in clients)  # fmt: skip

        _wait("every node meeting the others", everyone_met)
        ids = [c.execute_command("CLUSTER", "MYID") for c in clients[:masters]]
        for i, c in enumerate(clients[masters:]):
            c.execute_command("CLUSTER", "REPLICATE", ids[i % masters])

        def ok() -> bool:
            for c in clients:
                info = c.execute_command("CLUSTER", "INFO")
                info = info.decode() if isinstance(info, bytes) else info
                if "cluster_state:ok" not in info:
                    return False
            return all(
                c.info("replication").get("master_link_status") == "up" for c in clients[masters:]
            )

        _wait("cluster_state:ok with every replica in sync", ok)
    finally:
        for c in clients:
            c.close()


def cluster_url(ports: list[int]) -> str:
    return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in ports)


def cluster_client(url: str) -> Any:
    """A ``redis.cluster.RedisCluster`` on every node of a ``redis+cluster://`` URL."""
    from redis.cluster import ClusterNode, RedisCluster

    nodes = [n.rsplit(":", 1) for n in url.split("://", 1)[1].split("/", 1)[0].split(",")]
    node: Any = ClusterNode  # untyped in redis-py
    return RedisCluster(startup_nodes=[node(h, int(p)) for h, p in nodes])


class RedisClusterHarness(Harness):
    name = "redis_cluster"
    env_var = "CHATMEM_TEST_REDIS_CLUSTER_URL"

    def from_env(self, url: str) -> ServerInfo:
        first = url.split("://", 1)[1].split(",", 1)[0]
        return ServerInfo(PRODUCT, describe(f"redis://{first}/0"), url, route="env")

    def start_local(self, workdir: Path) -> ServerInfo:
        server, search, json_module = find_binaries()
        total = MASTERS * (1 + REPLICAS_PER_MASTER)
        ports = [free_port() for _ in range(total)]
        bus = {p: free_port() for p in ports}
        procs: list[subprocess.Popen[bytes]] = []
        cmds: list[list[str]] = []
        try:
            for port in ports:
                node_dir = workdir / f"node-{port}"
                node_dir.mkdir(parents=True, exist_ok=True)
                cmd = [
                    server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", str(node_dir),
                    "--logfile", str(node_dir / "redis.log"),
                    # the bus port is given: the default (port + 10000) may be out of range
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "2000", "--cluster-port", str(bus[port]),
                    "--loadmodule", search, "--loadmodule", json_module,
                ]  # fmt: skip
                cmds.append(cmd)
                procs.append(
                    subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.STDOUT,
                    )
                )
            for port, proc in zip(ports, procs, strict=True):
                wait_for_port(port, START_TIMEOUT, proc, workdir / f"node-{port}" / "redis.log")
            form_cluster(ports, bus, MASTERS)
            version = describe(f"redis://127.0.0.1:{ports[0]}/0")
        except BaseException:
            for proc in procs:
                stop_process(proc, grace=5)
            raise

        def stop() -> None:
            for proc in procs:
                stop_process(proc, grace=10)

        return ServerInfo(
            PRODUCT,
            f"{version}, {MASTERS} masters + {MASTERS * REPLICAS_PER_MASTER} replicas",
            cluster_url(ports[:MASTERS]),
            route="local",
            stop=stop,
            extra={"ports": ports, "bus": bus, "procs": procs, "cmds": cmds, "masters": MASTERS},
        )

    def namespace_options(self) -> dict[str, Any]:
        token = unique_suffix()
        return {"key_prefix": f"cmt-{token}:", "index_name": f"cmt-{token}"}

    def _client(self, server: ServerInfo) -> Any:
        client = server.extra.get("client")
        if client is None:
            assert server.url is not None
            client = server.extra["client"] = cluster_client(server.url)
        return client

    def make_repository(self, server: ServerInfo, **options: Any) -> BaseChatMemoryRepository:
        from chatmem.redis import RedisChatMemoryRepository

        options = {**self.namespace_options(), **options}
        return RedisChatMemoryRepository(self._client(server), **options)

    def connect_spec(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> tuple[str, dict[str, Any]] | None:
        assert server.url is not None
        config = repository.config  # type: ignore[attr-defined]
        return server.url, {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}

    def _drop(self, server: ServerInfo, index: str, prefix: str) -> None:
        client = self._client(server)
        for node in client.get_primaries():
            c = client.get_redis_connection(node)
            with contextlib.suppress(Exception):  # never created, or dropped already
                c.execute_command("FT.DROPINDEX", index)
            for key in list(c.scan_iter(match=prefix + "*", count=1000)):
                c.delete(key)  # one key per call: keys of one node span many slots

    def cleanup(self, server: ServerInfo, repository: BaseChatMemoryRepository) -> None:
        config = repository.config  # type: ignore[attr-defined]
        self._drop(server, config.index_name, config.key_prefix)

    def cold_default_url(self, server: ServerInfo) -> str:
        from chatmem.redis import DEFAULT_INDEX_NAME, DEFAULT_KEY_PREFIX

        assert server.url is not None
        if server.route == "env":
            raise Unavailable(
                "a cluster given by URL is not ours: the default index and keys stay untouched"
            )
        self._drop(server, DEFAULT_INDEX_NAME, DEFAULT_KEY_PREFIX)
        return server.url

    def cleanup_cold_default(self, server: ServerInfo, url: str) -> None:
        self.cold_default_url(server)


HARNESS = RedisClusterHarness
