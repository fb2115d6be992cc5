"""Fixtures of the long-term memory suite: a settable clock and record stores per backend.

The suite runs in its own nox sessions (``longterm(backend)``, ``longterm_browser``), which
name this folder; a run of the chat conformance suite (``pytest conformance_tests``) leaves
it out, because it needs the ``api`` extra those sessions install.

The record contract (``RECORD_SUITE``) runs on both twins of a store with ``--twin both``
(the ``longterm`` sessions do): the async store is seen through a blocking view whose calls
run on one background loop, so the suite is written once.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from chatmem.core.longterm import (
    AsyncBaseMemoryRecordRepository,
    AsyncInMemoryMemoryRecordRepository,
    BaseMemoryRecordRepository,
    InMemoryMemoryRecordRepository,
)
from chatmem.testing.harness import Harness, ServerInfo, unique_suffix
from chatmem.testing.plugin import twin_of
from chatmem.testing.twins import BOTH, TWINS, Blocking, LoopThread

from . import _pool

HERE = Path(__file__).parent
SQL_BACKENDS = ("sqlite", "postgres", "mariadb", "mssql", "oracle")
RECORD_SUITE = (
    "test_records",
    "test_record_races",
    "test_record_state",
    "test_record_stores",
    "test_api",
    "test_api_review",
)
"""The modules whose record stores are each twin in turn in a ``--twin both`` run."""


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Collect this folder only when the command line names it (or a file in it)."""
    named = any(Path(str(arg).split("::")[0]).resolve().is_relative_to(HERE) for arg in config.args)
    return None if named else True


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``--twin both``: each record-suite test runs once per twin, on one server start."""
    module = metafunc.function.__module__.rsplit(".", 1)[-1]
    if (
        module in RECORD_SUITE
        # a multiprocess test's stores are in its worker processes, on the sync twin
        and metafunc.definition.get_closest_marker("multiprocess") is None
        and "twin" in metafunc.fixturenames
        and twin_of(metafunc.config) == BOTH
    ):
        metafunc.parametrize("twin", TWINS, indirect=True, scope="session")


class RecordsView(Blocking):
    """An async record store seen through the sync API: each call runs on the test loop."""


BaseMemoryRecordRepository.register(RecordsView)


class LoopClient:
    """A client for an ASGI app whose async store lives on ``loop``: each request runs the
    app there (through httpx's ASGI transport), as a server would on its event loop."""

    def __init__(self, app: Any, loop: LoopThread) -> None:
        import httpx

        self._loop = loop
        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        )

    def request(self, method: str, url: str, **options: Any) -> Any:
        return self._loop.run(self._client.request(method, url, **options))

    def get(self, url: str, **options: Any) -> Any:
        return self.request("GET", url, **options)

    def post(self, url: str, **options: Any) -> Any:
        return self.request("POST", url, **options)

    def put(self, url: str, **options: Any) -> Any:
        return self.request("PUT", url, **options)

    def delete(self, url: str, **options: Any) -> Any:
        return self.request("DELETE", url, **options)


def api_client(records: BaseMemoryRecordRepository, build: Callable[[Any], Any]) -> Any:
    """A test client for the app ``build(store)``: FastAPI's TestClient on a sync store; for
    the async twin's view, the app is built on the async store itself and run on its loop,
    so every route awaits the store on the event loop."""
    if isinstance(records, RecordsView):
        assert inspect.iscoroutinefunction(records.twin.find)
        return LoopClient(build(records.twin), records._loop)
    from fastapi.testclient import TestClient

    return TestClient(build(records))


class TestClock:
    """A clock the test sets: ``clock()`` is the current time, ``advance`` moves it."""

    __test__ = False

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 30, 15, 123456, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta

    def set(self, when: datetime) -> None:
        self.now = when


@pytest.fixture
def clock() -> TestClock:
    return TestClock()


def sql_engine(server: ServerInfo) -> Any:
    """The server's shared engine (the SQLite harness makes it lazily)."""
    from chatmem.jdbc import make_engine

    engine = server.extra.get("engine")
    if engine is None:
        assert server.url is not None
        engine = server.extra["engine"] = make_engine(server.url)
    return engine


