"""A coordinator that has not applied a keyspace or table just created (issue 29: on a cold
3-node cluster a writer's CREATE TABLE met "Keyspace 'cold_...' doesn't exist").

One node cannot lag, so the lag is injected at the driver's request boundary: for a chosen
time after our CREATE KEYSPACE (or CREATE TABLE), every request naming that keyspace (or
table) is sent naming one that does not exist, so the real server answers the real
``InvalidRequest`` through the driver's real error path. Both twins, from a URL with default
options on a cold keyspace: a lag shorter than ``SCHEMA_LAG_WAIT`` loses nothing; a longer one
is a ``SchemaError`` naming the element and the wait, within the bound, with nothing written.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from cassandra.cluster import ResponseFuture
from cassandra.protocol import PrepareMessage, QueryMessage

from chatmem.cassandra import (
    DEFAULT_TABLE_NAME,
    AsyncCassandraChatMemoryRepository,
    CassandraChatMemoryRepository,
    CassandraMemoryRecordRepository,
    _schema,
)
from chatmem.core import (
    AsyncMessageWindowChatMemory,
    MessageWindowChatMemory,
    SchemaError,
    UserMessage,
)
from chatmem.testing.harness import ServerInfo, unique_suffix
from chatmem_cassandra.tests.test_cassandra import session_of

pytestmark = pytest.mark.backend("cassandra", "cassandra_cluster")

SLACK = 8.0
"""Seconds past the bound a failing call may take: the last refused try, then the schema
agreement wait and the driver's metadata refresh around it."""


@dataclass
class Lag:
    """Once the DDL that creates ``element`` (``trigger``) was sent, makes the requests that
    name it name a missing one for ``seconds`` from the first of them (not from the DDL: the
    schema agreement wait between them can take longer than the lag on a loaded cluster);
    counts the requests it redirected."""

    element: str  # the quoted CQL text to redirect, '"ks"' or '"ks"."table"'
    trigger: str  # the DDL that starts the lag: "CREATE KEYSPACE" or "CREATE TABLE"
    seconds: float
    armed: bool = False
    started: float | None = None
    redirected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def rewrite(self, query: str) -> str:
        with self.lock:
            if not self.armed:
                self.armed = query.startswith(self.trigger) and self.element in query
                return query
            if self.element not in query:
                return query
            if self.started is None:
                self.started = time.monotonic()
            if time.monotonic() - self.started > self.seconds:
                return query
            self.redirected.append(query)
        missing = self.element[:-1] + '_not_applied_here"'
        return query.replace(self.element, missing)


@pytest.fixture
def lag(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Lag]]:
    """Installs the ``Lag`` a test appends on every ``ResponseFuture`` (the one object every
    query, batch and prepare of the driver goes through, sync or async)."""
    lags: list[Lag] = []
    real_init = ResponseFuture.__init__

    def init(self: Any, session: Any, message: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(message, (QueryMessage, PrepareMessage)):
            for one in lags:
                message.query = one.rewrite(message.query)
        real_init(self, session, message, *args, **kwargs)

    monkeypatch.setattr(ResponseFuture, "__init__", init)
    yield lags
    lags.clear()


@pytest.fixture
def cold(server: ServerInfo) -> Iterator[tuple[str, str]]:
    """A URL whose keyspace does not exist yet, and that keyspace (dropped afterwards)."""
    keyspace = f"lag_{unique_suffix()}"
    url = urlunsplit(urlsplit(str(server.url))._replace(path=f"/{keyspace}"))
    yield url, keyspace
    session_of(server).execute(f'DROP KEYSPACE IF EXISTS "{keyspace}"', timeout=120)


def element_of(keyspace: str, which: str) -> tuple[str, str]:
    """The quoted text a lag redirects and the DDL that starts it."""
    if which == "keyspace":
        return f'"{keyspace}"', "CREATE KEYSPACE"
    return f'"{keyspace}"."{DEFAULT_TABLE_NAME}"', "CREATE TABLE"


def use(url: str, twin: str, cid: str) -> list[Any]:
    """What a README user does: from_url with default options, add twice, get; closed."""
    if twin == "async":

        async def main() -> list[Any]:
            repo = await AsyncCassandraChatMemoryRepository.from_url(url)
            try:
                memory = AsyncMessageWindowChatMemory(repo)
                await memory.add(cid, UserMessage("first"))
                await memory.add(cid, UserMessage("second"))
                return await memory.get(cid)
            finally:
                await repo.close()

        return asyncio.run(main())
    repo = CassandraChatMemoryRepository.from_url(url)
    try:
        memory = MessageWindowChatMemory(repo)
        memory.add(cid, UserMessage("first"))
        memory.add(cid, UserMessage("second"))
        return memory.get(cid)
    finally:
        repo.close()


def stored(server: ServerInfo, keyspace: str) -> tuple[set[str], int]:
    """The tables of ``keyspace`` and the rows of the default one, asked of the server."""
    session = session_of(server)
    tables = {
        r.table_name
        for r in session.execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,)
        )
    }
    if DEFAULT_TABLE_NAME not in tables:
        return tables, 0
    rows = session.execute(f'SELECT * FROM "{keyspace}"."{DEFAULT_TABLE_NAME}"')
    return tables, len(list(rows))


