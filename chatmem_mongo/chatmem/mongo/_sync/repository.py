# Generated from chatmem_mongo/chatmem/mongo/_async/repository.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``MongoChatMemoryRepository``: chat memory in MongoDB, one document per conversation.

Each twin is on PyMongo's own client of its kind (the blocking one, or the non-blocking one:
no thread per call). The pure parts (the snapshot cache, the trim, the document shape and
codec) live once, in ``_native/snapshots.py``, ``_schema.py`` and ``_codec.py``; the
document's reads and compare-and-set writes in ``documents.py``.

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
- Window adds trim the tail to the newest ``trim_to`` others in the same write (and drop the
  archive), so the document, each read and each rewrite stay the size of the window.
- Reads are bounded whatever wrote the document (``_schema.py`` has the layout): the window
  read takes the systems and the last N of the tail, ``find_last`` the last n of each, and a
  write's snapshot read the head, the systems and the tail (under ``2 * CHUNK``), never the
  archive; only ``find_by_conversation_id`` reads it all.
- The repository remembers the last snapshot it read or wrote per conversation (a small LRU)
  and starts its next write from it; a stale snapshot only costs the failed compare-and-set,
  so a single writer pays one round trip per add.

Why ``$set`` of whole fields and not ``$push``/``$each``/``$slice`` or pipeline updates: the
wire-protocol stand-in this project tests against (nx-27017 0.8.1, probed) rewrites every
element of an array it ``$push``es to as a JSON string, ignores ``$set`` on ``array.N``
paths, has no update pipelines (nor ``$concatArrays``), and rejects find's own ``$slice``
projection (``{"messages": {"$slice": -n}}``: "$slice requires array and count/position").
What both it and MongoDB 4.4+ do the same way, and all this module uses: ``find_one`` by
``_id`` with inclusion and expression projections (``$let`` over the ``$slice`` expression,
``"$archive.<k>"`` paths), ``update_one`` with ``$set`` (also on ``archive.<k>`` paths of
an embedded document), ``$unset``, ``$setOnInsert``, ``$currentDate``, ``delete_one``,
``find``+``sort``+``limit`` on ``_id``, ``listIndexes``, ``create_index``/``drop_index``.

The 16 MiB document limit therefore bounds one conversation; a write over it is refused by
the driver or server (nothing written) and raised as ``InvalidArgumentError("messages")``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, ClassVar

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
    SchemaMode,
    WindowEdit,
    owning,
    split_layout,
)

from .._codec import from_document, to_document
from .._config import MongoConfig
from .._errors import translate_errors
from .._native.snapshots import (
    Layout,
    Snapshot,
    SnapshotCache,
    last,
    layout,
    merge,
    new_rev,
    split,
)
from .._schema import (
    ARCHIVE,
    ARCHIVED,
    ID,
    LAYOUT_VERSION,
    MESSAGES,
    POSITION,
    REVISION,
    SYSTEMS,
    UPDATED_AT,
    VERSION,
    conversation_fields,
    index_commands,
)
from .documents import HEAD, MongoDocuments, archive_of, check_document
from .schema_ops import ensure_indexes, missing_indexes

_URL_SCHEMES = ("mongodb://", "mongodb+srv://")


