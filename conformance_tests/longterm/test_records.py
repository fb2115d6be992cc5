"""The record store contract, run on every record store (memory, SQLite, PostgreSQL,
MariaDB): dedup, filters and paging, reviews, expiry exact at the boundary, validation
before I/O, and the races (concurrent dedup stores once; one review wins)."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta

import pytest

from chatmem.core import InvalidArgumentError
from chatmem.core.longterm import (
    DEFAULT_PENDING_TTL,
    BaseMemoryRecordRepository,
    MemoryCandidate,
    MemoryNotFoundError,
    MemoryStateError,
    MemoryStatus,
    MemoryType,
)

from .conftest import TestClock

PREF = MemoryCandidate(
    memory_type=MemoryType.PREFERENCE,
    content="The user prefers Python code examples over pseudocode.",
    confidence=0.90,
)
FACT = MemoryCandidate(
    memory_type=MemoryType.FACT,
    content="The user is the CTO of StartupCorp and is building a SaaS platform.",
    confidence=0.95,
)
CONTEXT = MemoryCandidate(
    memory_type=MemoryType.CONTEXT,
    content="The user has a product launch next month and needs everything ready fast.",
    confidence=0.85,
)
MICRO = timedelta(microseconds=1)


def test_add_stores_a_pending_record_expiring_in_seven_days(
    records: BaseMemoryRecordRepository, clock: TestClock
) -> None:
    result = records.add("agent", "ana", PREF, conversation_id="c-1", message_position=4)
    r = result.record
    assert result.created
    assert (r.agent_id, r.user_id, r.memory_type, r.content) == (
        "agent",
        "ana",
        MemoryType.PREFERENCE,
        PREF.content,
    )
    assert r.confidence == 0.90 and r.status is MemoryStatus.PENDING
    assert r.created_at == clock.now and r.expires_at == clock.now + timedelta(days=7)
    assert (r.conversation_id, r.message_position) == ("c-1", 4)
    assert records.get(r.id) == r


def test_types_and_confidences_round_trip_exactly(records: BaseMemoryRecordRepository) -> None:
    for candidate in (PREF, FACT, CONTEXT):
        stored = records.get(records.add("agent", "ana", candidate).record.id)
        assert stored is not None
        assert (stored.memory_type, stored.confidence) == (
            candidate.memory_type,
            candidate.confidence,
        )


def test_duplicate_of_normalised_content_is_stored_once(
    records: BaseMemoryRecordRepository,
) -> None:
    first = records.add("agent", "ana", PREF)
    variant = MemoryCandidate(
        memory_type=MemoryType.PREFERENCE,
        content="  the user PREFERS python code examples   over pseudocode  ",
        confidence=0.5,
    )
    again = records.add("agent", "ana", variant)
    assert not again.created and again.record.id == first.record.id
    assert again.record.confidence == 0.90  # the stored one, unchanged
    assert len(records.find(user_id="ana").records) == 1


def test_dedup_is_per_agent_and_user_and_exact_on_ids(
    records: BaseMemoryRecordRepository,
) -> None:
    ids = {
        records.add(agent, user, PREF).record.id
        for agent, user in [("agent", "ana"), ("agent", "Ana"), ("agent", "ana "), ("other", "ana")]
    }
    assert len(ids) == 4
    assert [r.user_id for r in records.find(agent_id="agent", user_id="Ana").records] == ["Ana"]


def test_a_reviewed_memory_is_not_proposed_again(records: BaseMemoryRecordRepository) -> None:
    approved = records.approve(records.add("agent", "ana", PREF).record.id)
    again = records.add("agent", "ana", PREF)
    assert not again.created and again.record.status is MemoryStatus.APPROVED
    assert again.record.id == approved.id
    rejected = records.reject(records.add("agent", "ana", FACT).record.id)
    assert records.add("agent", "ana", FACT).record.id == rejected.id


def test_delete_removes_and_frees_the_content(records: BaseMemoryRecordRepository) -> None:
    r = records.add("agent", "ana", PREF).record
    assert records.delete(r.id) is True
    assert records.get(r.id) is None
    assert records.delete(r.id) is False
    assert records.add("agent", "ana", PREF).created


def test_forget_user_deletes_every_memory_of_the_user_and_nothing_else(
    records: BaseMemoryRecordRepository,
) -> None:
    mine = [records.add("agent", "ana", c).record.id for c in (PREF, FACT, CONTEXT)]
    records.approve(mine[0])
    records.reject(mine[1])
    other_agent = records.add("helper", "ana", PREF).record.id
    bob = records.add("agent", "bob", PREF).record.id
    assert records.forget_user("ana", agent_id="agent") == 3
    assert [r.id for r in records.find(user_id="ana").records] == [other_agent]
    assert records.forget_user("ana") == 1
    assert records.find(user_id="ana").records == []
    assert records.forget_user("ana") == 0
    assert [r.id for r in records.find().records] == [bob]
    assert records.add("agent", "ana", PREF).created  # forgotten content may come again
    with pytest.raises(InvalidArgumentError, match="user_id"):
        records.forget_user("")
    with pytest.raises(InvalidArgumentError, match="agent_id"):
        records.forget_user("bob", agent_id="")
    assert [r.id for r in records.find(user_id="bob").records] == [bob]


def test_forget_user_pages_through_more_than_one_page(records: BaseMemoryRecordRepository) -> None:
    from chatmem.core.longterm import _rules

    many = _rules.MAX_PAGE_SIZE + 3
    for i in range(many):
        candidate = MemoryCandidate(
            memory_type=MemoryType.FACT, content=f"The user owns plant number {i}.", confidence=0.9
        )
        records.add("agent", "gardener", candidate)
    assert records.forget_user("gardener") == many
    assert records.find(user_id="gardener").records == []


def test_find_filters_by_user_agent_status_and_type(
    records: BaseMemoryRecordRepository,
) -> None:
    p = records.add("agent", "ana", PREF).record
    f = records.add("agent", "ana", FACT).record
    c = records.add("agent", "bob", CONTEXT).record
    records.add("other", "ana", CONTEXT)
    records.approve(f.id)
    records.reject(c.id)

    def ids(**filters: object) -> set[str]:
        return {r.id for r in records.find(**filters).records}  # type: ignore[arg-type]

    assert ids(agent_id="agent", user_id="ana") == {p.id, f.id}
    assert ids(agent_id="agent", status="pending") == {p.id}
    assert ids(status=MemoryStatus.APPROVED) == {f.id}
    assert ids(agent_id="agent", status="rejected") == {c.id}
    assert ids(agent_id="agent", memory_type="fact") == {f.id}
    assert ids(user_id="nobody") == set()


@pytest.mark.parametrize("size", [1, 2])
def test_small_pages_of_distinct_times_list_every_record(
    records: BaseMemoryRecordRepository, clock: TestClock, size: int
) -> None:
    """A page's cursor is its last record: the next page starts strictly after it (a store
    that read the cursor's own record again spent the page on it and ended the listing)."""
    made = []
    for i in range(5):
        clock.advance(timedelta(seconds=1))
        candidate = MemoryCandidate(
            memory_type=MemoryType.FACT, content=f"The user has {i} bikes.", confidence=0.5
        )
        made.append(records.add("agent", "ana", candidate).record.id)
    seen: list[str] = []
    cursor = None
    while True:
        page = records.find(limit=size, cursor=cursor)
        seen += [r.id for r in page.records]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == made


