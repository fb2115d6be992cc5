"""``AsyncMongoMemoryRecordRepository``: long-term memory records in MongoDB, one document
each, and the state entries in a collection beside them (the sync twin
``MongoMemoryRecordRepository`` is generated from this; the documents are in
``_record_schema``).

Indexes:

- ``dedup_key`` unique: sha256(agent, user, normalised content) from the rules module, so
  concurrent adds of one memory store it once (the loser reads the winner's document);
- ``(user_id, status, created_at)``: listing a user's records by status, oldest first;
- ``(status, expires_at)``: the expiry sweep;
- on ``<collection>_state``, ``(namespace, key)``: listing state entries in key order.

A review is one ``update_one`` filtered on "still pending and unexpired" (one winner); a
state write at a version one ``update_one`` filtered on that version. The operators used
(insert, find with ``$or``/``$gt``, sort, limit, ``update_one`` with ``$set``/``$inc``,
``delete_one``) behave the same on MongoDB and on the nx-27017 stand-in.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pymongo import ASCENDING, AsyncMongoClient
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import ConfigurationError, DuplicateKeyError, OperationFailure

from chatmem.core import ConcurrencyError, InvalidArgumentError, SchemaMode
from chatmem.core.backend import (
    DEFAULT_SCHEMA_MODE,
    AsyncOwnedClientMixin,
    async_owning,
    schema_mode,
    to_micros,
)
from chatmem.core.backend import collection_name as validate_collection_name
from chatmem.core.longterm import (
    DEFAULT_PENDING_TTL,
    EXPIRED_REASON,
    AddResult,
    AsyncBaseMemoryRecordRepository,
    Clock,
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    StateEntry,
    utc_now,
)

from .._errors import translate_errors
from .._record_schema import (
    DEDUP_INDEX,
    DEFAULT_MEMORY_COLLECTION_NAME,
    EXPIRY_INDEX,
    PENDING,
    STATE_INDEX,
    USER_INDEX,
    find_filter,
    from_document,
    state_document,
    state_from_document,
    state_id,
    to_document,
)
from .repository import _database_of

ASYNC = True
ADD_ATTEMPTS = 5


class AsyncMongoMemoryRecordRepository(AsyncOwnedClientMixin, AsyncBaseMemoryRecordRepository):
    """Memory records in a MongoDB collection (default ``ai_memory_record``) and its state
    entries in ``<collection>_state``.

    Pass a ``pymongo`` database of this twin's kind, or the client plus ``database_name`` (or
    a client whose URL names a database); it is never closed by us. ``from_url`` builds (and
    ``close`` closes) a client of its own. ``initialize_schema="always"`` (the default)
    creates the indexes if missing (the blocking twin in its constructor, the non-blocking
    one on its first call; ``from_url`` before it returns); the unique dedup index is what
    makes concurrent adds store once."""

    def __init__(
        self,
        client: AsyncMongoClient[Any] | AsyncDatabase[Any],
        *,
        database_name: str | None = None,
        collection_name: str = DEFAULT_MEMORY_COLLECTION_NAME,
        initialize_schema: SchemaMode | bool = DEFAULT_SCHEMA_MODE,
        clock: Clock = utc_now,
        pending_ttl: timedelta = DEFAULT_PENDING_TTL,
    ) -> None:
        super().__init__(clock=clock, pending_ttl=pending_ttl)
        name = validate_collection_name(collection_name)
        validate_collection_name(f"{name}_state", "collection_name")
        self.initialize_schema = schema_mode(initialize_schema)
        self.database = _database_of(client, database_name)
        self.collection: AsyncCollection[dict[str, Any]] = self.database[name]
        self.state: AsyncCollection[dict[str, Any]] = self.database[f"{name}_state"]
        self._schema_on_first_use(self.initialize_schema == "always")

    @classmethod
    async def from_url(
        cls, url: str, *, client_options: dict[str, Any] | None = None, **options: Any
    ) -> AsyncMongoMemoryRecordRepository:
        """Build from ``mongodb://host:port/dbname`` (the URL must name the database)."""
        if not isinstance(url, str) or not url.startswith(("mongodb://", "mongodb+srv://")):
            raise InvalidArgumentError("url", "must be a mongodb:// or mongodb+srv:// URL")
        try:
            client: AsyncMongoClient[Any] = AsyncMongoClient(url, **(client_options or {}))
        except (ConfigurationError, TypeError, ValueError) as exc:
            raise InvalidArgumentError("url", f"is not a usable MongoDB URL: {exc}") from exc

        async def build() -> AsyncMongoMemoryRecordRepository:
            repo = cls(client, **options)
            await repo._ready()
            return repo

        return await async_owning(client, client.close, build)

    async def create_indexes(self) -> None:
        """Create the unique dedup index and the query indexes (race-safe: creating an
        existing index with the same keys is a no-op)."""
        specs = [
            (self.collection, [("dedup_key", ASCENDING)], DEDUP_INDEX, True),
            (
                self.collection,
                [("user_id", ASCENDING), ("status", ASCENDING), ("created_at", ASCENDING)],
                USER_INDEX,
                False,
            ),
            (
                self.collection,
                [("status", ASCENDING), ("expires_at", ASCENDING)],
                EXPIRY_INDEX,
                False,
            ),
            (self.state, [("namespace", ASCENDING), ("key", ASCENDING)], STATE_INDEX, False),
        ]
        with translate_errors("creating the memory record indexes"):
            for collection, keys, name, unique in specs:
                try:
                    await collection.create_index(keys, name=name, unique=unique)
                except OperationFailure as exc:
                    if "already exists" not in str(exc).lower():
                        raise

    async def _create_schema(self) -> None:
        await self.create_indexes()

    async def drop_schema(self) -> None:
        """Drop the record and state collections with their documents and indexes."""
        with translate_errors("dropping the memory records"):
            await self.collection.drop()
            await self.state.drop()

    # -- hooks -------------------------------------------------------------------------
    async def _add(self, record: MemoryRecord, key: str) -> AddResult:
        await self._ready()
        doc = to_document(record, key)
        for _ in range(ADD_ATTEMPTS):
            with translate_errors("storing a memory"):
                try:
                    await self.collection.insert_one(dict(doc))
                    return AddResult(record, True)
                except DuplicateKeyError:
                    stored = await self.collection.find_one({"dedup_key": key})
            if stored is not None:
                return AddResult(from_document(stored), False)
        raise ConcurrencyError("storing a memory kept conflicting with concurrent deletes")

    async def _find(
        self,
        agent_id: str | None,
        user_id: str | None,
        status: MemoryStatus | None,
        memory_type: MemoryType | None,
        limit: int,
        after: tuple[datetime, str] | None,
        now: datetime,
    ) -> list[MemoryRecord]:
        await self._ready()
        query = find_filter(agent_id, user_id, status, memory_type, after, now)
        order = [("created_at", ASCENDING), ("_id", ASCENDING)]
        with translate_errors("listing memories"):
            docs = await self.collection.find(query).sort(order).limit(limit).to_list()
        return [from_document(d) for d in docs]

    async def _get(self, record_id: str) -> MemoryRecord | None:
        with translate_errors("reading a memory"):
            doc = await self.collection.find_one({"_id": record_id})
        return None if doc is None else from_document(doc)

    async def _review(
        self,
        record_id: str,
        decision: MemoryStatus,
        now: datetime,
        reviewer: str | None,
        reason: str | None,
        edit: tuple[str, str] | None,
    ) -> MemoryRecord | None:
        at = to_micros(now)
        guard = {"_id": record_id, "status": PENDING, "expires_at": {"$gt": at}}
        change: dict[str, Any] = {
            "status": decision.value,
            "reviewed_at": at,
            "reviewer": reviewer,
            "reason": reason,
        }
        if edit is not None:
            change.update(content=edit[0], original_content=edit[1])
        with translate_errors("reviewing a memory"):
            if (await self.collection.update_one(guard, {"$set": change})).modified_count != 1:
                return None
        return await self._get(record_id)

    async def _delete(self, record_id: str) -> bool:
        with translate_errors("deleting a memory"):
            return (await self.collection.delete_one({"_id": record_id})).deleted_count == 1

    async def _expire_due(self, now: datetime) -> int:
        await self._ready()
        # reviewed_at takes each record's own expires_at: per-record conditional updates
        # (update pipelines would do it in one, but the stand-in has none).
        due = {"status": PENDING, "expires_at": {"$lte": to_micros(now)}}
        count = 0
        with translate_errors("expiring memories"):
            docs = await self.collection.find(due, {"_id": 1, "expires_at": 1}).to_list()
            for doc in docs:
                guard = {"_id": doc["_id"], "status": PENDING, "expires_at": doc["expires_at"]}
                change = {
                    "status": MemoryStatus.REJECTED.value,
                    "reviewed_at": doc["expires_at"],
                    "reviewer": None,
                    "reason": EXPIRED_REASON,
                }
                count += (await self.collection.update_one(guard, {"$set": change})).modified_count
        return count

    async def _read_state(self, namespace: str, key: str) -> StateEntry | None:
        with translate_errors("reading state"):
            doc = await self.state.find_one({"_id": state_id(namespace, key)})
        return None if doc is None else state_from_document(doc)

    async def _write_state(
        self, namespace: str, key: str, value: str, expected: int | None, now: datetime
    ) -> StateEntry | None:
        await self._ready()
        version = 1 if expected is None else expected + 1
        entry = StateEntry(
            namespace=namespace, key=key, value=value, version=version, updated_at=now
        )
        with translate_errors("writing state"):
            if expected is None:
                try:
                    await self.state.insert_one(state_document(entry))
                except DuplicateKeyError:
                    return None  # present already
                return entry
            guard = {"_id": state_id(namespace, key), "version": expected}
            change = {
                "$set": {"value": value, "updated_at": to_micros(now)},
                "$inc": {"version": 1},
            }
            done = await self.state.update_one(guard, change)
        return entry if done.modified_count == 1 else None

    async def _delete_state(self, namespace: str, key: str, expected: int | None) -> bool:
        guard: dict[str, Any] = {"_id": state_id(namespace, key)}
        if expected is not None:
            guard["version"] = expected
        with translate_errors("deleting state"):
            return (await self.state.delete_one(guard)).deleted_count == 1

    async def _list_state(self, namespace: str, after: str | None, limit: int) -> list[StateEntry]:
        await self._ready()
        query: dict[str, Any] = {"namespace": namespace}
        if after is not None:
            query["key"] = {"$gt": after}
        with translate_errors("listing state"):
            docs = await self.state.find(query).sort("key", ASCENDING).limit(limit).to_list()
        return [state_from_document(d) for d in docs]