@pytest.mark.parametrize("twin", ["sync", "async"])
@pytest.mark.parametrize("which", ["keyspace", "table"])
def test_a_coordinator_lagging_less_than_the_bound_loses_nothing(
    server: ServerInfo, cold: tuple[str, str], lag: list[Lag], twin: str, which: str
) -> None:
    url, keyspace = cold
    one = Lag(*element_of(keyspace, which), seconds=2.0)
    lag.append(one)
    started = time.monotonic()
    got = use(url, twin, "c1")
    lag.clear()
    assert [m.text for m in got] == ["first", "second"]
    assert one.redirected, "the lag never refused a request: the test tested nothing"
    assert time.monotonic() - started < _schema.SCHEMA_LAG_WAIT
    assert stored(server, keyspace) == ({DEFAULT_TABLE_NAME}, 2)


@pytest.mark.parametrize("twin", ["sync", "async"])
@pytest.mark.parametrize("which", ["keyspace", "table"])
def test_a_coordinator_lagging_past_the_bound_is_a_schema_error_naming_it(
    server: ServerInfo,
    cold: tuple[str, str],
    lag: list[Lag],
    twin: str,
    which: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, keyspace = cold
    bound = 2.0
    monkeypatch.setattr(_schema, "SCHEMA_LAG_WAIT", bound)
    one = Lag(*element_of(keyspace, which), seconds=3600.0)
    lag.append(one)
    started = time.monotonic()
    with pytest.raises(SchemaError) as raised:
        use(url, twin, "c1")
    took = time.monotonic() - started
    lag.clear()
    assert one.redirected
    message = str(raised.value)
    named = keyspace if which == "keyspace" else f"{keyspace}.{DEFAULT_TABLE_NAME}"
    assert named in message and f"{bound:.0f}s" in message, message
    assert bound <= took < bound + SLACK
    # the keyspace lag stops the table's creation; the table lag stops the first write
    tables = {DEFAULT_TABLE_NAME} if which == "table" else set()
    assert stored(server, keyspace) == (tables, 0)


@pytest.mark.parametrize("twin", ["sync", "async"])
def test_a_dropped_keyspace_still_fails_typed_and_bounded(
    server: ServerInfo, cold: tuple[str, str], twin: str
) -> None:
    url, keyspace = cold
    if twin == "sync":
        repo = CassandraChatMemoryRepository.from_url(url)
        try:
            repo.append("c", UserMessage("before"))
            session_of(server).execute(f'DROP KEYSPACE "{keyspace}"', timeout=120)
            started = time.monotonic()
            with pytest.raises(SchemaError):
                repo.append("c", UserMessage("after"))
        finally:
            repo.close()
    else:

        async def main() -> float:
            repo = await AsyncCassandraChatMemoryRepository.from_url(url)
            try:
                await repo.append("c", UserMessage("before"))
                session_of(server).execute(f'DROP KEYSPACE "{keyspace}"', timeout=120)
                started = time.monotonic()
                with pytest.raises(SchemaError):
                    await repo.append("c", UserMessage("after"))
                return started
            finally:
                await repo.close()

        started = asyncio.run(main())
    assert time.monotonic() - started < _schema.SCHEMA_LAG_WAIT + SLACK


@pytest.mark.parametrize("past_the_bound", [False, True])
def test_the_memory_record_store_creates_its_tables_through_a_lagging_coordinator(
    server: ServerInfo,
    cold: tuple[str, str],
    lag: list[Lag],
    past_the_bound: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, keyspace = cold
    if past_the_bound:
        monkeypatch.setattr(_schema, "SCHEMA_LAG_WAIT", 2.0)
    one = Lag(f'"{keyspace}"', "CREATE KEYSPACE", seconds=3600.0 if past_the_bound else 2.0)
    lag.append(one)
    started = time.monotonic()
    if past_the_bound:
        with pytest.raises(SchemaError, match=rf"keyspace {keyspace} does not exist after 2s"):
            CassandraMemoryRecordRepository.from_url(url)
        assert time.monotonic() - started < 2.0 + SLACK
    else:
        CassandraMemoryRecordRepository.from_url(url).close()
    lag.clear()
    assert one.redirected
    tables, _ = stored(server, keyspace)
    assert len(tables) == (0 if past_the_bound else 5), tables  # records, 3 lookups, state


def test_a_lag_answer_is_told_from_a_request_that_may_have_run() -> None:
    from cassandra import InvalidRequest, ReadFailure, WriteFailure
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionException

    from chatmem.cassandra._errors import schema_lagging

    assert schema_lagging(InvalidRequest("message=\"Keyspace 'k' doesn't exist\""))
    assert schema_lagging(NoHostAvailable("no host", {"h1": "Unknown CF 1", "h2": "Unknown CF 1"}))
    lost = NoHostAvailable("no host", {"h1": "Unknown CF 12", "h2": ConnectionException("lost")})
    assert not schema_lagging(lost)  # h2 may have applied a write: never resent as a lag
    assert not schema_lagging(InvalidRequest("Undefined column name x"))
    # CI, 3 nodes, cold keyspace: a read met a replica that had not applied the table yet
    incompatible = ReadFailure("Replica(s) failed to execute read", error_code_map={"h": 3})
    assert schema_lagging(incompatible)
    assert schema_lagging(ReadFailure("unknown", error_code_map={"h": 0}))  # CI, 3 nodes, too
    assert not schema_lagging(ReadFailure("tombstones", error_code_map={"h": 3, "h2": 1}))
    assert not schema_lagging(WriteFailure("write", error_code_map={"h": 3}))
