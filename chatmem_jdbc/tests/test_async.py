"""The async twin's own facts (``AsyncJdbcChatMemoryRepository``) where the shared suite does
not reach: which asyncio driver and fast path a URL picks, deferred schema creation on a
caller's engine, SQLite's first-use guarantees (WAL once, schema in BEGIN IMMEDIATE), error
translation, cancellation, and the dialects that have no async twin."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa

from chatmem.core import (
    AsyncMessageWindowChatMemory,
    BackendError,
    ConcurrencyError,
    InvalidArgumentError,
    SchemaError,
    SystemMessage,
    UserMessage,
    async_repository_from_url,
)
from chatmem.jdbc import AsyncJdbcChatMemoryRepository, make_async_engine
from chatmem.testing.harness import Harness, ServerInfo

T = TypeVar("T")
Repo = AsyncJdbcChatMemoryRepository


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


async def twin_of(harness: Harness, server: ServerInfo, repository: Any, **options: Any) -> Repo:
    """The async twin on the same tables as the sync ``repository`` (the plugin's cleanup
    drops them)."""
    spec = harness.connect_spec(server, repository)
    assert spec is not None
    url, opts = spec
    repo = await async_repository_from_url(url, **{**opts, **options})
    assert isinstance(repo, AsyncJdbcChatMemoryRepository)
    return repo


# -- every database the async twin supports ----------------------------------------------
@pytest.mark.backend("sqlite", "postgres", "mariadb")
def test_a_url_picks_the_asyncio_driver_and_its_fast_path(
    harness: Harness, server: ServerInfo, repository: Any
) -> None:
    expected = {
        "sqlite": ("aiosqlite", "AsyncSqliteFastPath"),
        "postgres": ("psycopg", "AsyncPsycopgFastPath"),
        "mariadb": ("aiomysql", "AsyncMysqlFastPath"),
    }[harness.name]

    async def main() -> None:
        repo = await twin_of(harness, server, repository)
        try:
            assert repo.engine.dialect.is_async
            assert (repo.engine.dialect.driver, type(repo._fast).__name__) == expected
        finally:
            await repo.close()

    run(main())


@pytest.mark.backend("sqlite", "postgres", "mariadb")
def test_both_twins_read_each_others_writes(
    harness: Harness, server: ServerInfo, repository: Any
) -> None:
    repository.save_all("shared", [SystemMessage("s"), UserMessage("from sync")])

    async def main() -> None:
        repo = await twin_of(harness, server, repository)
        try:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=3)
            assert [m.text for m in await memory.get("shared")] == ["s", "from sync"]
            await memory.add("shared", UserMessage("from async"))
        finally:
            await repo.close()

    run(main())
    texts = [m.text for m in repository.find_by_conversation_id("shared")]
    assert texts == ["s", "from sync", "from async"]


@pytest.mark.backend("sqlite", "postgres", "mariadb")
def test_on_a_callers_engine_the_schema_is_created_by_the_first_call(
    harness: Harness, server: ServerInfo, repository: Any
) -> None:
    spec = harness.connect_spec(server, repository)
    assert spec is not None
    table = f"{repository.config.table_name}_late"

    async def main() -> None:
        engine = make_async_engine(spec[0])
        try:
            repo = AsyncJdbcChatMemoryRepository(engine, table_name=table)  # no I/O here
            async with engine.connect() as conn:
                assert not await conn.run_sync(lambda c: sa.inspect(c).has_table(table))
            await repo.append("c", UserMessage("first"))  # creates the schema once
            assert [m.text for m in await repo.find_by_conversation_id("c")] == ["first"]
            await repo.close()  # the caller's engine stays usable
            async with engine.connect() as conn:
                assert await conn.run_sync(lambda c: sa.inspect(c).has_table(table))
                await conn.run_sync(repo.tables.metadata.drop_all)
                await conn.commit()
        finally:
            await engine.dispose()

    run(main())


@pytest.mark.backend("sqlite", "postgres", "mariadb")
def test_never_mode_raises_schema_error_naming_the_remedy(
    harness: Harness, server: ServerInfo, repository: Any
) -> None:
    async def main() -> None:
        repo = await twin_of(
            harness, server, repository, table_name="cm_absent_async", initialize_schema="never"
        )
        try:
            with pytest.raises(SchemaError, match="chatmem schema"):
                await repo.find_by_conversation_id("c")
        finally:
            await repo.close()

    run(main())


@pytest.mark.backend("sqlite", "postgres", "mariadb")
def test_a_cancelled_window_add_leaves_the_old_or_the_new_history(
    harness: Harness, server: ServerInfo, repository: Any
) -> None:
    async def main() -> None:
        repo = await twin_of(harness, server, repository)
        try:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=4)
            await memory.add("c", UserMessage("kept"))
            for i in range(20):
                task = asyncio.ensure_future(
                    memory.add("c", [SystemMessage(f"s{i}"), UserMessage(f"u{i}")])
                )
                await asyncio.sleep(0.001 * (i % 5))
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                texts = [m.text for m in await memory.get("c")]
                assert texts[-1] in ("kept", *(f"u{j}" for j in range(i + 1))), texts
            await memory.add("c", UserMessage("after"))  # the pool is still usable
            assert (await memory.get("c"))[-1].text == "after"
        finally:
            await repo.close()

    run(main())


@pytest.mark.backend("sqlite")
def test_close_after_cancelled_adds_leaves_the_database_unlocked(tmp_path: Path) -> None:
    # Cancelled adds keep running to their commit or rollback; close() used to dispose the
    # engine under them, so a connection was cut off inside BEGIN IMMEDIATE and the file
    # stayed locked for every other process (27 of 30 runs here).
    path = tmp_path / "cancel.db"

    async def main() -> None:
        repo = await async_repository_from_url(f"sqlite:///{path}")
        memory = AsyncMessageWindowChatMemory(repo, max_messages=4)
        await memory.add("c", UserMessage("kept"))
        for i in range(20):
            task = asyncio.ensure_future(
                memory.add("c", [SystemMessage(f"s{i}"), UserMessage("u")])
            )
            await asyncio.sleep(0.001 * (i % 5))
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await memory.get("c")
        await repo.close()
        other = sqlite3.connect(path, timeout=0.5)
        try:
            other.execute("BEGIN IMMEDIATE")  # "database is locked" while a writer is left
            other.execute("ROLLBACK")
        finally:
            other.close()

    run(main())


# -- PostgreSQL and MariaDB ------------------------------------------------------------
@pytest.mark.backend("postgres")
def test_postgres_a_failing_fast_path_statement_is_translated_and_the_pool_stays_usable(
    harness: Harness, server: ServerInfo, repository: Any
) -> None:
    async def main() -> None:
        repo = await twin_of(harness, server, repository)
        try:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=5)
            await memory.add("c", UserMessage("before"))
            async with repo.engine.begin() as conn:
                await conn.run_sync(repo.tables.metadata.drop_all)
            with pytest.raises(SchemaError):
                await memory.add("c", UserMessage("x"))  # the psycopg fast path's append
            with pytest.raises(SchemaError):
                await memory.get("c")  # and its window read
            await repo.create_schema()
            await memory.add("c", UserMessage("after"))
            assert [m.text for m in await memory.get("c")] == ["after"]
        finally:
            await repo.close()

    run(main())


@pytest.mark.backend("mariadb")
def test_mariadb_aiomysql_raises_pymysqls_errors_so_the_retry_rule_is_shared() -> None:
    """aiomysql is built on PyMySQL: a deadlock from either driver is the same exception
    class with the same errno, so ``MysqlDialect.is_retryable`` serves both twins."""
    import aiomysql
    import pymysql
    from sqlalchemy.exc import OperationalError

    from chatmem.jdbc._native.mysql import MysqlDialect

    assert aiomysql.OperationalError is pymysql.err.OperationalError
    deadlock = OperationalError("INSERT ..", {}, aiomysql.OperationalError(1213, "Deadlock"))
    check = OperationalError("INSERT ..", {}, aiomysql.OperationalError(3819, "Check failed"))
    assert MysqlDialect().is_retryable(deadlock) and not MysqlDialect().is_retryable(check)


@pytest.mark.backend("mariadb")
def test_mariadb_an_aiomysql_that_cannot_bind_bytes_is_named_before_any_io(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """aiomysql 0.3.2 with PyMySQL >= 1.2.3 fails every query that binds bytes (our ids):
    the engine refuses it up front with the pip command, instead of a TypeError mid-query."""
    from aiomysql import connection

    from chatmem.core import MissingDependencyError

    monkeypatch.setattr(connection, "escape_bytes_prefixed", "DO NOT IMPORT THIS!!!")
    with pytest.raises(MissingDependencyError, match=r"PyMySQL<1\.2"):
        make_async_engine("mysql://u:p@127.0.0.1:1/db")


# -- SQLite ----------------------------------------------------------------------------
@pytest.mark.backend("sqlite")
def test_sqlite_first_async_use_races_on_a_new_file(tmp_path: Path) -> None:
    """Many repositories (each its own engine) open one new file at once: the file goes to
    WAL once, the schema is created once inside BEGIN IMMEDIATE, and every write lands."""
    url = f"sqlite:///{tmp_path / 'cold.db'}"

    async def one(i: int) -> None:
        repo = await async_repository_from_url(url)
        try:
            await repo.append("shared", UserMessage(f"m{i}"))  # type: ignore[attr-defined]
        finally:
            await repo.close()  # type: ignore[attr-defined]

    async def main() -> list[str]:
        await asyncio.gather(*(one(i) for i in range(12)))
        repo = await async_repository_from_url(url)
        try:
            return [m.text or "" for m in await repo.find_by_conversation_id("shared")]
        finally:
            await repo.close()  # type: ignore[attr-defined]

    texts = run(main())
    assert sorted(texts) == sorted(f"m{i}" for i in range(12))
    mode = sqlite3.connect(tmp_path / "cold.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


@pytest.mark.backend("sqlite")
def test_sqlite_a_new_file_locked_by_a_writer_is_waited_for_without_blocking_the_loop(
    tmp_path: Path,
) -> None:
    """The WAL switch retries "database is locked" with asyncio.sleep: the loop keeps
    ticking while a foreign writer holds the new file's lock."""
    path = tmp_path / "new.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("CREATE TABLE other_app (x)")
    released = threading.Event()

    def release() -> None:
        writer.execute("COMMIT")
        writer.close()
        released.set()

    timer = threading.Timer(1.5, release)

    async def main() -> tuple[list[str], int]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        tick_task = asyncio.ensure_future(ticker())
        timer.start()
        repo = await AsyncJdbcChatMemoryRepository.from_url(f"sqlite:///{path}")
        try:
            await repo.append("c", UserMessage("first"))
            assert released.is_set()
            texts = [m.text or "" for m in await repo.find_by_conversation_id("c")]
        finally:
            await repo.close()
            done.set()
            await tick_task
        return texts, ticks

    try:
        texts, ticks = run(main())
    finally:
        timer.join()
    assert texts == ["first"]
    assert ticks > 50  # ~1.5 s of 10 ms ticks: the loop was never held
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


