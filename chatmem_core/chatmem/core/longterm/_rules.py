"""The lifecycle rules of long-term memory, in one pure module (no I/O, no clock of its own).

Every store and both API flavours (sync now, async later) call these functions, so a rule
exists once: validation of ids and filters, the dedup key, when a pending record expires,
which transitions are allowed, and the paging cursor. Time always comes in as an argument
(``now``) read from the store's injectable clock, so tests move time by setting a clock.

Expiry: a pending record created at ``t`` expires at ``t + pending_ttl`` (7 days by
default) and counts as rejected from that instant on (``now >= expires_at``). Reads apply
it (``effective``), so a missed sweep never shows or injects a stale pending record;
``expire_due`` persists it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import check_text
from chatmem.core._validation import validate_conversation_id

from ._model import MemoryCandidate, MemoryRecord, MemoryStatus, MemoryType

Clock = Callable[[], datetime]
"""Returns the current time as an aware UTC datetime."""

DEFAULT_PENDING_TTL = timedelta(days=7)
"""A pending record not reviewed within this long expires (becomes rejected)."""
EXPIRED_REASON = "expired"
MAX_CONTENT_LENGTH = 2000
MAX_REVIEW_TEXT_LENGTH = 1000
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def utc_now() -> datetime:
    """The default clock: now, UTC, microsecond precision."""
    return datetime.now(timezone.utc)


def as_utc(value: datetime, argument: str = "now") -> datetime:
    """``value`` as an aware UTC datetime (naive values are taken as UTC)."""
    if not isinstance(value, datetime):
        raise InvalidArgumentError(argument, f"must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def validate_pending_ttl(value: object) -> timedelta:
    """A positive timedelta."""
    if not isinstance(value, timedelta) or value <= timedelta(0):
        raise InvalidArgumentError("pending_ttl", "must be a positive timedelta")
    return value


# -- validation -------------------------------------------------------------------------
def validate_id(value: object, argument: str) -> str:
    """An agent, user or conversation id: a non-empty str of at most 255 characters."""
    return validate_conversation_id(value, argument=argument)


def validate_record_id(value: object, argument: str = "record_id") -> str:
    """A record id as ``add`` issues them (a UUID string)."""
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"must be a str, got {type(value).__name__}")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise InvalidArgumentError(argument, f"{value!r} is not a memory id (a UUID)") from None


def validate_type(value: object, argument: str = "memory_type") -> MemoryType:
    """A ``MemoryType`` or its value (``"preference"``, ``"fact"``, ``"context"``)."""
    try:
        return MemoryType(value)
    except ValueError:
        names = ", ".join(t.value for t in MemoryType)
        raise InvalidArgumentError(argument, f"{value!r} is not one of {names}") from None


def validate_status(value: object, argument: str = "status") -> MemoryStatus:
    """A ``MemoryStatus`` or its value."""
    try:
        return MemoryStatus(value)
    except ValueError:
        names = ", ".join(s.value for s in MemoryStatus)
        raise InvalidArgumentError(argument, f"{value!r} is not one of {names}") from None


def validate_confidence(value: object, argument: str = "confidence") -> float:
    """A finite number in [0.0, 1.0] (bool rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(argument, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidArgumentError(argument, f"must be within [0.0, 1.0], got {value}")
    return float(value)


def validate_content(value: object, argument: str = "content") -> str:
    """Non-blank text of at most ``MAX_CONTENT_LENGTH`` characters, storable everywhere."""
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"must be a str, got {type(value).__name__}")
    text = value.strip()
    if not text:
        raise InvalidArgumentError(argument, "must not be blank")
    if len(text) > MAX_CONTENT_LENGTH:
        raise InvalidArgumentError(argument, f"is longer than {MAX_CONTENT_LENGTH} characters")
    return check_text(argument, text)


def validate_search_text(value: object, argument: str = "text") -> str:
    """A ``find`` text filter: a non-blank str of at most ``MAX_CONTENT_LENGTH`` characters."""
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"must be a str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidArgumentError(argument, "must not be blank")
    if len(value) > MAX_CONTENT_LENGTH:
        raise InvalidArgumentError(argument, f"is longer than {MAX_CONTENT_LENGTH} characters")
    return check_text(argument, value)


def matches_search(record: MemoryRecord, text: str | None, min_confidence: float | None) -> bool:
    """Whether ``record`` passes ``find``'s ``text`` (a case-insensitive substring of the
    content, Unicode case folding) and ``min_confidence`` (inclusive) filters."""
    return (text is None or text.casefold() in record.content.casefold()) and (
        min_confidence is None or record.confidence >= min_confidence
    )


def validate_review_text(value: object, argument: str) -> str | None:
    """An optional reviewer name or reason."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"must be a str, got {type(value).__name__}")
    if len(value) > MAX_REVIEW_TEXT_LENGTH:
        raise InvalidArgumentError(argument, f"is longer than {MAX_REVIEW_TEXT_LENGTH}")
    return check_text(argument, value)


def validate_candidate(value: object, argument: str = "candidate") -> MemoryCandidate:
    """A ``MemoryCandidate`` with a valid type, content and confidence (a normalised copy)."""
    if not isinstance(value, MemoryCandidate):
        raise InvalidArgumentError(argument, f"must be a MemoryCandidate, got {type(value)}")
    return MemoryCandidate(
        memory_type=validate_type(value.memory_type, f"{argument}.memory_type"),
        content=validate_content(value.content, f"{argument}.content"),
        confidence=validate_confidence(value.confidence, f"{argument}.confidence"),
    )


def validate_position(value: object, argument: str = "message_position") -> int | None:
    """An optional message position (an int >= 0)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(argument, f"must be an int >= 0, got {value!r}")
    return value


def validate_limit(value: object, argument: str = "limit") -> int:
    """A page size in 1..MAX_PAGE_SIZE."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_PAGE_SIZE:
        raise InvalidArgumentError(argument, f"must be an int in 1..{MAX_PAGE_SIZE}")
    return value


# -- dedup ------------------------------------------------------------------------------
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """The form two memories are compared in: NFKC, case-folded, single spaces, no trailing
    punctuation. "Prefers  Python." and "prefers python" are the same memory."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", folded).strip().rstrip(".!?;:,").strip()


