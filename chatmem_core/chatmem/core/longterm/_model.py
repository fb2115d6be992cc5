"""The long-term memory values: a record's type and status, the record, a candidate, a page.

Records are frozen, slotted, keyword-only dataclasses: stores build them, callers read them,
and nobody mutates one in place (a transition returns a new record, see ``_rules``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from chatmem.core._errors import ChatMemoryError


class MemoryType(str, enum.Enum):
    """What a memory says about the user."""

    PREFERENCE = "preference"
    """Tone, format, workflow style: "prefers bullet-point summaries"."""
    FACT = "fact"
    """Stable facts: role, team, company, recurring needs."""
    CONTEXT = "context"
    """Situational context that helps personalise: "has a launch next month"."""


class MemoryStatus(str, enum.Enum):
    """Where a record is in review: pending until a reviewer (or the expiry) decides."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class MemoryNotFoundError(ChatMemoryError, LookupError):
    """No record has the given id (it never existed or was deleted)."""


class MemoryStateError(ChatMemoryError):
    """A review lost: the record is no longer pending (approved, rejected or expired).

    ``status`` is the record's status when the review was refused."""

    def __init__(self, record_id: str, status: MemoryStatus) -> None:
        super().__init__(f"memory {record_id} is {status.value}, not pending")
        self.record_id = record_id
        self.status = status


class ExtractionError(ChatMemoryError):
    """The model's output broke the extraction JSON contract; nothing was stored."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryCandidate:
    """Something worth remembering about a user, before it is stored and reviewed."""

    memory_type: MemoryType
    content: str
    confidence: float


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecord:
    """One stored memory about one user of one agent.

    ``expires_at`` is set while the record is pending (created + the pending TTL) and kept
    afterwards as history; an approved record never expires. ``reviewer`` and ``reason`` say
    who decided and why (``reason="expired"`` when nobody reviewed it in time).
    ``original_content`` is the proposed wording when the reviewer edited ``content`` as they
    approved it (None unless edited)."""

    id: str
    agent_id: str
    user_id: str
    memory_type: MemoryType
    content: str
    confidence: float
    status: MemoryStatus
    created_at: datetime
    expires_at: datetime | None = None
    reviewed_at: datetime | None = None
    reviewer: str | None = None
    reason: str | None = None
    conversation_id: str | None = None
    message_position: int | None = None
    original_content: str | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (timestamps as ISO 8601 UTC strings)."""

        def iso(value: datetime | None) -> str | None:
            return None if value is None else value.isoformat()

        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "type": self.memory_type.value,
            "content": self.content,
            "confidence": self.confidence,
            "status": self.status.value,
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "reviewed_at": iso(self.reviewed_at),
            "reviewer": self.reviewer,
            "reason": self.reason,
            "conversation_id": self.conversation_id,
            "message_position": self.message_position,
            "original_content": self.original_content,
        }


@dataclass(frozen=True, slots=True)
class AddResult:
    """What ``add`` did: the stored record, and whether it is new (False: a duplicate)."""

    record: MemoryRecord
    created: bool


@dataclass(frozen=True, slots=True)
class MemoryRecordPage:
    """One page of records, oldest first; ``next_cursor`` is None on the last page."""

    records: list[MemoryRecord]
    next_cursor: str | None