@pytest.mark.backend("sqlite")
def test_sqlite_a_trigger_failure_is_reported_not_retried(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"

    async def main() -> None:
        repo = await AsyncJdbcChatMemoryRepository.from_url(f"sqlite:///{path}")
        db = sqlite3.connect(path)
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON ai_chat_memory "
            "WHEN NEW.conversation_id = 'refused' BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
        )
        db.commit()
        db.close()
        memory = AsyncMessageWindowChatMemory(repo)
        try:
            for write in (
                lambda: repo.save_all("refused", [UserMessage("a")]),
                lambda: memory.add("refused", UserMessage("b")),
            ):
                with pytest.raises(BackendError) as caught:
                    await write()
                assert not isinstance(caught.value, ConcurrencyError)
                assert "disk on fire" in str(caught.value.__cause__)
            assert await repo.find_by_conversation_id("refused") == []
            await memory.add("other", UserMessage("fine"))
            assert await repo.find_by_conversation_id("other") == [UserMessage("fine")]
        finally:
            await repo.close()

    run(main())


@pytest.mark.backend("sqlite")
def test_sqlite_in_memory_serves_concurrent_tasks_on_its_one_connection() -> None:
    async def main() -> None:
        async with await AsyncJdbcChatMemoryRepository.from_url("sqlite:///:memory:") as repo:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=500)
            await asyncio.gather(
                *(memory.add(f"c{i % 3}", UserMessage(f"m{i}")) for i in range(60)),
                *(repo.find_by_conversation_id(f"c{i % 3}") for i in range(30)),
            )
            counts = [len(await repo.find_by_conversation_id(f"c{i}")) for i in range(3)]
            assert counts == [20, 20, 20]

    run(main())


# -- no async twin ---------------------------------------------------------------------
@pytest.mark.backend("sqlite")
@pytest.mark.parametrize(
    "url", ["mssql://u:p@localhost/db", "oracle://u:p@localhost/?service_name=x"]
)
def test_sql_server_and_oracle_have_no_async_twin(url: str) -> None:
    with pytest.raises(InvalidArgumentError, match="no async twin") as caught:
        run(async_repository_from_url(url))
    assert caught.value.argument == "url"
    with pytest.raises(InvalidArgumentError, match="no async twin"):
        run(AsyncJdbcChatMemoryRepository.from_url(url))