def store_options(harness: str, shared_with: BaseMemoryRecordRepository | None) -> dict[str, Any]:
    """Names for a fresh store (unique per test) or those of ``shared_with``."""
    suffix = unique_suffix()
    if harness in SQL_BACKENDS:
        name = getattr(shared_with, "config", None)
        return {"table_name": name.table_name if name else f"mr_{suffix}"}  # type: ignore[attr-defined]
    if harness == "redis":
        if shared_with is not None:
            return {
                "key_prefix": shared_with.key_prefix,  # type: ignore[attr-defined]
                "index_name": shared_with.index_name,  # type: ignore[attr-defined]
            }
        return {"key_prefix": f"mr-{suffix}:", "index_name": f"mr-{suffix}-idx"}
    if harness == "mongo":
        if shared_with is not None:
            return {"collection_name": shared_with.collection.name}  # type: ignore[attr-defined]
        return {"collection_name": f"mr_{suffix}"}
    if harness == "cassandra":
        if shared_with is not None:
            return {"table_name": shared_with.table_name}  # type: ignore[attr-defined]
        return {"table_name": f"mr_{suffix}"}  # the keyspace: the harness's (open_store)
    if harness == "neo4j":
        if shared_with is not None:
            return {
                "user_label": shared_with.user_label,  # type: ignore[attr-defined]
                "memory_label": shared_with.memory_label,  # type: ignore[attr-defined]
            }
        return {"user_label": f"U_{suffix}", "memory_label": f"M_{suffix}"}
    return {}


def store_url(server: ServerInfo) -> str:
    """The URL another process opens the server's store with."""
    url = server.extra.get("memory_url", server.url)
    assert url is not None
    return str(url)


def open_store(server: ServerInfo, harness: str, **options: Any) -> BaseMemoryRecordRepository:
    """A record store of the backend under test on the harness's server."""
    if harness in SQL_BACKENDS:
        from chatmem.jdbc import JdbcMemoryRecordRepository

        return JdbcMemoryRecordRepository(sql_engine(server), **options)
    if harness == "redis":
        import redis

        from chatmem.redis import RedisMemoryRecordRepository

        client = server.extra.get("memory_client")
        if client is None:
            assert server.url is not None
            client = server.extra["memory_client"] = redis.Redis.from_url(server.url)
        return RedisMemoryRecordRepository(client, **options)
    if harness == "mongo":
        from chatmem.mongo import MongoMemoryRecordRepository

        database = server.extra["client"][server.extra["database"]]
        return MongoMemoryRecordRepository(database, **options)
    if harness == "cassandra":
        from chatmem.cassandra import CassandraMemoryRecordRepository

        options.setdefault("keyspace", server.extra["keyspace"])
        return CassandraMemoryRecordRepository(server.extra["session"], **options)
    if harness == "neo4j":
        from chatmem.neo4j import Neo4jMemoryRecordRepository

        return Neo4jMemoryRecordRepository(server.extra["driver"], **options)
    pytest.skip(f"no long-term memory record store for {harness} yet")


async def open_async_store(
    server: ServerInfo, harness: str, clients: dict[str, Any], **options: Any
) -> AsyncBaseMemoryRecordRepository:
    """The async twin of ``open_store``, built on the running loop (the test loop); its
    driver clients are made once, kept in ``clients`` (``async_clients``) and shared."""

    def client(make: Callable[[], Any]) -> Any:
        if harness not in clients:
            clients[harness] = make()
        return clients[harness]

    store: AsyncBaseMemoryRecordRepository
    if harness in SQL_BACKENDS:
        from chatmem.jdbc import AsyncJdbcMemoryRecordRepository, make_async_engine

        assert server.url is not None
        engine = client(lambda: make_async_engine(str(server.url)))
        store = AsyncJdbcMemoryRecordRepository(engine, **options)
    elif harness == "redis":
        import redis.asyncio

        from chatmem.redis import AsyncRedisMemoryRecordRepository

        assert server.url is not None
        redis_client = client(lambda: redis.asyncio.Redis.from_url(str(server.url)))
        store = AsyncRedisMemoryRecordRepository(redis_client, **options)
    elif harness == "mongo":
        from pymongo import AsyncMongoClient

        from chatmem.mongo import AsyncMongoMemoryRecordRepository

        database = client(lambda: AsyncMongoClient(store_url(server)))[server.extra["database"]]
        store = AsyncMongoMemoryRecordRepository(database, **options)
    elif harness == "neo4j":
        import neo4j

        from chatmem.neo4j import AsyncNeo4jMemoryRecordRepository, parse_url

        target = parse_url(store_url(server))
        auth = None if target.user is None else (target.user, target.password or "")
        driver = client(lambda: neo4j.AsyncGraphDatabase.driver(target.uri, auth=auth))
        store = AsyncNeo4jMemoryRecordRepository(driver, **options)
    elif harness == "cassandra":
        from chatmem.cassandra import AsyncCassandraMemoryRecordRepository

        options.setdefault("keyspace", server.extra["keyspace"])  # the driver's session serves
        store = AsyncCassandraMemoryRecordRepository(server.extra["session"], **options)  # both
    else:
        pytest.skip(f"no async long-term memory record store for {harness}")
    await store._ready()  # type: ignore[attr-defined]  # what from_url does before it returns
    return store


