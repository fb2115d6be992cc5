"""Analysis after the fact on every record store: stored conversations (Korean and English)
backfilled once in effect however often it runs, and shards that together cover every
conversation once."""

from __future__ import annotations

import pytest

from chatmem.core import (
    AssistantMessage,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    SystemMessage,
    UserMessage,
)
from chatmem.core.longterm import (
    BaseMemoryRecordRepository,
    MemoryCandidate,
    MemoryStatus,
    MemoryType,
    RuleBasedExtractor,
    backfill,
)

HISTORY = {
    "ko-1": [
        SystemMessage("친절하게 답하세요."),
        UserMessage("코드 예시는 의사코드보다 Python으로 받는 것을 선호합니다."),
        AssistantMessage("알겠습니다."),
        UserMessage("저는 StartupCorp의 CTO이고 SaaS 플랫폼을 구축하고 있습니다."),
    ],
    "en-1": [
        UserMessage("I specialize in Python and machine learning."),
        AssistantMessage("Noted."),
        UserMessage("What is the capital of France?"),
    ],
    "en-2": [UserMessage("Our team uses Agile methodology.")],
}


@pytest.fixture
def chat() -> InMemoryChatMemoryRepository:
    repo = InMemoryChatMemoryRepository()
    for cid, messages in HISTORY.items():
        repo.save_all(cid, messages)
    return repo


def test_a_backfill_stores_each_candidate_once_with_its_source(
    chat: InMemoryChatMemoryRepository, records: BaseMemoryRecordRepository
) -> None:
    seen: list[int] = []
    stats = backfill(
        chat,
        records,
        RuleBasedExtractor(),
        agent_id="helper",
        user_id="ana",
        progress=lambda s: seen.append(s.conversations),
    )
    assert (stats.conversations, stats.messages, stats.failed) == (3, 5, 0)
    assert seen == [1, 2, 3]
    stored = records.find(user_id="ana", agent_id="helper").records
    assert stats.stored == len(stored) == 4  # the question about France is not about her
    assert {r.status for r in stored} == {MemoryStatus.PENDING}
    by_source = {(r.conversation_id, r.message_position): r for r in stored}
    assert set(by_source) == {("ko-1", 1), ("ko-1", 3), ("en-1", 0), ("en-2", 0)}
    assert by_source[("ko-1", 1)].memory_type is MemoryType.PREFERENCE
    assert by_source[("ko-1", 3)].memory_type is MemoryType.FACT
    assert by_source[("ko-1", 3)].content.startswith("사용자는")
    again = backfill(chat, records, RuleBasedExtractor(), agent_id="helper", user_id="ana")
    assert (again.stored, again.duplicates) == (0, 4)
    assert len(records.find(user_id="ana").records) == 4


def test_shards_cover_every_conversation_once(
    chat: InMemoryChatMemoryRepository, records: BaseMemoryRecordRepository
) -> None:
    runs = [
        backfill(chat, records, RuleBasedExtractor(), agent_id="a", user_id="u", shard=(k, 3))
        for k in range(3)
    ]
    assert sum(r.conversations for r in runs) == 3 and sum(r.messages for r in runs) == 5
    assert sum(r.stored for r in runs) == len(records.find(user_id="u").records) == 4


def test_only_the_named_conversations(
    chat: InMemoryChatMemoryRepository, records: BaseMemoryRecordRepository
) -> None:
    stats = backfill(
        chat, records, RuleBasedExtractor(), agent_id="a", user_id="u", conversation_ids=["en-2"]
    )
    assert (stats.conversations, stats.stored) == (1, 1)
    assert [r.conversation_id for r in records.find(user_id="u").records] == ["en-2"]


def test_a_failing_extractor_is_counted_and_the_run_goes_on(
    chat: InMemoryChatMemoryRepository, records: BaseMemoryRecordRepository
) -> None:
    rules = RuleBasedExtractor()

    class Flaky:
        def extract(self, text: str) -> list[MemoryCandidate]:
            if "Agile" in text:
                raise RuntimeError("model outage")
            return rules.extract(text)

    stats = backfill(chat, records, Flaky(), agent_id="a", user_id="u")
    assert (stats.messages, stats.failed, stats.stored) == (5, 1, 3)
    healed = backfill(chat, records, RuleBasedExtractor(), agent_id="a", user_id="u")
    assert (healed.stored, healed.duplicates) == (1, 3)


@pytest.mark.parametrize(
    ("option", "value", "argument"),
    [
        ("agent_id", "", "agent_id"),
        ("user_id", None, "user_id"),
        ("shard", (2, 2), "shard"),
        ("shard", "1-2", "shard"),
        ("conversation_ids", "en-1", "conversation_ids"),
        ("conversation_ids", [""], "conversation_ids"),
    ],
)
def test_bad_arguments_are_rejected_before_any_io(
    chat: InMemoryChatMemoryRepository,
    records: BaseMemoryRecordRepository,
    option: str,
    value: object,
    argument: str,
) -> None:
    options: dict[str, object] = {"agent_id": "a", "user_id": "u", option: value}
    with pytest.raises(InvalidArgumentError) as caught:
        backfill(chat, records, RuleBasedExtractor(), **options)  # type: ignore[arg-type]
    assert caught.value.argument == argument
    assert records.find().records == []
