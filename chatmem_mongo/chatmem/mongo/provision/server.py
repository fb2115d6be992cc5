"""MongoDB harness.

Routes (see ``chatmem_testing/chatmem/testing/harness.py``):

- ``CHATMEM_TEST_MONGO_URL`` (``mongodb://host:port/dbname``): any server; a real MongoDB is
  reported as "MongoDB <version>", a wire-protocol stand-in by name;
- local: no real ``mongod`` can be installed on these machines, so we start PyPI's
  ``nx-27017`` (a MongoDB wire-protocol server over SQLite, installed by
  ``scripts/install/mongo.sh`` into ``~/.cache/chatmem/mongo-venv``) as
  ``nx-27017 --db memory -p PORT --log-file F --pid-file F`` and report it as a stand-in;
- testcontainers: ``MongoDbContainer`` on the pinned ``mongo:7.0`` image (or
  ``CHATMEM_TC_IMAGE_MONGO``), on machines with Docker. An image labelled
  ``chatmem.auth=none`` (the local nx-27017 stand-in image) is reached without credentials.

Every test gets its own collection in one database; ``cleanup`` drops it.
"""

from __future__ import annotations

import glob
import subprocess
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

TEST_DATABASE = "chatmem_test"
IMAGE = "mongo:7.0"
STAND_IN_PRODUCT = "MongoDB wire protocol"


def _venv() -> Path:
    return cache_dir().joinpath("mongo-venv")


def _stand_in_version(venv: Path) -> str:
    found = glob.glob(str(venv / "lib" / "python*" / "site-packages" / "nx_27017-*.dist-info"))
    return Path(found[0]).name.removesuffix(".dist-info").split("-")[1] if found else "?"


def _probe(url: str, route: str, stop: Any, stand_in_version: str | None = None) -> ServerInfo:
    """Connect, ask the server what it is, and describe it."""
    from pymongo import MongoClient

    client: MongoClient[Any] = MongoClient(url, serverSelectionTimeoutMS=15_000)
    try:
        build = client.admin.command("buildInfo")
        hello = client.admin.command("hello")
    except Exception as exc:
        client.close()
        raise Unavailable(f"{url}: {exc}") from exc
    database = client.get_default_database(TEST_DATABASE).name
    claimed = str(build.get("version", "?"))
    if "nx_27017" in str(build.get("process", "")) or stand_in_version is not None:
        product = STAND_IN_PRODUCT
        version = f"claims {claimed}, wire version {hello.get('maxWireVersion', '?')}"
        stand_in: str | None = f"nx-27017 {stand_in_version or '?'}"
    else:
        product, version, stand_in = "MongoDB", claimed, None

    def stop_all() -> None:
        client.close()
        stop()

    return ServerInfo(
        product,
        version,
        url,
        route=route,
        stand_in=stand_in,
        stop=stop_all,
        extra={"client": client, "database": database},
    )


class MongoHarness(Harness):
    name = "mongo"
    env_var: ClassVar[str | None] = "CHATMEM_TEST_MONGO_URL"
    testcontainers_image: ClassVar[str | None] = IMAGE

    def from_env(self, url: str) -> ServerInfo:
        return _probe(url, "env", lambda: None)

    def start_local(self, workdir: Path) -> ServerInfo:
        venv = _venv()
        binary = venv / "bin" / "nx-27017"
        if not binary.exists():
            raise Unavailable(f"{binary} missing: run scripts/install/mongo.sh")
        port = free_port()
        log = workdir / "nx-27017.log"
        out = open(workdir / "nx-27017.out", "wb")  # noqa: SIM115 (lives as long as the server)
        proc = subprocess.Popen(
            [
                str(binary),
                "--db",
                "memory",
                "-p",
                str(port),
                "--log-file",
                str(log),
                "--pid-file",
                str(workdir / "nx-27017.pid"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )

        def stop() -> None:
            stop_process(proc, grace=10)
            out.close()

        try:
            wait_for_port(port, 60, proc, log)
            return _probe(
                f"mongodb://127.0.0.1:{port}/{TEST_DATABASE}",
                "local",
                stop,
                _stand_in_version(venv),
            )
        except BaseException as exc:
            stop()
            if isinstance(exc, Unavailable):
                raise Unavailable(f"{exc}\n{tail(log)}") from exc
            raise

    def start_testcontainers(self) -> ServerInfo:
        MongoDbContainer = testcontainers_class("mongodb", "MongoDbContainer")
        container = MongoDbContainer(testcontainers_image(self))
        labels = start_container(container)
        extra = container_extra(container, labels)
        try:
            if labels.get("chatmem.auth") == "none":
                # a local stand-in image without authentication (its labels say so)
                host, port = container.get_container_host_ip(), container.get_exposed_port(27017)
                url = f"mongodb://{host}:{port}/{TEST_DATABASE}"
            else:
                base = container.get_connection_url().rstrip("/")
                url = f"{base}/{TEST_DATABASE}?authSource=admin"
            stand_in = extra["stand_in"]
            version = stand_in.split()[-1] if stand_in else None
            info = _probe(url, "testcontainers", container.stop, version)
        except BaseException:
            container.stop()
            raise
        info.extra["image"] = extra["image"]
        return info

    def namespace_options(self) -> dict[str, Any]:
        return {"collection_name": f"cm_{unique_suffix()}"}

    def expiry_grace(self, server: ServerInfo) -> float:
        # nx-27017 purges every few seconds; MongoDB's TTL monitor runs every 60 s.
        return 30.0 if server.stand_in else 150.0

    def make_repository(self, server: ServerInfo, **options: Any) -> BaseChatMemoryRepository:
        from chatmem.mongo import MongoChatMemoryRepository

        database = server.extra["client"][server.extra["database"]]
        options = {**self.namespace_options(), **options}
        return MongoChatMemoryRepository(database, **options)

    def connect_spec(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> tuple[str, dict[str, Any]] | None:
        """The URL plus every option the repository was built with (the async twin and the
        process tests rebuild it from this)."""
        assert server.url is not None
        config = repository.config  # type: ignore[attr-defined]
        options: dict[str, Any] = {
            "collection_name": config.collection_name,
            "initialize_schema": config.initialize_schema,
        }
        if config.ttl is not None:
            options["ttl"] = config.ttl
        return server.url, options

    def cleanup(self, server: ServerInfo, repository: BaseChatMemoryRepository) -> None:
        repository.collection.drop()  # type: ignore[attr-defined]
        repository.close()  # type: ignore[attr-defined]

    def cold_default_url(self, server: ServerInfo) -> str:
        """The server's URL naming a database that does not exist yet."""
        from urllib.parse import urlsplit, urlunsplit

        assert server.url is not None
        parts = urlsplit(server.url)
        return urlunsplit(parts._replace(path=f"/cold_{unique_suffix()}"))

    def cleanup_cold_default(self, server: ServerInfo, url: str) -> None:
        from urllib.parse import urlsplit

        name = urlsplit(url).path.strip("/")
        assert name.startswith("cold_")
        server.extra["client"].drop_database(name)


HARNESS = MongoHarness
