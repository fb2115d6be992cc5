"""Neo4j managed transactions when the driver's rollback hides the server's error.

After a transaction function fails, the driver rolls back; when the connection has not been
reset yet (a timing that CI hit once under 8 concurrent adds of one memory), that rollback
drains the failed result and raises ``ResultFailedError`` in place of the server's error.
These tests force that branch of the driver's rollback (the one line it runs when the
connection is not reset) against a real server, so it is hit every time. Real server only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from neo4j import exceptions as neo4j_errors
from neo4j._sync.work.transaction import TransactionBase

from chatmem.core import MessageWindowChatMemory, SystemMessage, UserMessage
from chatmem.core.longterm import MemoryCandidate, MemoryStatus, MemoryType
from chatmem.neo4j import Neo4jChatMemoryRepository, Neo4jMemoryRecordRepository
from chatmem.neo4j._errors import hidden_by_rollback, server_errors
from chatmem.testing.harness import ServerInfo, unique_suffix

pytestmark = pytest.mark.backend("neo4j")


@pytest.fixture
def rollback_before_reset(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[BaseException]]:
    """Every rollback of a failed transaction drains its results first, as the driver does
    on a connection that is not reset; yields what those drains raised."""
    original = TransactionBase._rollback
    raised: list[BaseException] = []

    def rollback(self: Any) -> None:
        try:
            self._consume_results()
        except neo4j_errors.ResultFailedError as exc:
            raised.append(exc)
            original(self)
            raise
        original(self)

    monkeypatch.setattr(TransactionBase, "_rollback", rollback)
    yield raised


@pytest.fixture
def memories(server: ServerInfo) -> Iterator[Neo4jMemoryRecordRepository]:
    suffix = unique_suffix()
    repo = Neo4jMemoryRecordRepository(
        server.extra["driver"],
        user_label=f"U_{suffix}",
        memory_label=f"M_{suffix}",
        message_label=f"Msg_{suffix}",
    )
    yield repo
    repo.drop_schema()


def candidate(content: str = "Prefers tea") -> MemoryCandidate:
    return MemoryCandidate(memory_type=MemoryType.PREFERENCE, content=content, confidence=0.9)


def test_the_server_error_replaces_the_rollbacks_result_failed_error(
    server: ServerInfo, rollback_before_reset: list[BaseException]
) -> None:
    driver = server.extra["driver"]

    def work(tx: Any) -> None:
        tx.run("RETURN 1 / $zero", zero=0).consume()

    with driver.session() as session, pytest.raises(neo4j_errors.ResultFailedError):
        session.execute_write(work)  # the driver's own answer on this branch
    with (
        driver.session() as session,
        pytest.raises(neo4j_errors.ClientError, match="/ by zero") as caught,
        server_errors(),
    ):
        session.execute_write(work)
    assert rollback_before_reset, "the forced rollback branch did not run"
    # marked as taken from behind the rollback; re-run only if the server allows it
    assert isinstance(caught.value.__context__, neo4j_errors.ResultFailedError)
    assert not hidden_by_rollback(caught.value)


def test_a_second_add_of_one_memory_returns_the_first(
    memories: Neo4jMemoryRecordRepository, rollback_before_reset: list[BaseException]
) -> None:
    first = memories.add("agent", "ana", candidate())
    again = memories.add("agent", "ana", candidate("PREFERS TEA"))
    assert rollback_before_reset, "the constraint's rollback did not take the forced branch"
    assert first.created and not again.created
    assert again.record.id == first.record.id
    stored = memories.find(agent_id="agent", user_id="ana").records
    assert [r.id for r in stored] == [first.record.id]


def test_concurrent_adds_of_one_memory_store_it_once(
    memories: Neo4jMemoryRecordRepository, rollback_before_reset: list[BaseException]
) -> None:
    barrier = threading.Barrier(8)
    results: list[Any] = [None] * 8
    errors: list[BaseException] = []

    def add(i: int) -> None:
        barrier.wait()
        try:
            results[i] = memories.add("agent", "ana", candidate())
        except BaseException as exc:  # reported below, with the type the user would see
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert sum(r.created for r in results) == 1
    assert len({r.record.id for r in results}) == 1
    assert rollback_before_reset
    stored = memories.find(agent_id="agent", user_id="ana", status=MemoryStatus.PENDING)
    assert len(stored.records) == 1


def test_window_adds_from_threads_lose_nothing_on_that_branch(
    server: ServerInfo, rollback_before_reset: list[BaseException]
) -> None:
    suffix = unique_suffix()
    repo = Neo4jChatMemoryRepository(
        server.extra["driver"],
        **{"session_label": f"S_{suffix}", "message_label": f"Msg_{suffix}"},
    )
    memory = MessageWindowChatMemory(repo, max_messages=1000)
    cid = f"c-{suffix}"

    def writer(w: int) -> None:  # a system message in every add: each is a window edit
        for i in range(10):
            memory.add(cid, [SystemMessage("policy"), UserMessage(f"{w}-{i}")])

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    stored = repo.find_by_conversation_id(cid)
    assert [m.text for m in stored if isinstance(m, SystemMessage)] == ["policy"]
    texts = sorted(m.text or "" for m in stored if isinstance(m, UserMessage))
    assert texts == sorted(f"{w}-{i}" for w in range(8) for i in range(10))
    repo.delete_by_conversation_id(cid)
