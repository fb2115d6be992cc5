"""The pure parts, without a store: lifecycle rules, extraction (rules and the LLM JSON
contract), dedup with embeddings, rendering, and the DDL every SQL dialect compiles."""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta, timezone

import pytest

from chatmem.core import InvalidArgumentError, SystemMessage, UserMessage
from chatmem.core.longterm import (
    Deduplicator,
    ExtractionError,
    LlmExtractor,
    MemoryCandidate,
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    RuleBasedExtractor,
    dedup_key,
    effective,
    inject,
    normalise,
    parse_extraction,
    render,
)

pytestmark = pytest.mark.backend("memory")
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def record(
    content: str, kind: str = "fact", status: str = "approved", conf: float = 0.9
) -> MemoryRecord:
    return MemoryRecord(
        id=f"id-{content}",
        agent_id="a",
        user_id="u",
        memory_type=MemoryType(kind),
        content=content,
        confidence=conf,
        status=MemoryStatus(status),
        created_at=T0,
        expires_at=T0 + timedelta(days=7),
    )


def test_normalise_and_key() -> None:
    assert normalise("  Prefers   PYTHON.  ") == normalise("prefers python") == "prefers python"
    assert normalise("ﬁle") == "file"  # NFKC
    assert dedup_key("a", "u", "X.") == dedup_key("a", "u", "x")
    assert dedup_key("a", "u", "x") != dedup_key("a", "U", "x")
    assert dedup_key("a", "u\x00x", "y") != dedup_key("a", "u", "x\x00y")


def test_effective_expires_exactly_at_the_deadline() -> None:
    r = record("x", status="pending")
    assert effective(r, T0 + timedelta(days=7) - timedelta(microseconds=1)) is r
    gone = effective(r, T0 + timedelta(days=7))
    assert (gone.status, gone.reason, gone.reviewed_at) == (
        MemoryStatus.REJECTED,
        "expired",
        T0 + timedelta(days=7),
    )
    approved = record("y")
    assert effective(approved, T0 + timedelta(days=999)) is approved


WORKED = [
    (
        "I prefer Python code examples over pseudocode.",
        MemoryType.PREFERENCE,
        "The user prefers Python code examples over pseudocode.",
        0.90,
    ),
    (
        "I'm the CTO of StartupCorp and we're building a SaaS platform.",
        MemoryType.FACT,
        "The user is the CTO of StartupCorp and the user's team is building a SaaS platform.",
        0.95,
    ),
    (
        "We launch our product next month, so I need everything ready fast.",
        MemoryType.CONTEXT,
        "The user's team launches their product next month, so the user needs everything "
        "ready fast.",
        0.85,
    ),
]


@pytest.mark.parametrize(("message", "kind", "content", "confidence"), WORKED)
def test_rule_extractor_on_the_worked_examples(
    message: str, kind: MemoryType, content: str, confidence: float
) -> None:
    assert RuleBasedExtractor().extract(message) == [
        MemoryCandidate(memory_type=kind, content=content, confidence=confidence)
    ]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Please keep answers short and use bullet points.", [MemoryType.PREFERENCE]),
        ("I\u2019d rather get the SQL first, then the explanation.", [MemoryType.PREFERENCE]),
        ("I like concise explanations with one example.", [MemoryType.PREFERENCE]),
        ("I work at Acme as a data engineer.", [MemoryType.FACT]),
        ("My name is Ana and I live in Lisbon.", [MemoryType.FACT]),
        ("I am a teacher at a primary school.", [MemoryType.FACT]),
        ("I'm preparing a board meeting this Friday.", [MemoryType.CONTEXT]),
        ("Our deadline is tomorrow at noon.", [MemoryType.CONTEXT]),
        (
            "I prefer short answers. I lead the data team at Globex. We ship next week.",
            [MemoryType.PREFERENCE, MemoryType.FACT, MemoryType.CONTEXT],
        ),
        ("What's the capital of France?", []),
        ("Can you prefer tabs in this file?", []),
        ("Thanks, that works.", []),
        ("", []),
    ],
)
def test_rule_extractor_on_real_phrasing(message: str, expected: list[MemoryType]) -> None:
    found = RuleBasedExtractor().extract(message)
    assert [c.memory_type for c in found] == expected
    assert all(c.content.startswith("The user") for c in found)


def test_llm_extractor_parses_the_contract_sync_and_async() -> None:
    answer = '{"memories": [{"type": "fact", "content": "The user is a CTO.", "confidence": 0.95}]}'
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return answer

    async def acomplete(prompt: str) -> str:
        return f"```json\n{answer}\n```"

    expected = [
        MemoryCandidate(memory_type=MemoryType.FACT, content="The user is a CTO.", confidence=0.95)
    ]
    assert LlmExtractor(complete).extract("I am a CTO") == expected
    assert "Message: I am a CTO" in prompts[0]
    assert LlmExtractor(acomplete).extract("I am a CTO") == expected
    assert asyncio.run(LlmExtractor(acomplete).aextract("x")) == expected
    assert asyncio.run(LlmExtractor(complete).aextract("x")) == expected


