"""Background analysis and injection on the in-memory store: the worker stores pending
candidates without slowing the turn, failures are counted and logged and never lose the
turn, a full queue drops instead of blocking, and only approved memories are injected."""

from __future__ import annotations

import logging
import threading

import pytest

from chatmem.core import (
    CONVERSATION_ID,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    SystemMessage,
    UserMessage,
)
from chatmem.core.longterm import (
    USER_ID,
    InMemoryMemoryRecordRepository,
    LongTermChatTurn,
    LongTermMemory,
    LongTermMemoryAdvisor,
    MemoryCandidate,
    MemoryStatus,
    MemoryType,
    RuleBasedExtractor,
)

from .conftest import TestClock

pytestmark = pytest.mark.backend("memory")


class Boom:
    """An extractor that fails on messages containing "boom"."""

    def extract(self, text: str) -> list[MemoryCandidate]:
        if "boom" in text:
            raise RuntimeError("model down")
        return RuleBasedExtractor().extract(text)


class Gate:
    """An extractor that blocks until released (to fill the queue)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def extract(self, text: str) -> list[MemoryCandidate]:
        self.release.wait(60)
        return []


def test_analyser_stores_pending_candidates_and_dedups(clock: TestClock) -> None:
    records = InMemoryMemoryRecordRepository(clock=clock)
    memory = LongTermMemory(records, agent_id="helper", extractor=RuleBasedExtractor())
    assert memory.observe("ana", "I prefer Python code examples over pseudocode.")
    assert memory.observe("ana", "i prefer python code examples over pseudocode")
    assert memory.observe("ana", "What time is it?")
    assert memory.flush(60)
    stored = records.find(user_id="ana").records
    assert [(r.memory_type.value, r.status, r.confidence) for r in stored] == [
        ("preference", MemoryStatus.PENDING, 0.90)
    ]
    stats = memory.analyser.stats  # type: ignore[union-attr]
    assert (stats.submitted, stats.processed, stats.stored, stats.duplicates) == (3, 3, 1, 1)
    memory.close()


def test_failures_are_logged_and_counted_and_the_worker_goes_on(
    clock: TestClock, caplog: pytest.LogCaptureFixture
) -> None:
    records = InMemoryMemoryRecordRepository(clock=clock)
    memory = LongTermMemory(records, agent_id="helper", extractor=Boom())
    advisor = LongTermMemoryAdvisor(memory)
    with caplog.at_level(logging.ERROR, logger="chatmem.longterm"):
        sent = advisor.before([UserMessage("boom")], {USER_ID: "ana"})
        assert sent == [UserMessage("boom")]  # the turn goes on
        memory.observe("ana", "I work at Acme as a data engineer.")
        assert memory.flush(60)
    stats = memory.analyser.stats  # type: ignore[union-attr]
    assert (stats.failed, stats.stored) == (1, 1)
    assert "analysis failed" in caplog.text and "model down" in caplog.text
    memory.close()


def test_a_full_queue_drops_instead_of_blocking(clock: TestClock) -> None:
    records = InMemoryMemoryRecordRepository(clock=clock)
    gate = Gate()
    memory = LongTermMemory(records, agent_id="helper", extractor=gate, queue_size=2)
    results = [memory.observe("ana", f"message {i}") for i in range(6)]
    assert results.count(False) >= 3  # one may be taken by the worker, two queued
    stats = memory.analyser.stats  # type: ignore[union-attr]
    assert stats.dropped == results.count(False)
    assert memory.flush(0.05) is False  # still blocked: flush times out, never hangs
    gate.release.set()
    assert memory.flush(60)
    assert stats.processed == results.count(True)
    memory.close()
    assert memory.observe("ana", "after close") is False


def test_switched_off_agent_neither_analyses_nor_injects(clock: TestClock) -> None:
    records = InMemoryMemoryRecordRepository(clock=clock)
    rid = records.add(
        "helper",
        "ana",
        MemoryCandidate(memory_type="fact", content="The user is a CTO.", confidence=0.9),
    ).record.id  # type: ignore[arg-type]
    records.approve(rid)
    off = LongTermMemory(records, agent_id="helper", extractor=RuleBasedExtractor(), enabled=False)
    prompt = [UserMessage("I prefer short answers.")]
    assert LongTermMemoryAdvisor(off).before(prompt, {USER_ID: "ana"}) == prompt
    assert off.flush(60)
    assert len(records.find().records) == 1


def test_advisor_injects_only_approved_memories(clock: TestClock) -> None:
    records = InMemoryMemoryRecordRepository(clock=clock)

    def add(text: str, agent: str = "helper") -> str:
        candidate = MemoryCandidate(memory_type=MemoryType.FACT, content=text, confidence=0.9)
        return records.add(agent, "ana", candidate).record.id

    records.approve(add("The user is a CTO."))
    records.reject(add("The user hates cats."))
    add("The user is pending.")
    records.approve(add("Other agent's.", agent="other-agent"))
    memory = LongTermMemory(records, agent_id="helper")
    advisor = LongTermMemoryAdvisor(memory)
    seen: list[list[object]] = []

    @advisor.wrap
    def model(messages: list[object]) -> str:
        seen.append(messages)
        return "ok"

    model(
        [SystemMessage("Be brief."), UserMessage("hi")],
        context={USER_ID: "ana", CONVERSATION_ID: "c1"},
    )
    system = seen[0][0]
    assert isinstance(system, SystemMessage) and system.text is not None
    assert system.text.startswith("Be brief.\n\n") and "- The user is a CTO." in system.text
    for absent in ("hates cats", "pending", "Other agent"):
        assert absent not in system.text
    with pytest.raises(InvalidArgumentError):
        advisor.before([UserMessage("hi")], {})


def test_long_term_chat_turn_injects_but_never_stores_the_memories(clock: TestClock) -> None:
    records = InMemoryMemoryRecordRepository(clock=clock)
    rid = records.add(
        "helper",
        "ana",
        MemoryCandidate(
            memory_type="preference", content="The user prefers bullets.", confidence=0.9
        ),
    ).record.id  # type: ignore[arg-type]
    records.approve(rid)
    chats = InMemoryChatMemoryRepository()
    memory = LongTermMemory(records, agent_id="helper", extractor=RuleBasedExtractor())
    with LongTermChatTurn(chats, "conv-1", long_term=memory, user_id="ana") as turn:
        turn.append(UserMessage("I work at Acme as a data engineer."))
        prompt = turn.prompt
        assert isinstance(prompt[0], SystemMessage) and "prefers bullets" in (prompt[0].text or "")
    assert chats.find_by_conversation_id("conv-1") == [
        UserMessage("I work at Acme as a data engineer.")
    ]
    assert memory.flush(60)
    pending = records.find(user_id="ana", status="pending").records
    assert [(r.content, r.conversation_id, r.message_position) for r in pending] == [
        ("The user works at Acme as a data engineer.", "conv-1", 0)
    ]
    memory.close()


def test_many_threads_submitting_lose_nothing(clock: TestClock) -> None:
    records = InMemoryMemoryRecordRepository(clock=clock)
    memory = LongTermMemory(records, agent_id="helper", extractor=RuleBasedExtractor())

    def chat(t: int) -> None:
        for i in range(25):
            assert memory.observe(f"user-{t}", f"I work at Company{i} as an engineer.")

    threads = [threading.Thread(target=chat, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert memory.flush(120)
    stats = memory.analyser.stats  # type: ignore[union-attr]
    assert (stats.submitted, stats.processed, stats.stored, stats.failed) == (100, 100, 100, 0)
    for t in range(4):
        assert len(records.find(user_id=f"user-{t}", limit=100).records) == 25
    memory.close()
