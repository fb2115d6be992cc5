"""The pure part of the MongoDB record store: the record document, the page query and the
index names; the state entry document.

A record document has ``_id`` = the record id and timestamps as UTC microseconds (int64:
BSON dates keep only milliseconds, and expiry is exact to the microsecond). A state entry is
a document in ``<collection>_state`` with ``_id`` = ``"<namespace>|<key>"`` (``|`` is not a
namespace character, so the id is unambiguous and unique per entry: a create is an insert the
``_id`` guards), the ``namespace`` and ``key`` fields (indexed together, for listing in key
order: strings compare by code point) and ``value``, ``version``, ``updated_at``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chatmem.core.backend import from_micros, to_micros
from chatmem.core.longterm import (
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    StateEntry,
    record_from_fields,
    record_to_fields,
)

DEFAULT_MEMORY_COLLECTION_NAME = "ai_memory_record"
DEDUP_INDEX = "memory_dedup_uq"
USER_INDEX = "memory_user_status_created"
EXPIRY_INDEX = "memory_status_expires"
PENDING = MemoryStatus.PENDING.value


def to_document(record: MemoryRecord, key: str) -> dict[str, Any]:
    """A record as its document: the shared fields with the id as ``_id``."""
    fields = record_to_fields(record, key)
    return {"_id": fields.pop("id"), **fields}


def from_document(doc: dict[str, Any]) -> MemoryRecord:
    """A record from its document."""
    return record_from_fields({**doc, "id": str(doc["_id"])})


def find_filter(
    agent_id: str | None,
    user_id: str | None,
    status: MemoryStatus | None,
    memory_type: MemoryType | None,
    after: tuple[datetime, str] | None,
    now: datetime,
) -> dict[str, Any]:
    """The query for a page of records by *effective* status at ``now``. Every value is a
    validated str or an int, never a caller's dict, so none can act as an operator."""
    at = to_micros(now)
    parts: list[dict[str, Any]] = []
    if agent_id is not None:
        parts.append({"agent_id": agent_id})
    if user_id is not None:
        parts.append({"user_id": user_id})
    if memory_type is not None:
        parts.append({"type": memory_type.value})
    if status is MemoryStatus.PENDING:
        parts.append({"status": PENDING, "expires_at": {"$gt": at}})
    elif status is MemoryStatus.REJECTED:
        expired = {"status": PENDING, "expires_at": {"$lte": at}}
        parts.append({"$or": [{"status": MemoryStatus.REJECTED.value}, expired]})
    elif status is MemoryStatus.APPROVED:
        parts.append({"status": MemoryStatus.APPROVED.value})
    if after is not None:
        when, rid = to_micros(after[0]), after[1]
        parts.append(
            {"$or": [{"created_at": {"$gt": when}}, {"created_at": when, "_id": {"$gt": rid}}]}
        )
    return {"$and": parts} if parts else {}


STATE_INDEX = "state_namespace_key"


def state_id(namespace: str, key: str) -> str:
    return f"{namespace}|{key}"


def state_document(entry: StateEntry) -> dict[str, Any]:
    return {
        "_id": state_id(entry.namespace, entry.key),
        "namespace": entry.namespace,
        "key": entry.key,
        "value": entry.value,
        "version": entry.version,
        "updated_at": to_micros(entry.updated_at),
    }


def state_from_document(doc: dict[str, Any]) -> StateEntry:
    return StateEntry(
        namespace=doc["namespace"],
        key=doc["key"],
        value=doc["value"],
        version=int(doc["version"]),
        updated_at=from_micros(int(doc["updated_at"])),
    )