def dedup_key(agent_id: str, user_id: str, content: str) -> str:
    """The store's unique key: one memory per (agent, user, normalised content)."""
    # JSON keeps the three parts apart whatever characters they hold.
    raw = json.dumps([agent_id, user_id, normalise(content)], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def proposed(record: MemoryRecord) -> str:
    """The content as proposed (before a reviewer's edit): what the dedup key is made of."""
    return record.content if record.original_content is None else record.original_content


def new_record(
    *,
    agent_id: str,
    user_id: str,
    candidate: MemoryCandidate,
    now: datetime,
    pending_ttl: timedelta = DEFAULT_PENDING_TTL,
    conversation_id: str | None = None,
    message_position: int | None = None,
) -> MemoryRecord:
    """A fresh pending record for a validated candidate, expiring ``pending_ttl`` from now."""
    return MemoryRecord(
        id=str(uuid.uuid4()),
        agent_id=agent_id,
        user_id=user_id,
        memory_type=candidate.memory_type,
        content=candidate.content,
        confidence=candidate.confidence,
        status=MemoryStatus.PENDING,
        created_at=now,
        expires_at=now + pending_ttl,
        conversation_id=conversation_id,
        message_position=message_position,
    )


# -- lifecycle --------------------------------------------------------------------------
def is_expired(record: MemoryRecord, now: datetime) -> bool:
    """True when a pending record's review window has closed (exactly at ``expires_at``)."""
    return (
        record.status is MemoryStatus.PENDING
        and record.expires_at is not None
        and now >= record.expires_at
    )


def effective(record: MemoryRecord, now: datetime) -> MemoryRecord:
    """The record as it stands at ``now``: an expired pending record reads as rejected,
    reviewed at its expiry instant, reason ``expired``."""
    if not is_expired(record, now):
        return record
    return replace(
        record,
        status=MemoryStatus.REJECTED,
        reviewed_at=record.expires_at,
        reviewer=None,
        reason=EXPIRED_REASON,
    )


def review(
    record: MemoryRecord,
    decision: MemoryStatus,
    now: datetime,
    *,
    reviewer: str | None = None,
    reason: str | None = None,
) -> MemoryRecord:
    """The record after a reviewer's decision; MemoryStateError unless it is pending at
    ``now`` (so an expired record cannot be approved, and a race has one winner)."""
    from ._model import MemoryStateError

    if decision is MemoryStatus.PENDING:
        raise InvalidArgumentError("decision", "must be approved or rejected")
    current = effective(record, now)
    if current.status is not MemoryStatus.PENDING:
        raise MemoryStateError(record.id, current.status)
    return replace(record, status=decision, reviewed_at=now, reviewer=reviewer, reason=reason)


def matches(
    record: MemoryRecord,
    *,
    agent_id: str | None,
    user_id: str | None,
    status: MemoryStatus | None,
    memory_type: MemoryType | None,
) -> bool:
    """Whether an (effective) record passes a listing filter."""
    return (
        (agent_id is None or record.agent_id == agent_id)
        and (user_id is None or record.user_id == user_id)
        and (status is None or record.status is status)
        and (memory_type is None or record.memory_type is memory_type)
    )


# -- paging -----------------------------------------------------------------------------
def sort_key(record: MemoryRecord) -> tuple[datetime, str]:
    """Listing order: oldest first, ties by id."""
    return (record.created_at, record.id)


def encode_cursor(record: MemoryRecord) -> str:
    """An opaque cursor pointing after ``record``."""
    micros = (as_utc(record.created_at) - _EPOCH) // timedelta(microseconds=1)
    return f"{micros}_{record.id}"


def decode_cursor(cursor: object) -> tuple[datetime, str] | None:
    """``(created_at, id)`` of the record a cursor points after; None for no cursor."""
    if cursor is None:
        return None
    try:
        micros, record_id = str(cursor).split("_", 1)
        when = _EPOCH + timedelta(microseconds=int(micros))
        return when, validate_record_id(record_id, "cursor")
    except (ValueError, OverflowError):
        raise InvalidArgumentError("cursor", f"{cursor!r} is not a cursor from a page") from None
