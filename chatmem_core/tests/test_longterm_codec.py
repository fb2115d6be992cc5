"""The shared memory-record mapping: the exact fields and values every document store keeps
(a change here changes what Redis, MongoDB, Neo4j and Cassandra hold) and its round trip."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from chatmem.core.longterm import (
    RECORD_FIELDS,
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    record_from_fields,
    record_to_fields,
)

AT = datetime(2026, 12, 1, 6, 45, 26, 123456, tzinfo=timezone.utc)
AT_MICROS = 1_796_107_526_123_456


def _record(**changes: object) -> MemoryRecord:
    base: dict[str, object] = {
        "id": "r1",
        "agent_id": "agent",
        "user_id": "user é",
        "memory_type": MemoryType.PREFERENCE,
        "content": "The user prefers tea.",
        "confidence": 0.75,
        "status": MemoryStatus.PENDING,
        "created_at": AT,
        "expires_at": AT + timedelta(days=7),
        "reviewed_at": None,
        "reviewer": None,
        "reason": None,
        "conversation_id": None,
        "message_position": None,
    }
    base.update(changes)
    return MemoryRecord(**base)  # type: ignore[arg-type]


def test_fields_are_the_stored_names_values_and_order() -> None:
    fields = record_to_fields(_record(), "the key")
    assert tuple(fields) == RECORD_FIELDS
    assert fields == {
        "id": "r1",
        "agent_id": "agent",
        "user_id": "user é",
        "type": MemoryType.PREFERENCE.value,
        "content": "The user prefers tea.",
        "dedup_key": "the key",
        "confidence": 0.75,
        "status": "pending",
        "created_at": AT_MICROS,
        "expires_at": AT_MICROS + 7 * 86_400 * 1_000_000,
        "reviewed_at": None,
        "reviewer": None,
        "reason": None,
        "conversation_id": None,
        "message_position": None,
        "original_content": None,
    }


def test_round_trip_with_every_optional_field_set() -> None:
    record = _record(
        status=MemoryStatus.APPROVED,
        created_at=datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc),
        expires_at=None,
        reviewed_at=AT,
        reviewer="bob",
        reason="correct",
        conversation_id="c-1",
        message_position=3,
        original_content="The user likes tea.",
    )
    fields = record_to_fields(record, "k")
    assert fields["created_at"] == -1
    assert record_from_fields(fields) == record


def test_missing_optional_fields_read_as_none() -> None:
    """Neo4j drops null properties, and a store may hand back numbers as strings or floats."""
    fields = {k: v for k, v in record_to_fields(_record(), "k").items() if v is not None}
    fields["created_at"] = str(fields["created_at"])
    fields["confidence"] = "0.75"
    assert record_from_fields(fields) == _record()
