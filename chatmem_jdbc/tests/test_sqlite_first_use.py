"""SQLite first use: a new file opened while another connection is writing to it.

Switching a database to WAL needs a lock SQLite refuses at once ("database is locked",
without waiting through the busy timeout) while another connection holds a write
transaction in the default rollback-journal mode. That is what concurrent first users of a
new file do to each other (one converts the file while another's conversion or first
write is under way); here a plain ``sqlite3`` connection holds the write lock on purpose,
so the race is reproduced every time instead of in one trial out of hundreds.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from chatmem.core import MessageWindowChatMemory, UserMessage, repository_from_url

pytestmark = pytest.mark.backend("sqlite")


def test_a_new_file_locked_by_a_writer_is_waited_for(tmp_path: Path) -> None:
    warm = repository_from_url(f"sqlite:///{tmp_path / 'warm.db'}")  # imports done before
    warm.close()  # type: ignore[attr-defined]
    path = tmp_path / "new.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")  # the write lock, in rollback-journal mode
    writer.execute("CREATE TABLE other_app (x)")
    released = threading.Event()

    def release() -> None:
        writer.execute("COMMIT")
        writer.close()
        released.set()

    timer = threading.Timer(2.0, release)
    timer.start()
    try:
        assert not released.is_set()  # the writer still holds the lock
        repo = repository_from_url(f"sqlite:///{path}")  # exactly as the README shows
        memory = MessageWindowChatMemory(repo, max_messages=20)
        memory.add("c", UserMessage("first"))
        assert released.is_set()  # it waited for the writer instead of failing
        assert [m.text for m in memory.get("c")] == ["first"]
        repo.close()  # type: ignore[attr-defined]
    finally:
        timer.join()
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
