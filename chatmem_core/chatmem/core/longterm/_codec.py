"""One mapping between a memory record and the flat fields every document/row store keeps.

The Redis, MongoDB, Neo4j and Cassandra record stores hold the same fields under the same
names, timestamps as integer UTC microseconds since the epoch (exact, and comparable in any
store's index); each store wraps this mapping only where its layout truly differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from chatmem.core._codec import from_micros, to_micros

from ._model import MemoryRecord, MemoryStatus, MemoryType

RECORD_FIELDS = (
    "id", "agent_id", "user_id", "type", "content", "dedup_key", "confidence", "status",
    "created_at", "expires_at", "reviewed_at", "reviewer", "reason", "conversation_id",
    "message_position", "original_content",
)  # fmt: skip
"""The field names of ``record_to_fields``, in its order (a store's column order)."""


def record_to_fields(record: MemoryRecord, dedup_key: str) -> dict[str, Any]:
    """``record`` as flat fields in ``RECORD_FIELDS`` order; absent values are None."""
    return {
        "id": record.id,
        "agent_id": record.agent_id,
        "user_id": record.user_id,
        "type": record.memory_type.value,
        "content": record.content,
        "dedup_key": dedup_key,
        "confidence": record.confidence,
        "status": record.status.value,
        "created_at": to_micros(record.created_at),
        "expires_at": None if record.expires_at is None else to_micros(record.expires_at),
        "reviewed_at": None if record.reviewed_at is None else to_micros(record.reviewed_at),
        "reviewer": record.reviewer,
        "reason": record.reason,
        "conversation_id": record.conversation_id,
        "message_position": record.message_position,
        "original_content": record.original_content,
    }


def _time(value: Any) -> datetime | None:
    return None if value is None else from_micros(int(value))


def record_from_fields(fields: Mapping[str, Any]) -> MemoryRecord:
    """Inverse of ``record_to_fields``; an optional field may be missing (Neo4j drops nulls),
    ``dedup_key`` is ignored."""
    position = fields.get("message_position")
    return MemoryRecord(
        id=fields["id"],
        agent_id=fields["agent_id"],
        user_id=fields["user_id"],
        memory_type=MemoryType(fields["type"]),
        content=fields["content"],
        confidence=float(fields["confidence"]),
        status=MemoryStatus(fields["status"]),
        created_at=from_micros(int(fields["created_at"])),
        expires_at=_time(fields.get("expires_at")),
        reviewed_at=_time(fields.get("reviewed_at")),
        reviewer=fields.get("reviewer"),
        reason=fields.get("reason"),
        conversation_id=fields.get("conversation_id"),
        message_position=None if position is None else int(position),
        original_content=fields.get("original_content"),
    )
