"""``MongoMemoryRecordRepository``: long-term memory records in MongoDB, one document each.

A document per record, ``_id`` = the record id; timestamps as UTC microseconds (int64:
BSON dates keep only milliseconds, and expiry is exact to the microsecond). Indexes:

- ``dedup_key`` unique: sha256(agent, user, normalised content) from the rules module, so
  concurrent adds of one memory store it once (the loser reads the winner's document);
- ``(user_id, status, created_at)``: listing a user's records by status, oldest first;
- ``(status, expires_at)``: the expiry sweep.

A review is one ``update_one`` filtered on "still pending and unexpired" (one winner). The
operators used (insert, find with ``$or``/``$gt``, sort, limit, ``update_one`` with
``$set``, ``delete_one``) behave the same on MongoDB and on the nx-27017 stand-in.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pymongo import ASCENDING, MongoClient
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import ConfigurationError, DuplicateKeyError, OperationFailure

from chatmem.core import ConcurrencyError, InvalidArgumentError, SchemaMode
from chatmem.core.backend import (
    DEFAULT_SCHEMA_MODE,
    OwnedClientMixin,
    owning,
    schema_mode,
    to_micros,
)
from chatmem.core.backend import collection_name as validate_collection_name
from chatmem.core.longterm import (
    DEFAULT_PENDING_TTL,
    EXPIRED_REASON,
    AddResult,
    BaseMemoryRecordRepository,
    Clock,
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    record_from_fields,
    record_to_fields,
    utc_now,
)

from ._errors import translate_errors
from ._sync.repository import _database_of

DEFAULT_MEMORY_COLLECTION_NAME = "ai_memory_record"
ADD_ATTEMPTS = 5
DEDUP_INDEX = "memory_dedup_uq"
USER_INDEX = "memory_user_status_created"
EXPIRY_INDEX = "memory_status_expires"
_PENDING = MemoryStatus.PENDING.value


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
        parts.append({"status": _PENDING, "expires_at": {"$gt": at}})
    elif status is MemoryStatus.REJECTED:
        expired = {"status": _PENDING, "expires_at": {"$lte": at}}
        parts.append({"$or": [{"status": MemoryStatus.REJECTED.value}, expired]})
    elif status is MemoryStatus.APPROVED:
        parts.append({"status": MemoryStatus.APPROVED.value})
    if after is not None:
        when, rid = to_micros(after[0]), after[1]
        parts.append(
            {"$or": [{"created_at": {"$gt": when}}, {"created_at": when, "_id": {"$gt": rid}}]}
        )
    return {"$and": parts} if parts else {}


class MongoMemoryRecordRepository(OwnedClientMixin, BaseMemoryRecordRepository):
    """Memory records in a MongoDB collection (default ``ai_memory_record``).

    Pass a ``pymongo`` ``Database``, or a ``MongoClient`` plus ``database_name`` (or a client
    whose URL names a database); it is never closed by us. ``from_url`` builds (and ``close``
    closes) a client of its own. ``initialize_schema="always"`` (the default) creates the
    indexes if missing; the unique dedup index is what makes concurrent adds store once."""

    def __init__(
        self,
        client: MongoClient[Any] | Database[Any],
        *,
        database_name: str | None = None,
        collection_name: str = DEFAULT_MEMORY_COLLECTION_NAME,
        initialize_schema: SchemaMode | bool = DEFAULT_SCHEMA_MODE,
        clock: Clock = utc_now,
        pending_ttl: timedelta = DEFAULT_PENDING_TTL,
    ) -> None:
        super().__init__(clock=clock, pending_ttl=pending_ttl)
        name = validate_collection_name(collection_name)
        self.initialize_schema = schema_mode(initialize_schema)
        self.database = _database_of(client, database_name)
        self.collection: Collection[dict[str, Any]] = self.database[name]
        if self.initialize_schema == "always":
            self.create_indexes()

    @classmethod
    def from_url(
        cls, url: str, *, client_options: dict[str, Any] | None = None, **options: Any
    ) -> MongoMemoryRecordRepository:
        """Build from ``mongodb://host:port/dbname`` (the URL must name the database)."""
        if not isinstance(url, str) or not url.startswith(("mongodb://", "mongodb+srv://")):
            raise InvalidArgumentError("url", "must be a mongodb:// or mongodb+srv:// URL")
        try:
            client: MongoClient[Any] = MongoClient(url, **(client_options or {}))
        except (ConfigurationError, TypeError, ValueError) as exc:
            raise InvalidArgumentError("url", f"is not a usable MongoDB URL: {exc}") from exc
        return owning(client, client.close, lambda: cls(client, **options))

    def create_indexes(self) -> None:
        """Create the unique dedup index and the query indexes (race-safe: creating an
        existing index with the same keys is a no-op)."""
        specs = [
            ([("dedup_key", ASCENDING)], DEDUP_INDEX, True),
            (
                [("user_id", ASCENDING), ("status", ASCENDING), ("created_at", ASCENDING)],
                USER_INDEX,
                False,
            ),
            ([("status", ASCENDING), ("expires_at", ASCENDING)], EXPIRY_INDEX, False),
        ]
        with translate_errors("creating the memory record indexes"):
            for keys, name, unique in specs:
                try:
                    self.collection.create_index(keys, name=name, unique=unique)
                except OperationFailure as exc:
                    if "already exists" not in str(exc).lower():
                        raise

    def drop_schema(self) -> None:
        """Drop the collection with its records and indexes."""
        with translate_errors("dropping the memory records"):
            self.collection.drop()

    # -- hooks -------------------------------------------------------------------------
    def _add(self, record: MemoryRecord, key: str) -> AddResult:
        doc = to_document(record, key)
        for _ in range(ADD_ATTEMPTS):
            with translate_errors("storing a memory"):
                try:
                    self.collection.insert_one(dict(doc))
                    return AddResult(record, True)
                except DuplicateKeyError:
                    stored = self.collection.find_one({"dedup_key": key})
            if stored is not None:
                return AddResult(from_document(stored), False)
        raise ConcurrencyError("storing a memory kept conflicting with concurrent deletes")

    def _find(
        self,
        agent_id: str | None,
        user_id: str | None,
        status: MemoryStatus | None,
        memory_type: MemoryType | None,
        limit: int,
        after: tuple[datetime, str] | None,
        now: datetime,
    ) -> list[MemoryRecord]:
        query = find_filter(agent_id, user_id, status, memory_type, after, now)
        order = [("created_at", ASCENDING), ("_id", ASCENDING)]
        with translate_errors("listing memories"):
            docs = list(self.collection.find(query).sort(order).limit(limit))
        return [from_document(d) for d in docs]

    def _get(self, record_id: str) -> MemoryRecord | None:
        with translate_errors("reading a memory"):
            doc = self.collection.find_one({"_id": record_id})
        return None if doc is None else from_document(doc)

    def _review(
        self,
        record_id: str,
        decision: MemoryStatus,
        now: datetime,
        reviewer: str | None,
        reason: str | None,
    ) -> MemoryRecord | None:
        at = to_micros(now)
        guard = {"_id": record_id, "status": _PENDING, "expires_at": {"$gt": at}}
        change = {
            "status": decision.value,
            "reviewed_at": at,
            "reviewer": reviewer,
            "reason": reason,
        }
        with translate_errors("reviewing a memory"):
            if self.collection.update_one(guard, {"$set": change}).modified_count != 1:
                return None
        return self._get(record_id)

    def _delete(self, record_id: str) -> bool:
        with translate_errors("deleting a memory"):
            return self.collection.delete_one({"_id": record_id}).deleted_count == 1

    def _expire_due(self, now: datetime) -> int:
        # reviewed_at takes each record's own expires_at: per-record conditional updates
        # (update pipelines would do it in one, but the stand-in has none).
        due = {"status": _PENDING, "expires_at": {"$lte": to_micros(now)}}
        count = 0
        with translate_errors("expiring memories"):
            for doc in self.collection.find(due, {"_id": 1, "expires_at": 1}):
                guard = {"_id": doc["_id"], "status": _PENDING, "expires_at": doc["expires_at"]}
                change = {
                    "status": MemoryStatus.REJECTED.value,
                    "reviewed_at": doc["expires_at"],
                    "reviewer": None,
                    "reason": EXPIRED_REASON,
                }
                count += self.collection.update_one(guard, {"$set": change}).modified_count
        return count
