"""The SQLite fast path's kept connection: out of the pool's count, closed with the pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatmem.core import MessageWindowChatMemory, UserMessage
from chatmem.jdbc import JdbcChatMemoryRepository, make_engine
from chatmem.jdbc._native._sync import connections as _fast

pytestmark = pytest.mark.backend("sqlite")


def test_the_kept_connection_leaves_the_pool_its_capacity(tmp_path: Path) -> None:
    # A one-connection pool: were the kept connection still counted, the SQLAlchemy path
    # (save_all) would wait for it and time out.
    engine = make_engine(f"sqlite:///{tmp_path / 'one.db'}", pool_size=1, max_overflow=0)
    engine.pool._timeout = 2  # type: ignore[attr-defined]  # fail fast instead of 30 s
    repo = JdbcChatMemoryRepository(engine)
    try:
        memory = MessageWindowChatMemory(repo, max_messages=5, keep_history=True)
        memory.add("c", UserMessage("kept"))
        assert _fast._KEPT[engine].conn is not None
        repo.save_all("d", [UserMessage("pooled")])
        assert [m.text for m in memory.get("c")] == ["kept"]
        assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    finally:
        engine.dispose()


def test_dispose_closes_the_kept_connection_and_the_next_call_opens_one(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'dispose.db'}")
    repo = JdbcChatMemoryRepository(engine)
    memory = MessageWindowChatMemory(repo, max_messages=5, keep_history=True)
    memory.add("c", UserMessage("one"))
    kept = _fast._KEPT[engine]
    first = kept.conn
    engine.dispose()
    assert kept.conn is None
    with pytest.raises(Exception, match="closed"):
        first.execute("SELECT 1")
    memory.add("c", UserMessage("two"))
    assert [m.text for m in memory.get("c")] == ["one", "two"]
    engine.dispose()


def test_a_memory_database_always_goes_through_its_pool() -> None:
    repo = JdbcChatMemoryRepository("sqlite://")
    try:
        MessageWindowChatMemory(repo, max_messages=5).add("c", UserMessage("x"))
        assert _fast._KEPT[repo.engine].keep is False
    finally:
        repo.close()
