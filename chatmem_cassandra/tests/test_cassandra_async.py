"""The async twin on Cassandra: what the shared suite does not reach through its blocking
view: deferred and eager schema creation, TTL on every row, paging awaited page by page, one
read and one write per window add, preparation shared by concurrent first callers, cancelled
requests, ownership of the cluster ``from_url`` made, and the errors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from cassandra.query import BatchStatement, BoundStatement

from chatmem.cassandra import AsyncCassandraChatMemoryRepository
from chatmem.cassandra._async.transactions import GONE_AFTER
from chatmem.cassandra._native import _aio
from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    BackendUnavailableError,
    InvalidArgumentError,
    SchemaError,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    async_repository_from_url,
)
from chatmem.testing.harness import ServerInfo, free_port, unique_suffix
from chatmem_cassandra.tests.test_cassandra import EVERY_KIND, requests, session_of, ttls

pytestmark = pytest.mark.backend("cassandra")

Repo = AsyncCassandraChatMemoryRepository


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(main())  # type: ignore[arg-type]


def on_session(server: ServerInfo, **options: Any) -> Repo:
    options.setdefault("keyspace", server.extra["keyspace"])
    options.setdefault("table_name", f"t_{unique_suffix()}")
    return Repo(session_of(server), **options)


@pytest.fixture
def made(server: ServerInfo) -> Any:
    """Async repositories a test builds on the harness's session; their tables are dropped."""
    repos: list[Repo] = []
    yield repos
    for repo in repos:
        c = repo.config
        session_of(server).execute(f'DROP TABLE IF EXISTS "{c.keyspace}"."{c.table_name}"')


def tables(server: ServerInfo) -> set[str]:
    rows = session_of(server).execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s",
        (server.extra["keyspace"],),
    )
    return {r.table_name for r in rows}


# -- schema: deferred on a session, eager from a URL ------------------------------------------
def test_on_a_session_the_constructor_does_no_io_and_the_first_call_creates_the_schema(
    server: ServerInfo, made: list[Repo]
) -> None:
    with requests(server) as seen:
        repo = on_session(server)
    made.append(repo)
    assert seen == [] and repo.config.table_name not in tables(server)

    async def main() -> None:
        assert await repo.find_by_conversation_id("x") == []
        await repo.save_all("x", EVERY_KIND)
        assert await repo.find_by_conversation_id("x") == EVERY_KIND

    run(main)
    assert repo.config.table_name in tables(server)


def test_never_mode_creates_nothing_and_fails_clearly_at_first_use(server: ServerInfo) -> None:
    repo = on_session(server, initialize_schema="never")

    async def main() -> None:
        with pytest.raises(SchemaError, match="initialize_schema"):
            await repo.find_by_conversation_id("x")

    run(main)
    assert repo.config.table_name not in tables(server)


def test_a_table_of_another_shape_is_a_schema_error_at_first_use(server: ServerInfo) -> None:
    session, ks, table = session_of(server), server.extra["keyspace"], f"t_{unique_suffix()}"
    session.execute(f'CREATE TABLE "{ks}"."{table}" (conversation_id text PRIMARY KEY, x int)')
    repo = Repo(session, keyspace=ks, table_name=table)

    async def main() -> None:
        with pytest.raises(SchemaError, match="position"):
            await repo.append("x", UserMessage("m"))

    try:
        run(main)
    finally:
        session.execute(f'DROP TABLE "{ks}"."{table}"')


def test_a_table_loaded_without_its_columns_is_reloaded_at_first_use(
    repository: Any, server: ServerInfo
) -> None:
    c = repository.config
    metadata = session_of(server).cluster.metadata
    metadata.keyspaces[c.keyspace].tables[c.table_name].columns.clear()
    repo = Repo(session_of(server), keyspace=c.keyspace, table_name=c.table_name)

    async def main() -> None:
        await repo.append("x", UserMessage("m"))
        assert await repo.find_by_conversation_id("x") == [UserMessage("m")]

    run(main)
    assert c.conversation_id_column in metadata.keyspaces[c.keyspace].tables[c.table_name].columns


