"""SQLite's window cache (``_native/sqlite_windows.py``): a window served without a read is
the window a fresh read returns, after this repository's own appends, trims, replaces and
deletes, and after writes by another connection, thread or process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from chatmem.jdbc import AsyncJdbcChatMemoryRepository, JdbcChatMemoryRepository, make_engine
from chatmem.jdbc._native._sync import connections as _fast

pytestmark = pytest.mark.backend("sqlite")


def _texts(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.message_type.value, m.text or "") for m in messages]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'windows.db'}"


@pytest.fixture
def reader(url: str) -> Iterator[JdbcChatMemoryRepository]:
    """The repository whose kept connection caches windows."""
    repo = JdbcChatMemoryRepository(make_engine(url))
    yield repo
    repo.close()


def _fresh(url: str, cid: str, limit: int) -> list[tuple[str, str]]:
    """The window as a new engine (no cache) reads it."""
    repo = JdbcChatMemoryRepository(make_engine(url))
    try:
        return _texts(MessageWindowChatMemory(repo, max_messages=limit).get(cid))
    finally:
        repo.close()


def _window_selects(repo: JdbcChatMemoryRepository) -> list[str]:
    """The SQL the kept connection runs from now on that reads messages."""
    seen: list[str] = []
    conn = _fast._KEPT[repo.engine].conn
    assert conn is not None
    conn.set_trace_callback(lambda sql: seen.append(sql) if "SELECT" in sql.upper() else None)
    return seen


def test_served_windows_are_fresh_reads_after_every_kind_of_write(
    url: str, reader: JdbcChatMemoryRepository
) -> None:
    memory = MessageWindowChatMemory(reader, max_messages=4, keep_history=True)
    trimming = MessageWindowChatMemory(reader, max_messages=4)
    cid, other = "c", "d"
    memory.add(cid, SystemMessage("be brief"))
    memory.add(other, UserMessage("elsewhere"))
    assert _texts(memory.get(cid)) == _fresh(url, cid, 4)
    selects = _window_selects(reader)
    for i in range(6):  # appends extend the cached window; the oldest others leave it
        memory.add(cid, UserMessage(f"q{i}"))
        memory.add(cid, AssistantMessage(f"a{i}"))
        assert _texts(memory.get(cid)) == _fresh(url, cid, 4)
    assert selects == [], "the window after this repository's own appends is not read again"
    assert _texts(memory.get(other)) == _fresh(url, other, 4)  # other windows stay right
    window = memory.add_and_get(cid, [SystemMessage("second rule"), UserMessage("more")])
    assert _texts(window) == _fresh(url, cid, 4) == _texts(memory.get(cid))
    for i in range(5):  # an append that trims the stored history
        trimming.add(cid, UserMessage(f"t{i}"))
        assert _texts(trimming.get(cid)) == _fresh(url, cid, 4) == _texts(memory.get(cid))
    reader.save_all(cid, [UserMessage("replaced")])  # through SQLAlchemy's connection
    assert _texts(memory.get(cid)) == [("USER", "replaced")] == _fresh(url, cid, 4)
    reader.delete_by_conversation_id(cid)
    assert memory.get(cid) == [] and _fresh(url, cid, 4) == []
    assert _texts(memory.get(other)) == [("USER", "elsewhere")]


def test_another_engine_writing_between_reads_is_seen(
    url: str, reader: JdbcChatMemoryRepository
) -> None:
    memory = MessageWindowChatMemory(reader, max_messages=3, keep_history=True)
    writer = JdbcChatMemoryRepository(make_engine(url))
    theirs = MessageWindowChatMemory(writer, max_messages=3, keep_history=True)
    try:
        for i in range(4):
            memory.add("c", UserMessage(f"mine {i}"))
            memory.get("c")  # cached
            theirs.add("c", AssistantMessage(f"theirs {i}"))  # another connection commits
            assert _texts(memory.get("c")) == _fresh(url, "c", 3)
            assert ("ASSISTANT", f"theirs {i}") in _texts(memory.get("c"))
    finally:
        writer.close()


WRITER = textwrap.dedent(
    """
    import sys
    from chatmem.core import AssistantMessage, UserMessage
    from chatmem.jdbc import JdbcChatMemoryRepository
    repo = JdbcChatMemoryRepository(sys.argv[1])
    for op in sys.stdin:
        op = op.strip()
        if op == "append":
            repo.append("c", [AssistantMessage("from the other process")])
        elif op == "replace":
            repo.save_all("c", [UserMessage("replaced by the other process")])
        else:
            repo.delete_by_conversation_id("c")
        print("done", flush=True)
    repo.close()
    """
)


def test_a_second_writer_process_is_seen(url: str, reader: JdbcChatMemoryRepository) -> None:
    memory = MessageWindowChatMemory(reader, max_messages=3, keep_history=True)
    memory.add("c", UserMessage("one"))
    other = subprocess.Popen(
        [sys.executable, "-c", WRITER, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert other.stdin is not None and other.stdout is not None

    def in_the_other_process(op: str) -> None:
        other.stdin.write(op + "\n")  # type: ignore[union-attr]
        other.stdin.flush()  # type: ignore[union-attr]
        assert other.stdout.readline().strip() == "done"  # type: ignore[union-attr]

    try:
        assert _texts(memory.get("c")) == [("USER", "one")]  # cached
        in_the_other_process("append")
        assert _texts(memory.get("c")) == [("USER", "one"), ("ASSISTANT", "from the other process")]
        memory.add("c", UserMessage("two"))  # the append finds the cache stale: it reads again
        assert _texts(memory.get("c")) == _fresh(url, "c", 3)
        in_the_other_process("replace")
        assert _texts(memory.get("c")) == [("USER", "replaced by the other process")]
        in_the_other_process("delete")
        assert memory.get("c") == []
    finally:
        other.stdin.close()
        assert other.wait(timeout=120) == 0


def test_the_async_twin_serves_fresh_windows_too(url: str) -> None:
    async def main() -> None:
        repo = AsyncJdbcChatMemoryRepository(url)
        writer = JdbcChatMemoryRepository(make_engine(url))
        try:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=3, keep_history=True)
            await memory.add("c", SystemMessage("rule"))
            for i in range(4):
                await memory.add("c", UserMessage(f"q{i}"))
                assert _texts(await memory.get("c")) == _fresh(url, "c", 3)
                writer.append("c", [AssistantMessage(f"a{i}")])
                assert _texts(await memory.get("c")) == _fresh(url, "c", 3)
            window = await memory.add_and_get("c", [UserMessage("last")])
            assert _texts(window) == _fresh(url, "c", 3)
        finally:
            writer.close()
            await repo.close()

    asyncio.run(main())
