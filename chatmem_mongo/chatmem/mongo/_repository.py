# Generated from chatmem_mongo/chatmem/mongo/_async_repository.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``MongoChatMemoryRepository``: chat memory in MongoDB, one document per conversation.

Written once, as async code on PyMongo's own asyncio API (no thread per call); the sync twin,
on the blocking client, is generated from it by ``scripts/unasync.py``. The pure parts (the
snapshot cache, the trim, the document shape and codec) live once, in ``_snapshots.py``,
``_schema.py`` and ``_codec.py``.

Why one document per conversation, rewritten with compare-and-set:

- MongoDB is atomic per document. Keeping a whole conversation in one document makes a
  replace atomic for readers (they see the old array or the new one, never a mix, never
  empty) and makes a TTL expire a conversation whole, with no multi-document transactions
  (a standalone server has none).
- Every write sets ``messages``, ``next_position`` and a fresh random ``rev`` in one
  ``update_one`` filtered on the ``rev`` it started from (or an insert when there was no
  document). A concurrent writer changes ``rev``, so the loser matches nothing, reads again
  and retries with jittered backoff: appends from threads and processes all land, positions
  are assigned from ``next_position`` under that guard, and a window edit has nothing
  interleaved between its read and its write.
- Window adds trim the array to the systems plus the newest ``trim_to`` others in the same
  write, so the document, each read and each rewrite stay the size of the window.
- The repository remembers the last snapshot it read or wrote per conversation (a small LRU)
  and starts its next write from it; a stale snapshot only costs the failed compare-and-set,
  so a single writer pays one round trip per add.

Why not ``$push``/``$each``/``$slice`` or pipeline updates (one round trip on MongoDB 4.2+):
the wire-protocol stand-in this project tests against (nx-27017) stores pushed documents as
JSON strings, ignores ``$set`` on ``array.N`` paths, and has neither update pipelines nor a
working ``$slice`` projection or aggregation over arrays of documents. The operators used here
(``find_one`` by ``_id``, ``update_one`` with ``$set``/``$setOnInsert``/``$currentDate``,
``delete_one``, ``find``+``sort``+``limit`` on ``_id``, ``listIndexes``,
``create_index``/``drop_index``) behave
the same on MongoDB 6/7 and on the stand-in.

The 16 MiB document limit therefore bounds one conversation; a write over it is refused by
the driver or server (nothing written) and raised as ``InvalidArgumentError("messages")``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pymongo import MongoClient
from pymongo.errors import ConfigurationError, DuplicateKeyError
from pymongo.synchronous.collection import Collection
from pymongo.synchronous.database import Database

from chatmem.core import Message
from chatmem.core.backend import (
    BaseChatMemoryRepository,
    Capability,
    ConversationIdPage,
    InvalidArgumentError,
    OwnedClientMixin,
    SchemaCheck,
    SchemaError,
    SchemaMode,
    WindowEdit,
    owning,
    retry,
)

from ._codec import from_document, to_document
from ._config import MongoConfig
from ._errors import translate_errors
from ._indexes import ensure_indexes, missing_indexes
from ._schema import (
    ID,
    MESSAGES,
    NEXT_POSITION,
    POSITION,
    REVISION,
    UPDATED_AT,
    conversation_fields,
    index_commands,
)
from ._snapshots import Snapshot, SnapshotCache, foreign, is_system, new_rev, trim

MAX_ATTEMPTS = 100
"""Compare-and-set attempts before ConcurrencyError (each failure means another write won)."""

_SNAPSHOT_FIELDS = {REVISION: 1, NEXT_POSITION: 1, MESSAGES: 1}
_URL_SCHEMES = ("mongodb://", "mongodb+srv://")

_Change = Callable[[Snapshot | None], tuple[list[dict[str, Any]], int]]