@pytest.mark.parametrize(
    "output",
    [
        "Sure! Here you go",
        "[]",
        '{"memories": [], "extra": 1}',
        '{"memories": {}}',
        '{"memories": [{"type": "fact", "content": "x"}]}',
        '{"memories": [{"type": "opinion", "content": "x", "confidence": 0.5}]}',
        '{"memories": [{"type": "fact", "content": "", "confidence": 0.5}]}',
        '{"memories": [{"type": "fact", "content": "x", "confidence": 1.2}]}',
        '{"memories": [{"type": "fact", "content": "x", "confidence": "high"}]}',
        '{"memories": [{"type": "fact", "content": "ok", "confidence": 0.5}, 3]}',
        'prefix {"memories": []}',
        None,
    ],
)
def test_malformed_model_output_is_a_typed_error(output: object) -> None:
    with pytest.raises(ExtractionError):
        parse_extraction(output)


def test_empty_answer_is_no_memories() -> None:
    assert parse_extraction('{"memories": []}') == []


def test_llm_extractor_validates_its_arguments() -> None:
    with pytest.raises(InvalidArgumentError):
        LlmExtractor("not callable")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        LlmExtractor(lambda p: p, prompt_template="no placeholder")


def test_dedup_by_text_and_by_embedding() -> None:
    existing = [record("The user prefers Python examples."), record("The user lives in Lisbon.")]
    cand = MemoryCandidate(
        memory_type=MemoryType.PREFERENCE,
        content="the user prefers python examples",
        confidence=0.5,
    )
    assert Deduplicator().duplicate_of(cand, existing) is existing[0]
    similar = MemoryCandidate(
        memory_type=MemoryType.PREFERENCE, content="Likes examples in Python", confidence=0.5
    )
    assert Deduplicator().duplicate_of(similar, existing) is None

    def embed(texts: list[str]) -> list[list[float]]:
        return [
            [1.0, 0.1] if "ython" in t else [1.0, -1.0] if "cats" in t else [0.0, 1.0]
            for t in texts
        ]

    assert Deduplicator(embed=embed).duplicate_of(similar, existing) is existing[0]
    assert Deduplicator(embed=embed, threshold=1.0).duplicate_of(similar, existing) is existing[0]
    other = MemoryCandidate(memory_type=MemoryType.FACT, content="Has two cats", confidence=0.5)
    assert Deduplicator(embed=embed).duplicate_of(other, existing) is None
    with pytest.raises(InvalidArgumentError):
        Deduplicator(threshold=1.5)
    with pytest.raises(InvalidArgumentError):
        Deduplicator(embed=lambda texts: [[1.0]]).duplicate_of(other, existing)


def test_render_groups_by_type_and_caps() -> None:
    records = [
        record("The user is in Lisbon.", "fact", conf=0.8),
        record("Launch next month.", "context"),
        record("Prefers bullets.", "preference"),
        record("The user is a CTO.", "fact", conf=0.95),
        record("Never injected.", "fact", status="pending"),
        record("Nor this.", "fact", status="rejected"),
    ]
    text = render(records)
    assert text is not None
    body = text.split("\n", 1)[1]
    assert body == (
        "Preferences:\n- Prefers bullets.\n"
        "Facts:\n- The user is a CTO.\n- The user is in Lisbon.\n"
        "Context:\n- Launch next month."
    )
    assert "Never" not in text and "Nor this" not in text
    capped = render(records, max_records=2)
    assert capped is not None and "Lisbon" not in capped and "Launch" not in capped
    short = render(records, max_chars=len("Prefers bullets.The user is a CTO."))
    assert short is not None and "Lisbon" not in short and "CTO" in short
    assert render(records, template="Known: {memories}").startswith("Known: Preferences:")  # type: ignore[union-attr]
    assert (
        render(records, template=lambda g: str(sorted(t.value for t in g)))
        == "['context', 'fact', 'preference']"
    )
    assert render([records[4]]) is None
    with pytest.raises(InvalidArgumentError):
        render(records, template="no placeholder")


def test_inject_adds_to_the_system_prompt_without_mutating() -> None:
    prompt = [SystemMessage("You are helpful."), UserMessage("hi")]
    out = inject(prompt, "MEM")
    assert out[0] == SystemMessage("You are helpful.\n\nMEM") and out[1] is prompt[1]
    assert prompt[0] == SystemMessage("You are helpful.")
    assert inject([UserMessage("hi")], "MEM") == [SystemMessage("MEM"), UserMessage("hi")]
    assert inject(prompt, None) == prompt


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mysql", "mariadb", "mssql", "oracle"])
def test_record_ddl_compiles_for_every_dialect(dialect: str) -> None:
    from chatmem.jdbc import memory_schema_sql

    sql = memory_schema_sql(dialect, table_name="team_memories")
    assert "CREATE TABLE team_memories" in sql
    assert "CREATE UNIQUE INDEX team_memories_dedup_uq" in sql
    with pytest.raises(InvalidArgumentError):
        memory_schema_sql(dialect, table_name="x; DROP TABLE y")


def test_confidence_nan_guard() -> None:
    with pytest.raises(ExtractionError):
        parse_extraction('{"memories": [{"type": "fact", "content": "x", "confidence": NaN}]}')
    assert math.isnan(float("nan"))
