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

Every test gets its own table in one shared keyspace. ``cleanup`` empties a table made with
no options and hands it to the next such test (see ``make_repository``); any other table it
drops.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, ClassVar

from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import (
    Harness,
    ServerInfo,
    Unavailable,
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

from ._node import (
    LOCAL_DC,
    PRODUCT,
    START_TIMEOUT,
    TEST_KEYSPACE,
    Node,
    ask_version,
    connect,
    find_classpath,
    find_java17,
    launch,
    require_driver,
)


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
        """A repository on a table of its own. A table made with no options is emptied by
        ``cleanup`` and handed to the next such test: creating and dropping a table is a
        schema change, which takes seconds on 3 nodes, where emptying one takes milliseconds."""
        from chatmem.cassandra import CassandraChatMemoryRepository

        reusable = not options
        free: list[str] = server.extra.setdefault("free_tables", [])
        options.setdefault("keyspace", server.extra["keyspace"])
        if reusable and free:
            options["table_name"] = free.pop()
        options.setdefault("table_name", f"t_{unique_suffix()}")
        repository = CassandraChatMemoryRepository(server.extra["session"], **options)
        if reusable:
            server.extra.setdefault("reusable_tables", set()).add(options["table_name"])
        return repository

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
        free: list[str] = server.extra.setdefault("free_tables", [])
        reusable: set[str] = server.extra.setdefault("reusable_tables", set())
        if config.table_name in free:
            return  # two repositories on one table: emptied already
        if config.table_name in reusable and _emptied(server, config):
            free.append(config.table_name)
            return
        reusable.discard(config.table_name)
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


def _emptied(server: ServerInfo, config: Any) -> bool:
    """Delete every conversation of a test's default table, at QUORUM so the next test's
    reads see it; False (drop it instead) when the table is gone, of another shape (a test
    changed it), or a replica is missing."""
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args
    from cassandra.query import SimpleStatement
    from chatmem.cassandra._schema import check_table

    session, cluster = server.extra["session"], server.extra["cluster"]
    table = f'"{config.keyspace}"."{config.table_name}"'
    key = f'"{config.conversation_id_column}"'
    try:
        cluster.refresh_table_metadata(config.keyspace, config.table_name)
        check_table(config, cluster.metadata.keyspaces[config.keyspace].tables[config.table_name])
        listing = SimpleStatement(
            f"SELECT DISTINCT {key} FROM {table}", consistency_level=ConsistencyLevel.QUORUM
        )
        ids = [(row[0],) for row in session.execute(listing, timeout=30)]
        delete = session.prepare(f"DELETE FROM {table} WHERE {key} = ?")
        delete.consistency_level = ConsistencyLevel.QUORUM
        results = execute_concurrent_with_args(session, delete, ids, raise_on_first_error=False)
        return all(ok for ok, _ in results)
    except Exception:
        return False


HARNESS = CassandraHarness