class MongoChatMemoryRepository(OwnedClientMixin, BaseChatMemoryRepository):
    """Chat memory in a MongoDB collection (default ``ai_chat_memory``).

    Pass a ``pymongo`` ``Database``, or the ``MongoClient`` plus ``database_name``
    (or a client whose URL names a database); the client is never closed by us.
    ``from_url`` builds (and ``close`` closes) a client of its own.
    """

    capabilities = frozenset({Capability.TTL})

    def __init__(
        self,
        client: MongoClient[Any] | Database[Any],
        *,
        database_name: str | None = None,
        collection_name: str = MongoConfig.collection_name,
        ttl: timedelta | None = MongoConfig.ttl,
        initialize_schema: SchemaMode | bool = MongoConfig.initialize_schema,
    ) -> None:
        self.config = MongoConfig(
            collection_name=collection_name,
            ttl=ttl,
            initialize_schema=initialize_schema,  # type: ignore[arg-type]  # bools normalised
        )
        self.database = _database_of(client, database_name)
        self.collection: Collection[dict[str, Any]] = self.database[self.config.collection_name]
        self._snapshots = SnapshotCache()
        self._schema_check = SchemaCheck(
            self._missing_indexes, f"collection {self.database.name}.{collection_name}"
        )
        if self.config.initialize_schema == "always":
            self.create_schema()

    @classmethod
    def from_url(
        cls, url: str, *, client_options: dict[str, Any] | None = None, **options: Any
    ) -> MongoChatMemoryRepository:
        """Build from ``mongodb://host:port/dbname`` (the URL must name the database)."""
        if not isinstance(url, str) or not url.startswith(_URL_SCHEMES):
            raise InvalidArgumentError("url", "must be a mongodb:// or mongodb+srv:// URL")
        try:  # the client connects lazily: only the URL and options are checked here
            client: MongoClient[Any] = MongoClient(url, **(client_options or {}))
        except (ConfigurationError, TypeError, ValueError) as exc:
            raise InvalidArgumentError("url", f"is not a usable MongoDB URL: {exc}") from exc

        def build() -> MongoChatMemoryRepository:
            repo = cls(client, **options)
            repo._schema_check.url_hint = url  # for the "never" mode's SchemaError message
            return repo

        return owning(client, client.close, build)

    def create_schema(self) -> None:
        """Create the position index and reconcile the TTL index with ``ttl`` (race-safe)."""
        with translate_errors("create indexes"):
            ensure_indexes(self.collection, self.config.ttl_seconds)
        self._schema_check.passed()

    def _initialize(self) -> None:
        self.create_schema()

    def _missing_indexes(self) -> list[str]:
        with translate_errors("check indexes"):
            return missing_indexes(self.collection, self.config.ttl_seconds)

    def schema_statements(self) -> list[str]:
        """The index commands ``create_schema`` runs, as mongosh text."""
        return index_commands(self.config.collection_name, self.config.ttl_seconds)

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """The index commands for ``options``, built without a connection."""
        if not isinstance(url, str) or not url.startswith(_URL_SCHEMES):
            raise InvalidArgumentError("url", "must be a mongodb:// or mongodb+srv:// URL")
        options.pop("database_name", None)
        options.pop("client_options", None)
        config = MongoConfig(**options)
        return index_commands(config.collection_name, config.ttl_seconds)

    # -- reads -------------------------------------------------------------------------
    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        # string ids only (type bracketing), so a foreign document never breaks the cursor
        self._schema_check()
        query = {ID: {"$gte": ""}} if after is None else {ID: {"$gt": after}}
        with translate_errors("list conversations"):
            cursor = self.collection.find(query, {ID: 1}).sort(ID, 1).limit(limit + 1)
            rows = cursor.to_list()
        ids = [str(r[ID]) for r in rows[:limit]]
        return ConversationIdPage(ids, ids[-1] if len(rows) > limit else None)

    def _find(self, cid: str) -> list[Message]:
        snap = self._read(cid)
        return [] if snap is None else [from_document(d) for d in snap.docs]

    def _find_last(self, cid: str, n: int) -> list[Message]:
        # Only the last n are decoded; the stand-in has no $slice projection to bound the
        # transfer, and window adds keep the document the size of the window anyway.
        snap = self._read(cid)
        return [] if snap is None else [from_document(d) for d in snap.docs[-n:]]

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        snap = self._read(cid)
        docs = () if snap is None else trim(snap.docs, non_system_limit)
        return [from_document(d) for d in docs]

    # -- writes ------------------------------------------------------------------------
    def _save_all(self, cid: str, messages: list[Message]) -> None:
        docs = [to_document(m, i) for i, m in enumerate(messages)]
        rev = new_rev()
        update = {
            "$set": conversation_fields(cid, rev, len(docs), docs),
            "$currentDate": {UPDATED_AT: True},
        }
        self._schema_check()
        with translate_errors("save conversation"):
            try:
                self.collection.update_one({ID: cid}, update, upsert=True)
            except DuplicateKeyError:  # two first writes raced; the second is now an update
                self.collection.update_one({ID: cid}, update, upsert=True)
        self._snapshots.put(cid, Snapshot(rev, len(docs), tuple(docs)))

    def _delete(self, cid: str) -> None:
        self._snapshots.forget(cid)
        self._schema_check()
        with translate_errors("delete conversation"):
            self.collection.delete_one({ID: cid})
        self._snapshots.forget(cid)

    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        def change(snap: Snapshot | None) -> tuple[list[dict[str, Any]], int]:
            old = () if snap is None else snap.docs
            start = 0 if snap is None else snap.next_position
            new = [to_document(m, start + i) for i, m in enumerate(messages)]
            docs = [*old, *new]
            return (docs if trim_to is None else trim(docs, trim_to)), start + len(new)

        self._mutate(cid, change, "append")

    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        def change(snap: Snapshot | None) -> tuple[list[dict[str, Any]], int]:
            old = () if snap is None else snap.docs
            start = 0 if snap is None else snap.next_position
            edit = plan([from_document(d) for d in trim(old, non_system_limit)])
            below = edit.delete_non_system_below
            kept = [
                d
                for d in old
                if d[POSITION] not in edit.delete_positions
                and not (below is not None and not is_system(d) and d[POSITION] < below)
            ]
            new = [to_document(m, start + i) for i, m in enumerate(edit.append)]
            return kept + new, start + len(new)

        self._mutate(cid, change, "edit window")

    # -- compare-and-set machinery -------------------------------------------------------
    def _mutate(self, cid: str, change: _Change, what: str) -> None:
        """Apply ``change`` to the current document atomically (CAS on ``rev`` + retry)."""
        snap = self._snapshots.get(cid)
        stale = snap is None

        def attempt() -> bool | None:
            nonlocal snap, stale
            if stale:
                snap = self._read(cid)
            docs, next_position = change(snap)
            if self._write(cid, snap, docs, next_position, what):
                return True
            stale = True  # another write won: start again from what the server holds
            self._snapshots.forget(cid)
            return None

        retry(attempt, attempts=MAX_ATTEMPTS, what=what, base_sleep=0.001)

    def _write(
        self,
        cid: str,
        base: Snapshot | None,
        docs: list[dict[str, Any]],
        next_position: int,
        what: str,
    ) -> bool:
        """Write ``docs`` if the document is still ``base``; False when another write won."""
        self._schema_check()
        with translate_errors(what):
            if not docs:
                self._snapshots.forget(cid)
                if base is None:
                    return True
                deleted = self.collection.delete_one({ID: cid, REVISION: base.rev})
                return deleted.deleted_count == 1
            rev = new_rev()
            fields = conversation_fields(cid, rev, next_position, docs)
            if base is None:
                try:  # matches no chatmem document: inserts, or fails on the _id index
                    inserted = self.collection.update_one(
                        {ID: cid, REVISION: {"$exists": False}},
                        {"$setOnInsert": fields, "$currentDate": {UPDATED_AT: True}},
                        upsert=True,
                    )
                except DuplicateKeyError:
                    return False
                if inserted.upserted_id is None:
                    raise SchemaError(foreign(cid, self.collection.name))
            else:
                result = self.collection.update_one(
                    {ID: cid, REVISION: base.rev},
                    {"$set": fields, "$currentDate": {UPDATED_AT: True}},
                )
                if result.matched_count != 1:
                    return False
        self._snapshots.put(cid, Snapshot(rev, next_position, tuple(docs)))
        return True

    def _read(self, cid: str) -> Snapshot | None:
        self._schema_check()
        with translate_errors("read conversation"):
            doc = self.collection.find_one({ID: cid}, _SNAPSHOT_FIELDS)
        if doc is None:
            self._snapshots.forget(cid)
            return None
        if REVISION not in doc or NEXT_POSITION not in doc:
            raise SchemaError(foreign(cid, self.collection.name))
        snap = Snapshot(doc[REVISION], int(doc[NEXT_POSITION]), tuple(doc.get(MESSAGES) or ()))
        self._snapshots.put(cid, snap)
        return snap


def _database_of(client: object, database_name: str | None) -> Database[Any]:
    """The database a repository (chat or long-term memory) works in: the ``Database``
    passed, or the client's ``database_name`` / the database its URL names."""
    if isinstance(client, Database):
        if database_name is not None and database_name != client.name:
            raise InvalidArgumentError("database_name", "differs from the Database passed")
        return client
    if not isinstance(client, MongoClient):
        raise InvalidArgumentError(
            "client",
            f"must be a pymongo MongoClient or Database, got {type(client).__name__}",
        )
    if database_name is not None:
        if not isinstance(database_name, str) or not database_name:
            raise InvalidArgumentError("database_name", "must be a non-empty str")
        return client[database_name]
    try:
        return client.get_default_database()
    except ConfigurationError:
        raise InvalidArgumentError(
            "database_name", "is required when the client's URL names no database"
        ) from None