def test_an_append_retries_a_coordinator_that_has_not_opened_the_table_yet(
    repository: Any, server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the async twin of test_cassandra.py's test of the same name (the lagging answer is
    # injected before the real server runs the batch)
    from cassandra import InvalidRequest

    from chatmem.cassandra._async import transactions as _async_transactions

    c = repository.config
    repo = Repo(session_of(server), keyspace=c.keyspace, table_name=c.table_name)
    real, refused = _async_transactions.execute, []

    async def lagging(session: Any, statement: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(statement, BatchStatement) and len(refused) < 2:
            refused.append(statement)
            raise InvalidRequest(
                f"Error from server: code=2200 [Invalid query] "
                f'message="table {c.table_name} does not exist"'
            )
        return await real(session, statement, *args, **kwargs)

    monkeypatch.setattr(_async_transactions, "execute", lagging)

    async def main() -> None:
        await repo.append("lag", UserMessage("once"))
        assert await repo.find_by_conversation_id("lag") == [UserMessage("once")]

    run(main)
    assert len(refused) == 2


def test_a_dropped_table_is_a_schema_error_soon(repository: Any, server: ServerInfo) -> None:
    c = repository.config
    repo = Repo(session_of(server), keyspace=c.keyspace, table_name=c.table_name)

    async def main() -> None:
        await repo.append("gone", UserMessage("before"))
        session_of(server).execute(f'DROP TABLE "{c.keyspace}"."{c.table_name}"')
        started = time.monotonic()
        with pytest.raises(SchemaError, match=r"does not exist|missing"):
            await repo.append("gone", UserMessage("after"))
        assert time.monotonic() - started < GONE_AFTER + 6  # not 40 tries ending otherwise

    run(main)


def test_from_url_creates_keyspace_and_table_eagerly_and_owns_its_cluster(
    server: ServerInfo,
) -> None:
    keyspace = f"ks_{unique_suffix()}"

    async def main() -> None:
        repo = await Repo.from_url(str(server.url), keyspace=keyspace)
        cluster = repo._owned
        async with repo:
            await repo.save_all("u", [UserMessage("via url")])
            assert await repo.find_by_conversation_id("u") == [UserMessage("via url")]
        assert cluster.is_shutdown

    try:
        run(main)
        rows = session_of(server).execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,)
        )
        assert [r.table_name for r in rows] == ["chat_memory"]
    finally:
        session_of(server).execute(f'DROP KEYSPACE IF EXISTS "{keyspace}"', timeout=120)
    assert not session_of(server).is_shutdown


def test_async_repository_from_url_finds_the_twin(repository: Any, server: ServerInfo) -> None:
    async def main() -> None:
        repo = await async_repository_from_url(
            str(server.url), table_name=repository.config.table_name, initialize_schema="never"
        )
        assert isinstance(repo, Repo)
        async with repo:
            await repo.append("r", UserMessage("async"))

    run(main)
    assert repository.find_by_conversation_id("r") == [UserMessage("async")]


def test_an_unreachable_server_is_backend_unavailable() -> None:
    async def main() -> None:
        with pytest.raises(BackendUnavailableError):
            await Repo.from_url(f"cassandra://127.0.0.1:{free_port()}/ks", connect_timeout=2)

    run(main)


@pytest.mark.parametrize("option", ["request_timeout", "connect_timeout"])
def test_bad_driver_timeouts_are_rejected_before_connecting(option: str) -> None:
    async def main() -> None:
        with pytest.raises(InvalidArgumentError, match=option):
            await Repo.from_url("cassandra://127.0.0.1:1/ks", **{option: 0})

    run(main)


