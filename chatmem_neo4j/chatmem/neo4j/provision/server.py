"""Neo4j 5.26 LTS harness: a real in-process Neo4j on loopback, started with our tooling.

Routes (see ``chatmem_testing/chatmem/testing/harness.py``):

- ``CHATMEM_TEST_NEO4J_URL`` (``neo4j://user:pass@host:7687`` or ``bolt://...``);
- local: ``scripts/install/neo4j.sh`` copies the runtime classpath of
  ``org.neo4j.test:neo4j-harness:5.26.x`` from Maven Central into
  ``~/.cache/chatmem/neo4j-<version>/lib`` and compiles ``scripts/servers/neo4j/Launcher.java``
  next to it. The launcher runs Neo4j in its own JVM (Java 17, small heap): HTTP off, Bolt on
  127.0.0.1 at a port the OS picks, auth and usage reporting off. It prints the Bolt URI and
  runs until SIGTERM; ``stop`` sends SIGTERM, then SIGKILL after a grace period;
- testcontainers: ``Neo4jContainer`` on the pinned ``neo4j:5.26`` image (or
  ``CHATMEM_TC_IMAGE_NEO4J``), on machines with Docker.

Community edition has one user database, so every test gets its own labels (six per
repository, with a unique suffix) and ``cleanup`` deletes those nodes. Labels made with no
options keep their constraint and indexes and go to the next such test (see
``make_repository``); for any other labels ``cleanup`` drops them too.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import (
    Harness,
    ServerInfo,
    Unavailable,
    cache_dir,
    container_extra,
    start_container,
    stop_process,
    tail,
    testcontainers_class,
    testcontainers_image,
    unique_suffix,
)

PRODUCT = "Neo4j"
START_TIMEOUT = 180.0
LABEL_BASES = {
    "session_label": "Session",
    "message_label": "Message",
    "metadata_label": "Metadata",
    "tool_call_label": "ToolCall",
    "tool_response_label": "ToolResponse",
    "media_label": "Media",
}

# Neo4j's own server defaults (conf/neo4j.conf server.jvm.additional), minus what only
# matters for big heaps; the --add-opens are what Neo4j 5 needs on Java 17.
JVM_OPTIONS = [
    "-XX:+UseSerialGC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dlog4j2.disable.jmx=true",
    "-Djava.net.preferIPv4Stack=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
]


def find_install() -> tuple[str, Path]:
    """The newest complete ``neo4j-5.26.*`` cache folder made by scripts/install/neo4j.sh."""
    found = []
    for path in glob.glob(str(cache_dir() / "neo4j-5.26.*")):
        folder = Path(path)
        if (folder / ".complete").exists() and (folder / "classes" / "Launcher.class").exists():
            version = (folder / "VERSION").read_text().strip()
            found.append((tuple(int(x) for x in version.split(".")), version, folder))
    if not found:
        raise Unavailable(
            "Neo4j jars not installed in ~/.cache/chatmem: run scripts/install/neo4j.sh"
        )
    _, version, folder = max(found)
    return version, folder


def find_java(folder: Path) -> str:
    """The Java 17 the install script recorded (Neo4j 5.26 runs on 17; 2025.x needs 21)."""
    override = os.environ.get("CHATMEM_NEO4J_JAVA")
    candidates = [override] if override else []
    recorded = folder / "java"
    if recorded.exists():
        candidates.append(recorded.read_text().strip())
    candidates += sorted(glob.glob("/usr/lib/jvm/java-17*/bin/java"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise Unavailable("no Java 17 found: run scripts/install/neo4j.sh")


def connect(url: str) -> Any:
    """A driver for ``url``; credentials in the URL become basic auth."""
    import neo4j
    from chatmem.neo4j import parse_url

    target = parse_url(url)
    auth = None if target.user is None else (target.user, target.password or "")
    return neo4j.GraphDatabase.driver(target.uri, auth=auth)


def ask_version(driver: Any) -> tuple[str, str]:
    """(version, edition) as the server reports them in ``dbms.components()``."""
    records, _, _ = driver.execute_query(
        "CALL dbms.components() YIELD name, versions, edition "
        "WHERE name = 'Neo4j Kernel' RETURN versions[0] AS version, edition"
    )
    return str(records[0]["version"]), str(records[0]["edition"])


class Neo4jHarness(Harness):
    name = "neo4j"
    env_var = "CHATMEM_TEST_NEO4J_URL"
    testcontainers_image = "neo4j:5.26"

    # -- provisioning -----------------------------------------------------------------------
    def from_env(self, url: str) -> ServerInfo:
        driver = connect(url)
        return self._info(driver, url, "env", driver.close)

    def start_local(self, workdir: Path) -> ServerInfo:
        try:
            import neo4j  # noqa: F401
        except ImportError as exc:
            raise Unavailable('neo4j driver missing: pip install "chatmem[neo4j]"') from exc
        version, folder = find_install()
        java = find_java(folder)
        root = Path(tempfile.mkdtemp(prefix="neo4j-", dir=workdir))
        out, err = root / "stdout.log", root / "stderr.log"
        heap = os.environ.get("CHATMEM_NEO4J_HEAP", "512m")
        cmd = [
            java,
            "-Xms128m",
            f"-Xmx{heap}",
            *JVM_OPTIONS,
            "-cp",
            f"{folder / 'classes'}{os.pathsep}{folder / 'lib'}/*",
            "Launcher",
            str(root / "data"),
        ]
        with out.open("wb") as sink_out, err.open("wb") as sink_err:
            # stdout to a file, not a pipe: a full pipe would block the JVM later on.
            proc = subprocess.Popen(
                cmd,
                stdout=sink_out,
                stderr=sink_err,
                stdin=subprocess.DEVNULL,
                cwd=root,
                start_new_session=True,
            )

        def stop_server() -> None:
            stop_process(proc, grace=30.0)
            shutil.rmtree(root, ignore_errors=True)

        try:
            url = self._wait_for_uri(proc, out, err)
        except BaseException:
            logs = f"{tail(err)}\n--- stdout ---\n{tail(out)}"
            stop_server()
            raise Unavailable(f"Neo4j {version} did not start:\n{logs}") from None
        driver = connect(url)

        def stop() -> None:
            driver.close()
            stop_server()

        try:
            info = self._info(driver, url, "local", stop, pid=proc.pid, root=str(root))
        except BaseException:
            stop()
            raise
        if not info.version.startswith(version):
            stop()
            raise Unavailable(f"expected Neo4j {version}, the server says {info.version}")
        return info

    @staticmethod
    def _wait_for_uri(proc: subprocess.Popen[bytes], out: Path, err: Path) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            match = re.search(r"^(bolt://127\.0\.0\.1:\d+)$", out.read_text(), re.MULTILINE)
            if match:
                return match.group(1)
            if proc.poll() is not None:
                raise Unavailable(f"Neo4j exited with {proc.returncode}: {tail(err)}")
            time.sleep(0.2)
        raise Unavailable(f"Neo4j printed no Bolt URI within {START_TIMEOUT:.0f}s")

    def start_testcontainers(self) -> ServerInfo:
        Neo4jContainer = testcontainers_class("neo4j", "Neo4jContainer")
        container = Neo4jContainer(testcontainers_image(self))
        labels = start_container(container)
        driver = None
        try:
            host = container.get_container_host_ip()
            port = int(container.get_exposed_port(7687))
            url = f"bolt://{container.username}:{container.password}@{host}:{port}"
            driver = connect(url)

            def stop() -> None:
                driver.close()
                container.stop()

            return self._info(
                driver, url, "testcontainers", stop, **container_extra(container, labels)
            )
        except BaseException:
            if driver is not None:
                driver.close()
            container.stop()
            raise

    def _info(self, driver: Any, url: str, route: str, stop: Any, **extra: Any) -> ServerInfo:
        deadline = time.monotonic() + 60
        while True:
            try:
                version, edition = ask_version(driver)
                break
            except Exception:  # a container may still be starting
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)
        return ServerInfo(
            product=PRODUCT,
            version=f"{version} ({edition})",
            url=url,
            route=route,
            stop=stop,
            extra={"driver": driver, "edition": edition, **extra},
        )

    # -- repositories ---------------------------------------------------------------------------
    def namespace_options(self) -> dict[str, Any]:
        suffix = unique_suffix()
        return {option: f"{base}_{suffix}" for option, base in LABEL_BASES.items()}

    def label_options(self, tag: str) -> dict[str, Any]:
        suffix = unique_suffix()
        return {option: f"{tag}{base}_{suffix}" for option, base in LABEL_BASES.items()}

    def make_repository(self, server: ServerInfo, **options: Any) -> BaseChatMemoryRepository:
        """A repository on labels of its own. Labels made with no options are emptied by
        ``cleanup`` and handed to the next such test with their constraints and indexes:
        creating and dropping those is a schema change per test."""
        from chatmem.neo4j import Neo4jChatMemoryRepository

        free: list[dict[str, Any]] = server.extra.setdefault("free_labels", [])
        reusable = not options
        labels = free.pop() if reusable and free else self.namespace_options()
        if reusable:
            server.extra.setdefault("reusable_labels", set()).add(labels["session_label"])
        options = {**labels, **options}  # the test's own labels win
        return Neo4jChatMemoryRepository(server.extra["driver"], **options)

    def connect_spec(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> tuple[str, dict[str, Any]] | None:
        config = repository.config  # type: ignore[attr-defined]
        options = {option: getattr(config, option) for option in LABEL_BASES}
        if config.database is not None:
            options["database"] = config.database
        if config.initialize_schema != "always":  # another process (or the twin) checks only
            options["initialize_schema"] = config.initialize_schema
        assert server.url is not None
        return server.url, options

    def cleanup(self, server: ServerInfo, repository: BaseChatMemoryRepository) -> None:
        config = repository.config  # type: ignore[attr-defined]
        driver = server.extra["driver"]
        for option in LABEL_BASES:
            label = getattr(config, option)
            if label == LABEL_BASES[option]:
                continue  # never wipe the default labels of a shared server
            # in batches, each its own transaction (an auto-commit query, which CALL ... IN
            # TRANSACTIONS needs): the bench's conversations of 10,000 messages went past the
            # server's transaction memory limit in one DETACH DELETE
            with driver.session(database=config.database) as session:
                session.run(
                    f"MATCH (n:`{label}`) CALL (n) {{ DETACH DELETE n }}"
                    " IN TRANSACTIONS OF 5000 ROWS"
                ).consume()
        if config.session_label == "Session" or config.message_label == "Message":
            return  # schema of the default labels may belong to someone else
        reusable: set[str] = server.extra.setdefault("reusable_labels", set())
        if config.session_label in reusable:
            reusable.discard(config.session_label)  # handed out again from the free list
            labels = {option: getattr(config, option) for option in LABEL_BASES}
            server.extra.setdefault("free_labels", []).append(labels)
            return
        for statement in repository.schema.drop_ddl():  # type: ignore[attr-defined]
            driver.execute_query(statement, database_=config.database)

    def cold_default_url(self, server: ServerInfo) -> str:
        """The server's URL after removing the default namespace: every node with a default
        label, and the default constraint and index (Community has one database)."""
        from chatmem.neo4j import Neo4jConfig
        from chatmem.neo4j._schema import Schema

        assert server.url is not None
        if server.route == "env":
            raise Unavailable(
                "a server given by URL is not ours: the default labels and schema stay untouched"
            )
        driver = server.extra["driver"]
        for label in LABEL_BASES.values():
            driver.execute_query(f"MATCH (n:`{label}`) DETACH DELETE n")
        for statement in Schema.of(Neo4jConfig()).drop_ddl():
            driver.execute_query(statement)
        return server.url

    def cleanup_cold_default(self, server: ServerInfo, url: str) -> None:
        self.cold_default_url(server)


HARNESS = Neo4jHarness