async def close_client(client: Any) -> None:
    """Close an async driver client (an engine is disposed)."""
    for name in ("dispose", "aclose", "close"):  # looked up on the class: a Mongo client's
        method = getattr(type(client), name, None)  # attributes are its databases
        if method is not None:
            result = method(client)
            if inspect.isawaitable(result):
                await result
            return


@pytest.fixture(scope="session")
def async_clients(twin_loop: LoopThread) -> Iterator[dict[str, Any]]:
    """The async twins' driver clients, made on the test loop and closed there at the end."""
    clients: dict[str, Any] = {}
    yield clients
    for made in clients.values():
        twin_loop.run(close_client(made))


def drop_store(repo: BaseMemoryRecordRepository) -> None:
    """Remove what a test's store created (tables, index, documents, nodes)."""
    tables = getattr(repo, "tables", None)
    if tables is not None:
        tables.metadata.drop_all(repo.engine)  # type: ignore[attr-defined]
    drop = getattr(repo, "drop_schema", None)
    if drop is not None:
        drop()


@pytest.fixture
def make_records(
    harness: Harness,
    server: ServerInfo,
    clock: TestClock,
    twin: str,
    request: pytest.FixtureRequest,
) -> Iterator[Callable[..., BaseMemoryRecordRepository]]:
    """``make_records(shared_with=None, **options)``: a fresh record store on the backend
    under test, or another handle on the same data as ``shared_with``; in the async twin's
    run a blocking view of the async store."""
    made: list[BaseMemoryRecordRepository] = []
    pooled: list[dict[str, Any]] = []  # the names of made[0], when it may be handed on
    memory_stores: dict[int, BaseMemoryRecordRepository] = {}
    loop: LoopThread | None = request.getfixturevalue("twin_loop") if twin == "async" else None
    clients = request.getfixturevalue("async_clients") if twin == "async" else {}

    def make(
        shared_with: BaseMemoryRecordRepository | None = None, **options: Any
    ) -> BaseMemoryRecordRepository:
        options.setdefault("clock", clock)
        if harness.name == "memory":
            if shared_with is not None:
                return memory_stores[id(shared_with)]
            if loop is None:
                repo: BaseMemoryRecordRepository = InMemoryMemoryRecordRepository(**options)
            else:
                twin_store = AsyncInMemoryMemoryRecordRepository(**options)
                repo = RecordsView(twin_store, loop)  # type: ignore[assignment]
            memory_stores[id(repo)] = repo
        else:
            default = not made and shared_with is None and not set(options) - {"clock"}
            reused = _pool.take(server, harness.name) if default else None
            options.setdefault("initialize_schema", "always")
            for name, value in (reused or store_options(harness.name, shared_with)).items():
                options.setdefault(name, value)
            if default:
                pooled.append({k: options[k] for k in store_options(harness.name, None)})
            if loop is None:
                repo = open_store(server, harness.name, **options)
            else:
                built = loop.run(open_async_store(server, harness.name, clients, **options))
                repo = RecordsView(built, loop)  # type: ignore[assignment]
        made.append(repo)
        return repo

    yield make
    if pooled and _pool.give_back(server, harness.name, pooled[0]):
        return
    if made and harness.name != "memory":
        first = made[0]
        if isinstance(first, RecordsView):  # drop what it made through a sync handle
            first = open_store(server, harness.name, **store_options(harness.name, first))
        drop_store(first)


@pytest.fixture
def records(make_records: Callable[..., BaseMemoryRecordRepository]) -> BaseMemoryRecordRepository:
    return make_records()