def test_options_are_validated_at_construction(server: ServerInfo) -> None:
    with pytest.raises(InvalidArgumentError):
        on_session(server, fetch_size=0)
    with pytest.raises(InvalidArgumentError):
        Repo(None)


# -- statements, paging, TTL -------------------------------------------------------------------
def test_the_window_costs_one_read_and_one_write(repository: Any, server: ServerInfo) -> None:
    c = repository.config
    repo = on_session(server, table_name=c.table_name, initialize_schema="never")

    async def main() -> None:
        memory = AsyncMessageWindowChatMemory(repo, max_messages=20)
        await memory.add("p", UserMessage("warm up"))
        with requests(server) as seen:
            await memory.add("p", UserMessage("hello"))
            await memory.add("p", AssistantMessage("hi"))
            window = await memory.get("p")
        assert [m.text for m in window] == ["warm up", "hello", "hi"]
        assert [type(s) for s in seen] == [BatchStatement, BatchStatement, BoundStatement]

    run(main)


def test_a_long_log_is_read_page_by_page_and_stays_consistent(
    repository: Any, server: ServerInfo
) -> None:
    c = repository.config
    repo = on_session(server, table_name=c.table_name, initialize_schema="never", fetch_size=4)
    texts = [f"m{i}" for i in range(30)]

    async def main() -> None:
        await repo.save_all("long", [SystemMessage("s"), *(UserMessage(t) for t in texts)])
        pages: list[int] = []
        real = _aio.AsyncResultSet.fetch_next_page

        async def counting(self: Any) -> None:
            pages.append(1)
            await real(self)

        _aio.AsyncResultSet.fetch_next_page = counting  # type: ignore[method-assign]
        try:
            got = await repo.find_by_conversation_id("long")
        finally:
            _aio.AsyncResultSet.fetch_next_page = real  # type: ignore[method-assign]
        assert [m.text for m in got] == ["s", *texts]
        assert len(pages) >= 7  # 30 rows, 4 a page

    run(main)


def test_ttl_is_applied_on_every_write_to_every_row(server: ServerInfo, made: list[Repo]) -> None:
    repo = on_session(server, ttl=timedelta(minutes=10))
    made.append(repo)

    async def main() -> None:
        memory = AsyncMessageWindowChatMemory(repo, max_messages=10)
        await memory.add("t", [SystemMessage("s"), UserMessage("u"), AssistantMessage("a")])
        await repo.append("t", UserMessage("plain append"))
        await repo.save_all("t2", [UserMessage("saved")])

    run(main)
    for cid in ("t", "t2"):
        values = ttls(server, repo, cid)
        assert values and all(590 <= v <= 600 for v in values), values


def test_every_row_kept_shares_one_expiry(server: ServerInfo, made: list[Repo]) -> None:
    repo = on_session(server, ttl=timedelta(seconds=30))
    made.append(repo)

    async def main() -> None:
        memory = AsyncMessageWindowChatMemory(repo, max_messages=4)
        call = AssistantMessage(None, tool_calls=(ToolCall(id="1", name="f"),))
        await memory.add("o", [UserMessage("q"), call])
        await asyncio.sleep(2.2)
        result = ToolResponse(id="1", name="f", response_data="r")
        await memory.add("o", ToolResponseMessage((result,)))

    run(main)
    values = ttls(server, repo, "o")
    assert max(values) - min(values) <= 1, values


def test_expired_conversations_read_empty(server: ServerInfo, made: list[Repo]) -> None:
    repo = on_session(server, ttl=timedelta(seconds=2))
    made.append(repo)

    async def main() -> None:
        await repo.save_all("e", [UserMessage("short-lived")])
        assert await repo.find_conversation_ids() == ["e"]
        await asyncio.sleep(3.5)
        assert await repo.find_by_conversation_id("e") == []
        await repo.append("e", UserMessage("fresh"))
        assert [(m.position, m.text) for m in await repo.find_by_conversation_id("e")] == [
            (0, "fresh")
        ]

    run(main)


