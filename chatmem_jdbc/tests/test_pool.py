"""Pooled connections: a connection the server dropped while idle is replaced, not surfaced."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from chatmem.core import MessageWindowChatMemory, UserMessage
from chatmem.jdbc import JdbcChatMemoryRepository, make_engine
from chatmem.testing.harness import ServerInfo, unique_suffix

pytestmark = pytest.mark.backend("postgres")


def test_connection_dropped_while_idle_is_replaced_transparently(server: ServerInfo) -> None:
    assert server.url is not None
    engine = make_engine(server.url, idle_ping_seconds=0.2, pool_size=1, max_overflow=0)
    repo = JdbcChatMemoryRepository(
        engine, table_name=f"cm_{unique_suffix()}", initialize_schema="always"
    )
    try:
        memory = MessageWindowChatMemory(repo, max_messages=5)
        memory.add("c", UserMessage("before"))
        with engine.connect() as conn:  # the pool's only connection
            pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        killer = sa.create_engine(server.url, poolclass=sa.pool.NullPool)
        with killer.connect() as conn:
            killed = conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            assert killed.scalar_one() is True
        killer.dispose()
        time.sleep(0.3)
        memory.add("c", UserMessage("after"))
        assert [m.text for m in memory.get("c")] == ["before", "after"]
    finally:
        repo.tables.metadata.drop_all(engine)
        engine.dispose()


def test_hot_connections_are_not_pinged(server: ServerInfo) -> None:
    assert server.url is not None
    engine = make_engine(server.url)
    statements: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    repo = JdbcChatMemoryRepository(
        engine, table_name=f"cm_{unique_suffix()}", initialize_schema="always"
    )
    try:
        repo.find_by_conversation_id("warm")
        statements.clear()
        for _ in range(5):
            repo.find_by_conversation_id("warm")
        assert len(statements) == 5, statements
    finally:
        repo.tables.metadata.drop_all(engine)
        engine.dispose()


def test_an_async_engine_keeps_its_connections_under_a_burst(server: ServerInfo) -> None:
    """100 tasks at once on the repository a URL gives: the pool opens at most its 15
    connections and closes none (asyncio's default overflow pool reopened one every few
    operations under such a burst)."""
    import asyncio

    from chatmem.core import AsyncMessageWindowChatMemory, async_repository_from_url

    assert server.url is not None
    url = server.url

    async def main() -> tuple[int, int]:
        repo = await async_repository_from_url(
            url, table_name=f"cm_{unique_suffix()}", initialize_schema="always"
        )
        opened: list[bool] = []
        closed: list[bool] = []
        events = repo.engine.sync_engine
        sa.event.listen(events, "connect", lambda *_: opened.append(True))
        sa.event.listen(events, "close", lambda *_: closed.append(True))
        memory = AsyncMessageWindowChatMemory(repo, max_messages=10, keep_history=True)

        async def conversation(i: int) -> None:
            for j in range(3):
                await memory.add(f"c{i}", UserMessage(f"m{j}"))
                await memory.get(f"c{i}")

        try:
            await asyncio.gather(*(conversation(i) for i in range(100)))
            assert [m.text for m in await memory.get("c7")] == ["m0", "m1", "m2"]
            return len(opened), len(closed)  # before close() disposes of the pool
        finally:
            async with repo.engine.begin() as conn:
                await conn.run_sync(repo.tables.metadata.drop_all)
            await repo.close()

    opened, closed = asyncio.run(main())
    assert opened <= 15
    assert closed == 0


def test_the_fast_paths_kept_connection_is_replaced_after_sitting_idle(
    server: ServerInfo,
) -> None:
    """The psycopg fast path keeps one connection between calls; one the server dropped while
    it sat idle longer than ``idle_ping_seconds`` is replaced, never surfaced."""
    assert server.url is not None
    engine = make_engine(server.url, idle_ping_seconds=0.2)
    repo = JdbcChatMemoryRepository(
        engine, table_name=f"cm_{unique_suffix()}", initialize_schema="always"
    )
    try:
        memory = MessageWindowChatMemory(repo, max_messages=5, keep_history=True)
        memory.add("c", UserMessage("before"))
        kept = repo._fast.kept  # type: ignore[union-attr]
        pid = kept.conn.info.backend_pid
        killer = sa.create_engine(server.url, poolclass=sa.pool.NullPool)
        with killer.connect() as conn:
            conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        killer.dispose()
        time.sleep(0.4)
        memory.add("c", UserMessage("after"))
        assert [m.text for m in memory.get("c")] == ["before", "after"]
        assert kept.conn.info.backend_pid != pid
    finally:
        repo.tables.metadata.drop_all(engine)
        engine.dispose()


def test_a_pre_pinging_pool_keeps_no_connection(server: ServerInfo) -> None:
    assert server.url is not None
    engine = make_engine(server.url, pool_pre_ping=True)
    repo = JdbcChatMemoryRepository(
        engine, table_name=f"cm_{unique_suffix()}", initialize_schema="always"
    )
    try:
        repo.append("c", UserMessage("x"))
        assert repo.find_last("c", 1)[0].text == "x"
        assert repo._fast.kept.conn is None  # type: ignore[union-attr]
    finally:
        repo.tables.metadata.drop_all(engine)
        engine.dispose()


def test_a_kept_connection_the_server_drops_is_reported_lost_then_replaced(
    server: ServerInfo,
) -> None:
    """Dropped while in use (inside the idle interval): the call fails as a lost connection
    (``BackendUnavailableError`` from an invalidated connection, never a plain backend
    error or a lost race), and the next call gets a fresh one."""
    from chatmem.core import BackendUnavailableError

    assert server.url is not None
    engine = make_engine(server.url)
    repo = JdbcChatMemoryRepository(
        engine, table_name=f"cm_{unique_suffix()}", initialize_schema="always"
    )
    try:
        repo.append("c", UserMessage("before"))
        pid = repo._fast.kept.conn.info.backend_pid  # type: ignore[union-attr]
        killer = sa.create_engine(server.url, poolclass=sa.pool.NullPool)
        with killer.connect() as conn:
            conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        killer.dispose()
        with pytest.raises(BackendUnavailableError) as caught:
            repo.append("c", UserMessage("lost"))
        assert getattr(caught.value.__cause__, "connection_invalidated", False)
        repo.append("c", UserMessage("after"))
        assert [m.text for m in repo.find_by_conversation_id("c")] == ["before", "after"]
    finally:
        repo.tables.metadata.drop_all(engine)
        engine.dispose()