class MongoChatMemoryRepository(MongoDocuments, OwnedClientMixin, BaseChatMemoryRepository):
    """Chat memory in a MongoDB collection (default ``ai_chat_memory``).

    Pass a ``pymongo`` ``Database``, or the ``MongoClient`` plus ``database_name``
    (or a client whose URL names a database); the client is never closed by us.
    ``from_url`` builds (and ``close`` closes) a client of its own.
    """

    capabilities = frozenset({Capability.TTL})
    layouts: ClassVar[dict[str, Any]] = {}
    """The other layouts ``from_url(url, layout=...)`` builds, by name (``"spring-ai"``:
    ``SpringAiMongoChatMemoryRepository``, registered by its module)."""

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
        self._expressions = True  # expression projections bound reads (see _find_bounded)
        self._schema_check = SchemaCheck(
            self._missing_indexes, f"collection {self.database.name}.{collection_name}"
        )
        if self.config.initialize_schema == "always":
            self.create_schema()

    @classmethod
    def from_url(
        cls, url: str, *, client_options: dict[str, Any] | None = None, **options: Any
    ) -> MongoChatMemoryRepository:
        """Build from ``mongodb://host:port/dbname`` (the URL must name the database).
        ``layout="spring-ai"`` (or a ``layout=spring-ai`` URL query parameter) builds Spring
        AI's layout instead."""
        url, layout = split_layout(url, options)
        if layout != "chatmem":
            return cls.layouts[layout].from_url(  # type: ignore[no-any-return]
                url, client_options=client_options, **options
            )
        if not url.startswith(_URL_SCHEMES):
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
        """The index commands for ``options``, built without a connection (Spring's index
        for ``layout="spring-ai"``)."""
        url, layout = split_layout(url, options)
        if layout != "chatmem":
            return cls.layouts[layout].schema_statements_for_url(url, **options)  # type: ignore[no-any-return]
        if not url.startswith(_URL_SCHEMES):
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
        self._schema_check()
        with translate_errors("read conversation"):
            doc = self.collection.find_one({ID: cid})
        if doc is None:
            return []
        check_document(doc, cid, self.collection.name)
        if doc.get(VERSION) != LAYOUT_VERSION:  # layout 1: every message in one array
            return [from_document(d) for d in doc.get(MESSAGES) or ()]
        archive = doc.get(ARCHIVE) or {}
        others = [d for k in range(int(doc[ARCHIVED])) for d in archive.get(str(k)) or ()]
        others.extend(doc.get(MESSAGES) or ())
        return [from_document(d) for d in merge(doc.get(SYSTEMS) or (), others)]

    def _find_last(self, cid: str, n: int) -> list[Message]:
        found = self._read_last(cid, n, n)
        return [] if found is None else [from_document(d) for d in merge(*found)[-n:]]

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        found = self._read_last(cid, non_system_limit, None)
        return [] if found is None else [from_document(d) for d in merge(*found)]

    def _read_last(
        self, cid: str, n: int, systems: int | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """The last ``systems`` (every one when None) system documents and the last ``n``
        others, read with projections that fetch nothing more (plus, for a window longer
        than the stored tail, the newest archive chunks by name)."""
        projection = {
            **HEAD,
            SYSTEMS: 1 if systems is None else last(SYSTEMS, systems),
            MESSAGES: last(MESSAGES, n),
        }
        plain = {**HEAD, SYSTEMS: 1, MESSAGES: 1}  # the tail is at most 2 chunks long
        self._schema_check()
        while True:
            doc = self._find_bounded({ID: cid}, projection, plain)
            if doc is None:
                return None
            check_document(doc, cid, self.collection.name)
            if doc.get(VERSION) != LAYOUT_VERSION:  # layout 1: systems are inline
                snap = self._read(cid)
                if snap is None:
                    return None
                sys_docs, tail = list(snap.systems), list(snap.tail)
                return (sys_docs if systems is None else sys_docs[-systems:]), tail[-n:]
            tail = list(doc.get(MESSAGES) or ())[-n:]  # already sliced, unless read plain
            archived = int(doc[ARCHIVED])
            if len(tail) < n and archived:
                older = self._read_chunks(cid, doc[REVISION], archived, n - len(tail))
                if older is None:
                    continue  # another write landed between the two reads: read again
                tail = (older[1] + tail)[-n:]
            sys_docs = list(doc.get(SYSTEMS) or ())
            return (sys_docs if systems is None else sys_docs[-systems:]), tail

    # -- writes ------------------------------------------------------------------------
    def _save_all(self, cid: str, messages: list[Message]) -> None:
        systems, others = split(to_document(m, i) for i, m in enumerate(messages))
        plan = layout(None, systems, others)
        rev = new_rev()
        update = {
            "$set": {
                **conversation_fields(
                    cid, rev, len(messages), plan.systems, plan.tail, plan.archived
                ),
                ARCHIVE: archive_of(plan.new_chunks),
            },
            "$currentDate": {UPDATED_AT: True},
        }
        self._schema_check()
        with translate_errors("save conversation"):
            try:
                self.collection.update_one({ID: cid}, update, upsert=True)
            except DuplicateKeyError:  # two first writes raced; the second is now an update
                self.collection.update_one({ID: cid}, update, upsert=True)
        self._snapshots.put(
            cid,
            Snapshot(
                rev,
                len(messages),
                tuple(plan.systems),
                tuple(plan.tail),
                plan.archived,
                plan.archived,
            ),
        )

    def _delete(self, cid: str) -> None:
        self._snapshots.forget(cid)
        self._schema_check()
        with translate_errors("delete conversation"):
            self.collection.delete_one({ID: cid})
        self._snapshots.forget(cid)

    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        def change(snap: Snapshot | None) -> tuple[Layout, int]:
            start = 0 if snap is None else snap.next_position
            systems, others = split(to_document(m, start + i) for i, m in enumerate(messages))
            old_systems, old_tail = ((), ()) if snap is None else (snap.systems, snap.tail)
            plan = layout(snap, [*old_systems, *systems], [*old_tail, *others], trim_to=trim_to)
            return plan, start + len(messages)

        self._mutate(cid, change, "append", 0)

    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        def change(snap: Snapshot | None) -> tuple[Layout, int]:
            systems, tail = ((), ()) if snap is None else (snap.systems, snap.tail)
            start = 0 if snap is None else snap.next_position
            source = merge(systems, tail[-non_system_limit:])
            edit = plan([from_document(d) for d in source])
            gone, below = edit.delete_positions, edit.delete_non_system_below
            kept_systems = [d for d in systems if d[POSITION] not in gone]
            kept = [
                d
                for d in tail
                if d[POSITION] not in gone and (below is None or d[POSITION] >= below)
            ]
            new_systems, new = split(to_document(m, start + i) for i, m in enumerate(edit.append))
            # below is a position in the window read (or past it): every archived message,
            # older than the whole tail, is under it and goes with the archive
            drop = below is not None
            return (
                layout(snap, kept_systems + new_systems, kept + new, replace_archive=drop),
                start + len(edit.append),
            )

        self._mutate(cid, change, "edit window", non_system_limit)


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