def test_paging_returns_every_record_once_oldest_first(
    records: BaseMemoryRecordRepository, clock: TestClock
) -> None:
    made = []
    for i in range(7):
        candidate = MemoryCandidate(
            memory_type=MemoryType.FACT, content=f"The user owns {i} cats.", confidence=0.5
        )
        made.append(records.add("agent", "ana", candidate).record.id)
        if i % 3 == 0:
            clock.advance(MICRO)  # some share a timestamp: ties are ordered by id
    seen: list[str] = []
    cursor = None
    while True:
        page = records.find(user_id="ana", limit=3, cursor=cursor)
        seen += [r.id for r in page.records]
        assert len(page.records) <= 3
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == sorted(made) and len(seen) == 7
    stamps = [records.get(i).created_at for i in seen]  # type: ignore[union-attr]
    assert stamps == sorted(stamps)


def test_approve_and_reject_record_the_review(
    records: BaseMemoryRecordRepository, clock: TestClock
) -> None:
    p = records.add("agent", "ana", PREF).record
    f = records.add("agent", "ana", FACT).record
    clock.advance(timedelta(hours=3))
    ok = records.approve(p.id, reviewer="rita", reason="useful")
    assert (ok.status, ok.reviewer, ok.reason, ok.reviewed_at) == (
        MemoryStatus.APPROVED,
        "rita",
        "useful",
        clock.now,
    )
    no = records.reject(f.id, reviewer="rita")
    assert no.status is MemoryStatus.REJECTED and records.get(f.id) == no  # archived, kept
    with pytest.raises(MemoryStateError) as err:
        records.approve(f.id)
    assert err.value.status is MemoryStatus.REJECTED
    with pytest.raises(MemoryStateError):
        records.reject(p.id)
    assert records.get(p.id) == ok


def test_unknown_ids(records: BaseMemoryRecordRepository) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    assert records.get(missing) is None
    assert records.delete(missing) is False
    with pytest.raises(MemoryNotFoundError):
        records.approve(missing)
    with pytest.raises(MemoryNotFoundError):
        records.reject(missing)