# -- concurrency, cancellation, twins on one table --------------------------------------------
def test_many_first_callers_prepare_each_statement_once(
    server: ServerInfo, made: list[Repo], monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem.cassandra._async import transactions as _async_transactions

    prepared: list[str] = []

    async def counting(session: Any, query: str) -> Any:
        prepared.append(query)
        return await _aio.prepare(session, query)

    monkeypatch.setattr(_async_transactions, "prepare", counting)
    repo = on_session(server)
    made.append(repo)

    async def main() -> None:
        await asyncio.gather(*(repo.append(f"c{i}", UserMessage("m")) for i in range(30)))
        assert len(await repo.find_conversation_ids()) == 30

    run(main)
    assert len(prepared) == len(set(prepared))


def test_a_cancelled_request_leaves_the_loop_and_the_repository_healthy(
    repository: Any, server: ServerInfo
) -> None:
    c = repository.config
    repo = on_session(server, table_name=c.table_name, initialize_schema="never")
    errors: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: errors.append(ctx))
        await repo.save_all("k", [UserMessage("old")])
        for _ in range(10):
            task = asyncio.create_task(repo.find_by_conversation_id("k"))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await asyncio.sleep(0.5)  # the cancelled requests' answers arrive and are dropped
        assert await repo.find_by_conversation_id("k") == [UserMessage("old")]

    run(main)
    assert errors == []


def test_sync_and_async_twins_share_one_table_and_its_guards(
    repository: Any, server: ServerInfo
) -> None:
    c = repository.config
    repo = on_session(server, table_name=c.table_name, initialize_schema="never")

    async def main() -> None:
        mine = AsyncMessageWindowChatMemory(repo, max_messages=4)
        await mine.add("s", [UserMessage("u0"), AssistantMessage("a0")])
        repository.append("s", [UserMessage("u1"), AssistantMessage("a1")])  # stale guard
        await mine.add("s", [UserMessage("u2"), AssistantMessage("a2")])
        assert [m.text for m in await mine.get("s")] == ["u1", "a1", "u2", "a2"]
        repository.delete_by_conversation_id("s")
        await mine.add("s", UserMessage("fresh"))

    run(main)
    assert [(m.position, m.text) for m in repository.find_by_conversation_id("s")] == [(0, "fresh")]


def test_a_write_timeout_is_backend_unavailable(repository: Any, server: ServerInfo) -> None:
    c = repository.config

    async def main() -> None:
        repo = await Repo.from_url(
            str(server.url),
            table_name=c.table_name,
            initialize_schema="never",
            request_timeout=0.000001,
        )
        async with repo:
            start = time.monotonic()
            with pytest.raises(BackendUnavailableError):
                await repo.save_all("slow", [UserMessage("x")] * 50)
            assert time.monotonic() - start < 10

    run(main)


def test_a_table_not_open_yet_is_prepared_again(
    server: ServerInfo, made: list[Repo], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A racing ``CREATE TABLE IF NOT EXISTS`` may return before the winner's table is open:
    the node answers ``Unknown CF <id>`` for a moment, and preparing is tried again."""
    from cassandra.cluster import NoHostAvailable

    from chatmem.cassandra._async import transactions as _async_transactions

    failures = [2]

    async def flaky(session: Any, query: str) -> Any:
        if failures[0]:
            failures[0] -= 1
            raise NoHostAvailable("no host", {"h": "Server error: Unknown CF 1234"})
        return await _aio.prepare(session, query)

    monkeypatch.setattr(_async_transactions, "prepare", flaky)
    repo = on_session(server)
    made.append(repo)

    async def main() -> None:
        await repo.append("n", UserMessage("after two refusals"))
        assert await repo.find_by_conversation_id("n") == [UserMessage("after two refusals")]

    run(main)
    assert failures == [0]
