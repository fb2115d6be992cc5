"""The review API's functions for volume on every record store: text and confidence filters
(Korean and English) over bounded scans that page without skipping or repeating, bulk
decisions validated before any write, and the source conversation beside a memory."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from chatmem.core import (
    AssistantMessage,
    AsyncInMemoryChatMemoryRepository,
    InMemoryChatMemoryRepository,
    UserMessage,
)
from chatmem.core.longterm import (
    AgentSettings,
    BaseMemoryRecordRepository,
    LongTermMemory,
    MemoryCandidate,
    MemoryType,
    RuleBasedExtractor,
    get_settings,
)
from chatmem.core.longterm.api import memory_router

from .conftest import TestClock, api_client

Make = Callable[..., BaseMemoryRecordRepository]
REFRESH = timedelta(seconds=0.2)

SEED = [
    ("ana", "preference", "The user prefers Python code examples over pseudocode.", 0.9),
    ("ana", "fact", "The user is the CTO of StartupCorp.", 0.95),
    ("ana", "context", "The user launches a product next month.", 0.85),
    ("min", "preference", "사용자는 의사코드보다 Python 코드 예시를 선호함.", 0.9),
    ("min", "fact", "사용자는 SaaS 플랫폼을 구축 중인 StartupCorp의 CTO임.", 0.95),
    ("min", "context", "사용자에게 다음 달 제품 출시 마감일이 있음.", 0.6),
    ("bob", "fact", "The user is a designer.", 0.7),
]


def seeded(records: BaseMemoryRecordRepository, clock: TestClock) -> dict[str, str]:
    """The SEED records, one second apart (so listing order is SEED order)."""
    ids = {}
    for index, (user, kind, text, confidence) in enumerate(SEED):
        clock.advance(timedelta(seconds=1))
        candidate = MemoryCandidate(
            memory_type=MemoryType(kind), content=text, confidence=confidence
        )
        ids[text] = records.add(
            "assistant", user, candidate, conversation_id=f"conv-{user}", message_position=index
        ).record.id
    return ids


def client_for(records: BaseMemoryRecordRepository, **options: object) -> TestClient:
    def build(store: object) -> FastAPI:
        app = FastAPI()
        app.include_router(memory_router(store, **options), prefix="/api")  # type: ignore[arg-type]
        return app

    client: TestClient = api_client(records, build)
    return client


def everything(client: TestClient, **params: object) -> tuple[list[str], int]:
    """Every item of a filtered listing, following cursors; and how many requests it took."""
    items: list[str] = []
    cursor = None
    requests = 0
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        body = client.get("/api/memories", params=query).json()
        requests += 1
        items += [i["content"] for i in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            return items, requests


def test_text_and_confidence_filters_in_both_languages(
    make_records: Make, clock: TestClock
) -> None:
    records = make_records()
    seeded(records, clock)
    client = client_for(records)
    assert everything(client, q="python")[0] == [SEED[0][2], SEED[3][2]]
    assert everything(client, q="  STARTUPCORP ")[0] == [SEED[1][2], SEED[4][2]]
    assert everything(client, q="출시 마감일")[0] == [SEED[5][2]]
    assert everything(client, q="startupcorp", user_id="min")[0] == [SEED[4][2]]
    assert everything(client, min_confidence=0.9)[0] == [s[2] for s in SEED if s[3] >= 0.9]
    assert everything(client, max_confidence=0.7, type="fact")[0] == [SEED[6][2]]
    assert everything(client, q="nothing like this")[0] == []
    page = client.get("/api/memories", params={"q": "the user", "limit": 2}).json()
    assert [i["content"] for i in page["items"]] == [SEED[0][2], SEED[1][2]]
    assert page["scanned"] == 2 and page["next_cursor"] is not None


def test_a_bounded_scan_pages_without_skipping_or_repeating(
    make_records: Make, clock: TestClock
) -> None:
    records = make_records()
    seeded(records, clock)
    client = client_for(records, scan_limit=2)
    found, requests = everything(client, q="startupcorp", limit=1)
    assert found == [SEED[1][2], SEED[4][2]]
    assert requests >= 3  # 7 records read 2 at a time: short pages carry a cursor on
    found, _ = everything(client, min_confidence=0.8, limit=3)
    assert found == [s[2] for s in SEED if s[3] >= 0.8]


@pytest.mark.parametrize(
    ("params", "argument"),
    [
        ({"min_confidence": 1.5}, "min_confidence"),
        ({"max_confidence": -0.1}, "max_confidence"),
        ({"min_confidence": 0.9, "max_confidence": 0.5}, "min_confidence"),
        ({"q": "x" * 201}, "q"),
    ],
)
def test_bad_filters_name_their_argument(
    make_records: Make, params: dict[str, object], argument: str
) -> None:
    response = client_for(make_records()).get("/api/memories", params=params)
    assert response.status_code == 422 and response.json()["detail"]["argument"] == argument


def test_bulk_decisions(make_records: Make, clock: TestClock) -> None:
    records = make_records()
    ids = seeded(records, clock)
    client = client_for(records)
    first, second, third = ids[SEED[0][2]], ids[SEED[1][2]], ids[SEED[2][2]]
    assert client.post(f"/api/memories/{second}/reject").status_code == 200
    response = client.post(
        "/api/memories/bulk",
        json={"action": "approve", "ids": [first, second, third], "reviewer": "rita"},
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(r["id"], r.get("status"), r.get("error")) for r in results] == [
        (first, "approved", None),
        (second, None, 409),
        (third, "approved", None),
    ]
    assert results[0]["record"]["reviewer"] == "rita"
    assert records.get(first).status.value == "approved"  # type: ignore[union-attr]
    gone = client.post("/api/memories/bulk", json={"action": "delete", "ids": [first]}).json()
    assert gone["results"] == [{"id": first, "deleted": True}]
    again = client.post("/api/memories/bulk", json={"action": "delete", "ids": [first]}).json()
    assert again["results"][0]["error"] == 404


@pytest.mark.parametrize(
    ("body", "argument"),
    [
        ({"action": "approve", "ids": []}, "ids"),
        ({"action": "archive", "ids": ["x"]}, "action"),
        ({"action": "reject", "ids": "all"}, "ids"),
        (
            {"action": "delete", "ids": ["00000000-0000-4000-8000-000000000000"], "reason": "r"},
            "reviewer",
        ),
        ({"action": "approve", "ids": ["x"], "admin": True}, "body"),
        ({"action": "approve", "ids": ["x"] * 501}, "ids"),
    ],
)
def test_bad_bulk_requests_touch_nothing(
    make_records: Make, clock: TestClock, body: dict[str, object], argument: str
) -> None:
    records = make_records()
    ids = seeded(records, clock)
    response = client_for(records).post("/api/memories/bulk", json=body)
    assert response.status_code == 422 and response.json()["detail"]["argument"] == argument
    assert all(records.get(rid).status.value == "pending" for rid in ids.values())  # type: ignore[union-attr]


def test_a_bad_id_anywhere_in_a_bulk_request_touches_nothing(
    make_records: Make, clock: TestClock
) -> None:
    records = make_records()
    ids = list(seeded(records, clock).values())
    response = client_for(records).post(
        "/api/memories/bulk", json={"action": "approve", "ids": [ids[0], ids[1], "bad id"]}
    )
    assert response.status_code == 422 and response.json()["detail"]["argument"] == "ids[2]"
    assert all(records.get(rid).status.value == "pending" for rid in ids)  # type: ignore[union-attr]


@pytest.mark.parametrize("chat_twin", ["sync", "async"])
def test_source_conversation_beside_a_memory(
    make_records: Make, clock: TestClock, chat_twin: str
) -> None:
    """The chat store is read on the thread pool when sync and on the loop when async
    (``chatmem serve`` opens an async one)."""
    records = make_records()
    chat: InMemoryChatMemoryRepository | AsyncInMemoryChatMemoryRepository
    chat = (
        InMemoryChatMemoryRepository()
        if chat_twin == "sync"
        else AsyncInMemoryChatMemoryRepository()
    )
    turns = [
        UserMessage(text=f"user says {i}") if i % 2 == 0 else AssistantMessage(text=f"reply {i}")
        for i in range(12)
    ]

    def save(messages: list[UserMessage | AssistantMessage]) -> None:
        done = chat.save_all("conv-ana", messages)
        if asyncio.iscoroutine(done):
            asyncio.run(done)

    save(turns)
    candidate = MemoryCandidate(
        memory_type=MemoryType.FACT, content="The user is a CTO.", confidence=0.9
    )
    rid = records.add(
        "assistant", "ana", candidate, conversation_id="conv-ana", message_position=6
    ).record.id
    loose = records.add(
        "assistant",
        "ana",
        MemoryCandidate(memory_type=MemoryType.FACT, content="No source.", confidence=0.9),
    ).record.id
    client = client_for(records, chat=chat)
    body = client.get(f"/api/memories/{rid}/context", params={"around": 2}).json()
    assert (body["conversation_id"], body["source"], body["total"]) == ("conv-ana", 6, 12)
    assert [(m["index"], m["text"], m["is_source"]) for m in body["messages"]] == [
        (4, "user says 4", False),
        (5, "reply 5", False),
        (6, "user says 6", True),
        (7, "reply 7", False),
        (8, "user says 8", False),
    ]
    save(turns[:3])  # replaced: the source is gone
    body = client.get(f"/api/memories/{rid}/context", params={"around": 1}).json()
    assert body["source"] is None and [m["text"] for m in body["messages"]] == [
        "user says 0",
        "reply 1",
        "user says 2",
    ]
    assert client.get(f"/api/memories/{loose}/context").status_code == 404
    assert client.get(f"/api/memories/{rid}/context", params={"around": 99}).status_code == 422
    no_chat = client_for(records).get(f"/api/memories/{rid}/context")
    assert no_chat.status_code == 404 and "chat" in no_chat.json()["detail"]


def test_agent_settings_through_the_api(make_records: Make) -> None:
    records = make_records()
    client = client_for(records)
    week = 7 * 24 * 3600
    assert client.get("/api/agents/helper/settings").json() == {
        "agent_id": "helper",
        "enabled": True,
        "pending_ttl_seconds": week,
    }
    off = client.put("/api/agents/helper/settings", json={"enabled": False})
    assert off.status_code == 200 and off.json()["enabled"] is False
    two_days = client.put("/api/agents/helper/settings", json={"pending_ttl_seconds": 172800})
    assert two_days.json() == {
        "agent_id": "helper",
        "enabled": False,
        "pending_ttl_seconds": 172800,
    }
    assert get_settings(records, "helper") == AgentSettings(
        enabled=False, pending_ttl=timedelta(days=2)
    )
    for body, argument in (
        ({"enabled": "no"}, "enabled"),
        ({"pending_ttl_seconds": 0}, "pending_ttl"),
        ({"pending_ttl_seconds": "7"}, "pending_ttl_seconds"),
        ({"enabled": True, "colour": "red"}, "body"),
        ({}, "body"),
    ):
        refused = client.put("/api/agents/helper/settings", json=body)
        assert refused.status_code == 422 and refused.json()["detail"]["argument"] == argument
    too_long = client.get(f"/api/agents/{'a' * 2000}/settings")
    assert too_long.status_code == 422 and too_long.json()["detail"]["argument"] == "agent_id"
    assert get_settings(records, "helper").enabled is False


def test_a_settings_change_through_the_api_reaches_a_running_memory(make_records: Make) -> None:
    """Done when of issue 33: switched off through the REST API, a running LongTermMemory
    stops extracting and injecting within its refresh interval (0.2 s here, 5 s by default)."""
    records = make_records()
    approved = records.add(
        "helper",
        "ana",
        MemoryCandidate(
            memory_type=MemoryType.PREFERENCE, content="The user prefers tables.", confidence=0.9
        ),
    ).record
    records.approve(approved.id)
    running = make_records(shared_with=records)  # the agent's process
    memory = LongTermMemory(
        running, agent_id="helper", extractor=RuleBasedExtractor(), settings_refresh=REFRESH
    )
    try:
        assert memory.system_prompt_block("ana") is not None
        client = client_for(records)  # the reviewer's server
        assert client.put("/api/agents/helper/settings", json={"enabled": False}).status_code == 200
        start = time.monotonic()
        while memory.system_prompt_block("ana") is not None:
            assert time.monotonic() - start < 5, "the running memory still injects after 5 s"
            time.sleep(0.02)
        assert not memory.observe("ana", "I work at Acme Robotics.")
        assert memory.flush(10)
        assert [r.id for r in records.find(user_id="ana").records] == [approved.id]
    finally:
        memory.close()


def test_edit_then_approve_keeps_the_proposed_wording(make_records: Make, clock: TestClock) -> None:
    records = make_records()
    ids = seeded(records, clock)
    client = client_for(records)
    rid = ids[SEED[3][2]]
    edited = "사용자는 코드 예시를 Python으로 받는 것을 선호함."
    body = client.post(
        f"/api/memories/{rid}/approve", json={"content": edited, "reviewer": "rita"}
    ).json()
    assert (body["status"], body["content"], body["original_content"]) == (
        "approved",
        edited,
        SEED[3][2],
    )
    stored = records.get(rid)
    assert stored is not None and stored.content == edited
    assert stored.original_content == SEED[3][2]
    for content in ("   ", 7, "x" * 2001):
        refused = client.post(f"/api/memories/{ids[SEED[0][2]]}/approve", json={"content": content})
        assert refused.status_code == 422 and refused.json()["detail"]["argument"] == "content"
    assert records.get(ids[SEED[0][2]]).status.value == "pending"  # type: ignore[union-attr]
    late = client.post(f"/api/memories/{rid}/approve", json={"content": "again"})
    assert late.status_code == 409
    unedited = client.post(f"/api/memories/{ids[SEED[1][2]]}/approve").json()
    assert unedited["original_content"] is None and unedited["content"] == SEED[1][2]