def test_expiry_is_exact_at_the_boundary(
    records: BaseMemoryRecordRepository, clock: TestClock
) -> None:
    start = clock.now
    early = records.add("agent", "ana", PREF).record
    late = records.add("agent", "ana", FACT).record
    deadline = start + DEFAULT_PENDING_TTL
    clock.set(deadline - MICRO)
    assert records.get(late.id).status is MemoryStatus.PENDING  # type: ignore[union-attr]
    assert records.expire_due() == 0
    assert records.approve(early.id).status is MemoryStatus.APPROVED  # one microsecond left
    clock.set(deadline)
    expired = records.get(late.id)
    assert expired is not None
    assert (expired.status, expired.reason, expired.reviewed_at) == (
        MemoryStatus.REJECTED,
        "expired",
        deadline,
    )
    assert records.find(status="pending").records == []
    assert [r.id for r in records.find(status="rejected").records] == [late.id]
    with pytest.raises(MemoryStateError):
        records.approve(late.id)
    assert records.expire_due() == 1
    assert records.expire_due() == 0
    clock.set(start)  # the sweep persisted it: no longer pending even before the deadline
    assert records.get(late.id).status is MemoryStatus.REJECTED  # type: ignore[union-attr]


def test_approved_memories_never_expire(
    records: BaseMemoryRecordRepository, clock: TestClock
) -> None:
    r = records.approve(records.add("agent", "ana", PREF).record.id)
    clock.advance(timedelta(days=3650))
    assert records.expire_due() == 0
    assert records.get(r.id) == r
    assert [x.id for x in records.find(user_id="ana", status="approved").records] == [r.id]


def test_pending_ttl_is_configurable(
    make_records: Callable[..., BaseMemoryRecordRepository], clock: TestClock
) -> None:
    repo = make_records(pending_ttl=timedelta(hours=1))
    r = repo.add("agent", "ana", PREF).record
    assert r.expires_at == clock.now + timedelta(hours=1)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda r: r.add(None, "u", PREF), "agent_id"),
        (lambda r: r.add("a", 42, PREF), "user_id"),
        (lambda r: r.add("a", "", PREF), "user_id"),
        (lambda r: r.add("a", "u" * 256, PREF), "user_id"),
        (lambda r: r.add("a", "u", "a memory"), "candidate"),
        (
            lambda r: r.add(
                "a", "u", MemoryCandidate(memory_type="opinion", content="x", confidence=0.5)
            ),
            "candidate.memory_type",
        ),
        (
            lambda r: r.add(
                "a", "u", MemoryCandidate(memory_type="fact", content="  ", confidence=0.5)
            ),
            "candidate.content",
        ),
        (
            lambda r: r.add(
                "a", "u", MemoryCandidate(memory_type="fact", content="a\x00b", confidence=0.5)
            ),
            "candidate.content",
        ),
        (
            lambda r: r.add(
                "a", "u", MemoryCandidate(memory_type="fact", content="x", confidence=1.5)
            ),
            "candidate.confidence",
        ),
        (
            lambda r: r.add(
                "a", "u", MemoryCandidate(memory_type="fact", content="x", confidence=math.nan)
            ),
            "candidate.confidence",
        ),
        (
            lambda r: r.add(
                "a", "u", MemoryCandidate(memory_type="fact", content="x", confidence=True)
            ),
            "candidate.confidence",
        ),
        (lambda r: r.add("a", "u", PREF, message_position=-1), "message_position"),
        (lambda r: r.get("1; DROP TABLE x"), "record_id"),
        (lambda r: r.approve({"$ne": None}), "record_id"),
        (lambda r: r.reject("00000000-0000-4000-8000-000000000000", reviewer=7), "reviewer"),
        (lambda r: r.find(status="maybe"), "status"),
        (lambda r: r.find(memory_type="opinion"), "memory_type"),
        (lambda r: r.find(limit=0), "limit"),
        (lambda r: r.find(cursor="garbage"), "cursor"),
    ],
)
def test_bad_arguments_are_rejected_before_any_io(
    records: BaseMemoryRecordRepository, call: Callable[..., object], argument: str
) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        call(records)
    assert err.value.argument == argument
    assert records.find().records == []


