"""Cassandra's ``add_and_get``: the window it returns without a read (its append's LWT applied
at the guard the cached window was seen at) equals a fresh read after the add, and any doubt
(another writer, a replace, a system message) brings the read back."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import pytest
from cassandra.query import BatchStatement, BoundStatement

from chatmem.cassandra import AsyncCassandraChatMemoryRepository, CassandraChatMemoryRepository
from chatmem.cassandra._codec import StoredRow
from chatmem.cassandra._native.window import Window, WindowCache
from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from chatmem.testing.harness import ServerInfo
from chatmem_cassandra.tests.test_cassandra import EVERY_KIND, requests, session_of

pytestmark = pytest.mark.backend("cassandra")


def twin_on(server: ServerInfo, repo: Any, cls: type[Any] = CassandraChatMemoryRepository) -> Any:
    """Another repository instance on ``repo``'s table: another writer, or a fresh reader."""
    c = repo.config
    return cls(session_of(server), keyspace=c.keyspace, table_name=c.table_name)


def stamped(messages: Sequence[Message]) -> list[tuple[Any, ...]]:
    """What a caller can see of each message: its content and the store-assigned fields."""
    return [(m, m.position, m.created_at) for m in messages]


def kinds(seen: Sequence[Any]) -> list[type]:
    return [type(s) for s in seen]


def test_add_and_get_answers_from_the_window_its_append_proved_current(
    repository: Any, server: ServerInfo
) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=4)
    reader = MessageWindowChatMemory(twin_on(server, repository), max_messages=4)
    assert stamped(memory.add_and_get("c", EVERY_KIND[1:])) == stamped(reader.get("c"))
    for turn in range(6):
        memory.add("c", UserMessage(f"u{turn}"))
        with requests(server) as seen:
            window = memory.add_and_get("c", AssistantMessage(f"a{turn}"))
        assert kinds(seen) == [BatchStatement], turn  # the append alone: no read
        assert stamped(window) == stamped(reader.get("c")), turn
    assert [m.text for m in window] == ["u4", "a4", "u5", "a5"]
    # the trim rode in the appends: the log holds the window's rows and one more at most
    assert len(repository.find_by_conversation_id("c")) <= 5


def test_another_writer_or_a_replace_between_turns_brings_the_read_back(
    repository: Any, server: ServerInfo
) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=4)
    other = MessageWindowChatMemory(twin_on(server, repository), max_messages=4)
    reader = MessageWindowChatMemory(twin_on(server, repository), max_messages=4)
    memory.add_and_get("w", [UserMessage("u0"), AssistantMessage("a0")])
    other.add("w", [UserMessage("u1"), AssistantMessage("a1")])
    with requests(server) as seen:
        window = memory.add_and_get("w", UserMessage("u2"))
    # the append lost its race to the other writer's guard, won on the next, then read
    assert kinds(seen) == [BatchStatement, BatchStatement, BoundStatement]
    assert [m.text for m in window] == ["u1", "a1", "u2"]
    assert stamped(window) == stamped(reader.get("w"))
    with requests(server) as seen:  # that read proved the window current again
        window = memory.add_and_get("w", AssistantMessage("a2"))
    assert stamped(window) == stamped(reader.get("w"))
    assert kinds(seen) == [BatchStatement]

    other.repository.save_all("w", [UserMessage("x")])  # another writer's replace
    window = memory.add_and_get("w", AssistantMessage("y"))
    assert [m.text for m in window] == ["x", "y"]
    assert stamped(window) == stamped(reader.get("w"))
    repository.save_all("w", [UserMessage("z")])  # our own replace: read again too
    with requests(server) as seen:
        window = memory.add_and_get("w", AssistantMessage("z1"))
    assert BoundStatement in kinds(seen)
    assert stamped(window) == stamped(reader.get("w")) and [m.text for m in window] == ["z", "z1"]
    other.repository.delete_by_conversation_id("w")
    window = memory.add_and_get("w", UserMessage("fresh"))
    assert [(m.position, m.text) for m in window] == [(0, "fresh")]
    assert stamped(window) == stamped(reader.get("w"))


