"""The issue's three worked examples, end to end on every record store, with a scripted
model: user message in -> pending record with the stated type and confidence -> approval
through the REST API -> injection into the next conversation's system prompt; and the
7-day expiry with a test clock for a memory nobody reviewed."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from chatmem.core import (
    CONVERSATION_ID,
    InMemoryChatMemoryRepository,
    Message,
    MessageChatMemoryAdvisor,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from chatmem.core.longterm import (
    USER_ID,
    BaseMemoryRecordRepository,
    LlmExtractor,
    LongTermMemory,
    LongTermMemoryAdvisor,
)
from chatmem.core.longterm.api import api_key_auth, create_app

from .conftest import TestClock

KEY = "test-key-0123456789"
EXAMPLES = {
    "I prefer Python code examples over pseudocode.": (
        "preference",
        "The user prefers Python code examples over pseudocode.",
        0.90,
    ),
    "I'm the CTO of StartupCorp and we're building a SaaS platform.": (
        "fact",
        "The user is the CTO of StartupCorp and is building a SaaS platform.",
        0.95,
    ),
    "We launch our product next month, so I need everything ready fast.": (
        "context",
        "The user has a product launch next month and needs everything ready fast.",
        0.85,
    ),
}


def scripted_model(prompt: str) -> str:
    """The extraction model: answers each worked example per the JSON contract."""
    message = prompt.rsplit("Message: ", 1)[1]
    if message not in EXAMPLES:
        return '{"memories": []}'
    kind, content, confidence = EXAMPLES[message]
    return json.dumps({"memories": [{"type": kind, "content": content, "confidence": confidence}]})


def test_worked_examples_end_to_end(
    make_records: Callable[..., BaseMemoryRecordRepository], clock: TestClock
) -> None:
    records = make_records()
    long_term = LongTermMemory(
        records, agent_id="assistant", extractor=LlmExtractor(scripted_model)
    )
    chats = MessageWindowChatMemory(InMemoryChatMemoryRepository())
    chat_advisor = MessageChatMemoryAdvisor(chats)
    memory_advisor = LongTermMemoryAdvisor(long_term)
    advised_prompts: list[list[object]] = []

    def agent(prompt: list[Message], context: dict[str, str]) -> str:
        # Long-term memory goes in last, next to the model: injected, never stored.
        sent = memory_advisor.before(chat_advisor.before(prompt, context), context)
        advised_prompts.append(sent)
        reply = "Noted."
        chat_advisor.after(reply, context)
        return reply

    system = SystemMessage("You are a helpful engineering assistant.")
    for i, text in enumerate(EXAMPLES):
        agent([system, UserMessage(text)], {USER_ID: "ana", CONVERSATION_ID: f"day-1-{i}"})
    assert long_term.flush(120)

    pending = records.find(user_id="ana", status="pending").records
    by_content = {r.content: r for r in pending}
    assert {(r.memory_type.value, r.content, r.confidence) for r in pending} == set(
        EXAMPLES.values()
    )
    assert all(r.conversation_id and r.conversation_id.startswith("day-1-") for r in pending)
    # Pending memories are never injected.
    assert all("CTO" not in (p[0].text or "") for p in advised_prompts)  # type: ignore[attr-defined]

    # A reviewer approves two through the REST API and leaves the third unreviewed.
    client = TestClient(create_app(records, auth=api_key_auth(KEY)))
    assert client.get("/api/memories", params={"user_id": "ana"}).status_code == 401
    headers = {"X-API-Key": KEY}
    listed = client.get(
        "/api/memories", params={"user_id": "ana", "status": "pending"}, headers=headers
    ).json()
    assert {item["content"] for item in listed["items"]} == set(by_content)
    to_approve = [
        by_content[EXAMPLES["I prefer Python code examples over pseudocode."][1]],
        by_content[EXAMPLES["I'm the CTO of StartupCorp and we're building a SaaS platform."][1]],
    ]
    for r in to_approve:
        response = client.post(
            f"/api/memories/{r.id}/approve", json={"reviewer": "rita"}, headers=headers
        )
        assert response.status_code == 200 and response.json()["status"] == "approved"

    # Next conversation: the approved memories are in the system prompt, grouped by type.
    clock.advance(timedelta(days=1))
    agent([system, UserMessage("Hi again!")], {USER_ID: "ana", CONVERSATION_ID: "day-2"})
    injected = advised_prompts[-1][0]
    assert isinstance(injected, SystemMessage) and injected.text is not None
    assert injected.text.startswith("You are a helpful engineering assistant.\n\n")
    assert (
        "Preferences:\n- The user prefers Python code examples over pseudocode.\n"
        "Facts:\n- The user is the CTO of StartupCorp and is building a SaaS platform."
    ) in injected.text
    assert "launch" not in injected.text  # still pending
    # ... and the chat store never saw them.
    stored = chats.get("day-2")
    assert [m.text for m in stored] == ["Hi again!", "Noted."]

    # Seven days after creation the unreviewed one expires as rejected.
    launch = by_content[
        EXAMPLES["We launch our product next month, so I need everything ready fast."][1]
    ]
    clock.set(launch.created_at + timedelta(days=7) - timedelta(microseconds=1))
    assert client.get(f"/api/memories/{launch.id}", headers=headers).json()["status"] == "pending"
    clock.set(launch.created_at + timedelta(days=7))
    after = client.get(f"/api/memories/{launch.id}", headers=headers).json()
    assert (after["status"], after["reason"]) == ("rejected", "expired")
    late = client.post(f"/api/memories/{launch.id}/approve", headers=headers)
    assert late.status_code == 409
    assert client.post("/api/memories/expire", headers=headers).json() == {"expired": 1}
    agent([system, UserMessage("And now?")], {USER_ID: "ana", CONVERSATION_ID: "day-9"})
    assert "launch" not in (advised_prompts[-1][0].text or "")  # type: ignore[attr-defined]
    assert "CTO of StartupCorp" in (advised_prompts[-1][0].text or "")  # type: ignore[attr-defined]
    stats = long_term.analyser.stats  # type: ignore[union-attr]
    assert (stats.failed, stats.stored) == (0, 3)
    long_term.close()


@pytest.mark.backend("memory")
def test_the_rule_extractor_reproduces_the_examples_offline(clock: TestClock) -> None:
    from chatmem.core.longterm import InMemoryMemoryRecordRepository, RuleBasedExtractor

    records = InMemoryMemoryRecordRepository(clock=clock)
    memory = LongTermMemory(records, agent_id="assistant", extractor=RuleBasedExtractor())
    for text in EXAMPLES:
        memory.observe("ana", text)
    assert memory.flush(60)
    got = {(r.memory_type.value, r.confidence) for r in records.find(user_id="ana").records}
    assert got == {("preference", 0.90), ("fact", 0.95), ("context", 0.85)}
    memory.close()


KOREAN = {
    "코드 예시는 의사코드보다 Python으로 받는 것을 선호합니다.": ("preference", 0.90),
    "저는 StartupCorp의 CTO이고 SaaS 플랫폼을 구축하고 있습니다.": ("fact", 0.95),
    "다음 달에 제품을 출시할 예정이라 빠르게 모든 것을 준비해야 합니다.": ("context", 0.85),
}


def test_korean_examples_offline_end_to_end(
    make_records: Callable[..., BaseMemoryRecordRepository], clock: TestClock
) -> None:
    """The Korean reference examples with no model at all: the rule extractor stores them
    as Korean third-person notes on every store, and an approved one is injected."""
    from chatmem.core.longterm import RuleBasedExtractor

    records = make_records()
    long_term = LongTermMemory(records, agent_id="assistant", extractor=RuleBasedExtractor())
    for i, text in enumerate(KOREAN):
        assert long_term.observe("min", text, conversation_id=f"day-1-{i}", message_position=0)
    assert long_term.flush(120)
    pending = records.find(user_id="min", status="pending").records
    assert {(r.memory_type.value, r.confidence) for r in pending} == set(KOREAN.values())
    assert all(r.content.startswith("사용자") and r.content.endswith(".") for r in pending)
    fact = next(r for r in pending if r.memory_type.value == "fact")
    assert fact.content == "사용자는 StartupCorp의 CTO이고 SaaS 플랫폼을 구축하고 있음."
    records.approve(fact.id, reviewer="rita")
    advisor = LongTermMemoryAdvisor(long_term)
    sent = advisor.before(
        [SystemMessage("도움이 되는 어시스턴트입니다."), UserMessage("안녕하세요")],
        {USER_ID: "min"},
    )
    assert isinstance(sent[0], SystemMessage) and fact.content in (sent[0].text or "")
    assert "출시" not in (sent[0].text or "")  # still pending
    long_term.close()