@pytest.mark.backend("sqlite", "postgres", "mariadb")
def test_schema_mode_never_leaves_a_missing_table_to_the_user(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    from chatmem.core import SchemaError

    repo = make_records(initialize_schema="never")
    with pytest.raises(SchemaError, match="chatmem memories schema"):
        repo.add("agent", "ana", PREF)
    repo.create_schema()  # type: ignore[attr-defined]
    assert repo.add("agent", "ana", PREF).created
    ddl = repo.schema_sql()  # type: ignore[attr-defined]
    assert ddl[0].startswith("CREATE TABLE") and any("UNIQUE" in s for s in ddl)


def test_approve_with_edited_content_keeps_the_proposed_wording(
    records: BaseMemoryRecordRepository, clock: TestClock
) -> None:
    p = records.add("agent", "ana", PREF).record
    clock.advance(timedelta(minutes=5))
    edited = "  The user prefers Python examples, with type hints.  "
    done = records.approve(p.id, reviewer="rita", content=edited)
    assert (done.status, done.content, done.original_content, done.reviewed_at) == (
        MemoryStatus.APPROVED,
        edited.strip(),
        PREF.content,
        clock.now,
    )
    assert records.get(p.id) == done
    assert [r.content for r in records.find(status="approved").records] == [edited.strip()]
    again = records.add("agent", "ana", PREF)  # the proposal again: still the same memory
    assert not again.created and again.record.id == p.id
    same = records.add("agent", "ana", FACT).record  # unchanged wording: nothing kept
    kept = records.approve(same.id, content=FACT.content)
    assert (kept.content, kept.original_content) == (FACT.content, None)
    assert records.get(p.id).original_content == PREF.content  # type: ignore[union-attr]
    assert records.delete(p.id) is True
    assert records.add("agent", "ana", PREF).created  # the dedup key went with the record


def test_approve_with_bad_content_changes_nothing(records: BaseMemoryRecordRepository) -> None:
    p = records.add("agent", "ana", PREF).record
    for bad in ("", "   ", 7, "x" * 2001, "nul\x00"):
        with pytest.raises(InvalidArgumentError) as err:
            records.approve(p.id, content=bad)  # type: ignore[arg-type]
        assert err.value.argument == "content"
    assert records.get(p.id) == p
    rejected = records.reject(records.add("agent", "ana", FACT).record.id)
    with pytest.raises(MemoryStateError):
        records.approve(rejected.id, content="Something else.")
    assert records.get(rejected.id) == rejected
    with pytest.raises(MemoryNotFoundError):
        records.approve("00000000-0000-4000-8000-000000000000", content="Anything.")


def test_find_by_text_and_min_confidence(
    records: BaseMemoryRecordRepository, clock: TestClock
) -> None:
    made = {}
    for content, confidence in [
        ("The user prefers PYTHON code.", 0.9),
        ("The user writes python daily.", 0.6),
        ("The user likes 100% test coverage_reports.", 0.95),
        ("The user lives in Zürich.", 0.85),
        ("The user uses Rust.", 0.5),
    ]:
        candidate = MemoryCandidate(
            memory_type=MemoryType.FACT, content=content, confidence=confidence
        )
        made[content] = records.add("agent", "ana", candidate).record.id
        clock.advance(MICRO)

    def found(**filters: object) -> list[str]:
        return [r.content for r in records.find(user_id="ana", **filters).records]  # type: ignore[arg-type]

    assert found(text="python") == [
        "The user prefers PYTHON code.",
        "The user writes python daily.",
    ]
    assert found(text="ZÜRICH") == ["The user lives in Zürich."]  # Unicode case folding
    assert found(text="100% test coverage_") == ["The user likes 100% test coverage_reports."]
    assert found(text="%") == ["The user likes 100% test coverage_reports."]  # no wildcards
    assert found(text="_") == ["The user likes 100% test coverage_reports."]
    assert found(text="*") == [] and found(text="nothing like this") == []
    assert found(min_confidence=0.9) == [
        "The user prefers PYTHON code.",
        "The user likes 100% test coverage_reports.",
    ]  # inclusive
    assert found(text="python", min_confidence=0.7) == ["The user prefers PYTHON code."]
    assert found(min_confidence=0.0) == list(made)
    paged: list[str] = []
    cursor = None
    while True:
        page = records.find(user_id="ana", min_confidence=0.8, limit=1, cursor=cursor)
        paged += [r.content for r in page.records]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert paged == found(min_confidence=0.8) and len(paged) == 3


BAD_FILTERS: list[tuple[str, dict[str, object]]] = [
    ("text", {"text": ""}),
    ("text", {"text": "   "}),
    ("text", {"text": 3}),
    ("text", {"text": "x" * 2001}),
    ("text", {"text": "a\x00"}),
    ("min_confidence", {"min_confidence": 1.5}),
    ("min_confidence", {"min_confidence": -0.1}),
    ("min_confidence", {"min_confidence": True}),
    ("min_confidence", {"min_confidence": "0.5"}),
    ("min_confidence", {"min_confidence": math.nan}),
]


def test_bad_find_filters_are_rejected(records: BaseMemoryRecordRepository) -> None:
    for argument, filters in BAD_FILTERS:
        with pytest.raises(InvalidArgumentError) as err:
            records.find(**filters)  # type: ignore[arg-type]
        assert err.value.argument == argument, filters