@pytest.mark.parametrize("keep_history", [False, True], ids=["trimmed", "keep_history"])
def test_system_messages_and_trims_keep_it_equal_to_a_fresh_read(
    repository: Any, server: ServerInfo, keep_history: bool
) -> None:
    window_size = 3
    memory = MessageWindowChatMemory(
        repository, max_messages=window_size, keep_history=keep_history
    )
    reader = MessageWindowChatMemory(
        twin_on(server, repository), max_messages=window_size, keep_history=keep_history
    )
    script: list[list[Message]] = [
        [SystemMessage("s1"), UserMessage("u0")],
        [AssistantMessage("a0")],
        [UserMessage("u1"), AssistantMessage("a1"), AssistantMessage("a1b")],
        [SystemMessage("s2")],  # a new system message replaces s1 (an edit, then a read)
        [UserMessage("u2")],
        [AssistantMessage("a2")],
        [UserMessage("u3"), AssistantMessage("a3")],
    ]
    for step, batch in enumerate(script):
        window = memory.add_and_get("s", batch)
        assert stamped(window) == stamped(reader.get("s")), step
    assert [m.text for m in window] == ["s2", "u3", "a3"]
    # a system message appended outside the window rule lands in the cached statics too
    repository.append("s", SystemMessage("s3"))
    memory.add_and_get("s", UserMessage("u4"))
    with requests(server) as seen:
        window = memory.add_and_get("s", AssistantMessage("a4"))
    assert kinds(seen) == [BatchStatement]
    assert stamped(window) == stamped(reader.get("s"))
    # two system messages in a window of 3 leave room for one other: the turn u4, a4 has two
    assert [m.text for m in window] == ["s2", "s3"]
    stored = [m.text for m in repository.find_by_conversation_id("s")]
    assert ("u0" in stored) is keep_history  # trims ran only without keep_history


def test_the_async_twin_answers_from_the_cache_and_reads_after_another_writer(
    repository: Any, server: ServerInfo
) -> None:
    mine = twin_on(server, repository, AsyncCassandraChatMemoryRepository)
    theirs = twin_on(server, repository, AsyncCassandraChatMemoryRepository)
    reader = MessageWindowChatMemory(twin_on(server, repository), max_messages=4)

    async def main() -> None:
        memory = AsyncMessageWindowChatMemory(mine, max_messages=4)
        other = AsyncMessageWindowChatMemory(theirs, max_messages=4)
        await memory.add_and_get("a", UserMessage("u0"))
        for turn in range(4):
            with requests(server) as seen:
                window = await memory.add_and_get("a", AssistantMessage(f"a{turn}"))
            assert kinds(seen) == [BatchStatement], turn
            assert stamped(window) == stamped(reader.get("a")), turn
            await other.add("a", UserMessage(f"u{turn + 1}"))  # the other writer's turn
            with requests(server) as seen:
                window = await memory.add_and_get("a", AssistantMessage(f"b{turn}"))
            assert BoundStatement in kinds(seen), turn
            assert stamped(window) == stamped(reader.get("a")), turn
        # u3 b2 a3 u4 b3: one over the window, and the cut moves on to the next user message
        assert [m.text for m in window] == ["u4", "b3"]

    asyncio.run(main())


def test_the_cache_is_bounded_per_conversation_and_in_total() -> None:
    def window(guard: int, rows: int) -> Window:
        made = tuple(StoredRow(p, "USER", "{}", 0) for p in range(rows - 1, -1, -1))
        return Window(guard, 0, {}, made, complete=True)

    cache = WindowCache(per_conversation=4, total=10)
    cache.put("a", window(10, 6))  # kept: the newest 4, no longer complete
    assert cache.advance("a", 9, next_position=11, base=10, messages=(), floor=None) is None
    cache.put("a", window(10, 6))
    left = cache.advance(
        "a",
        10,
        next_position=11,
        base=10,
        messages=[UserMessage("n", created_at=datetime.now(timezone.utc))],
        floor=None,
    )
    assert left is not None and [r.position for r in left.rows] == [10, 5, 4, 3]
    assert left.tail(4) == left.rows and left.tail(5) is None  # a read of 5 could see more
    for cid in ("b", "c", "d"):
        cache.put(cid, window(3, 3))  # 4 + 3 + 3 + 3 rows: "a" goes first
    assert cache.advance("a", 11, next_position=12, base=11, messages=(), floor=None) is None
    assert cache.advance("b", 3, next_position=4, base=3, messages=(), floor=None) is not None
    # a trim's floor proves the rows complete only when a remembered row lay below it
    now = datetime.now(timezone.utc)
    for floor, complete in ((4, True), (2, False)):
        trims = WindowCache(per_conversation=4)
        trims.put("t", window(10, 6))  # rows 5, 4, 3, 2 of 0..5
        left = trims.advance(
            "t",
            10,
            next_position=11,
            base=10,
            messages=[AssistantMessage("m", created_at=now)],
            floor=floor,
        )
        assert left is not None and left.complete is complete
        assert [r.position for r in left.rows] == [p for p in (10, 5, 4, 3, 2) if p >= floor][:4]
