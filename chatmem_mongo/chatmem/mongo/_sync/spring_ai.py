# Generated from chatmem_mongo/chatmem/mongo/_async/spring_ai.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The Spring AI layout on MongoDB: chat memory in the documents Spring AI's
``MongoChatMemoryRepository`` reads and writes (shape: ``_native/spring_ai``), one per
message in ``ai_chat_memory``, so a Spring AI service and a Python one share conversations.

A standalone server has no multi-document transactions, so chatmem's writers serialise per
conversation through a lease in ``ai_chat_memory_lock`` (an insert with a unique ``_id``,
deleted when done; a crashed holder's lease expires after ``LEASE_MS``) and, while they
change documents, mark the conversation's sequence document busy. A reader reads the
sequence document, the messages, and the sequence document again, and retries when a writer
was busy or finished in between (a seqlock): chatmem readers see a replace or an append whole
or not at all. Spring's writers take neither (see docs/backends/mongodb.md#spring-ai-layout).
Every read is bounded: the window read takes the system messages and the last N others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pymongo import MongoClient
from pymongo.errors import ConfigurationError
from pymongo.synchronous.collection import Collection
from pymongo.synchronous.database import Database

from chatmem.core import Message
from chatmem.core.backend import (
    BaseChatMemoryRepository,
    ConversationIdPage,
    InvalidArgumentError,
    OwnedClientMixin,
    WindowEdit,
    add_to_window,
    owning,
    schema_mode,
    split_layout,
    spring_ai_lossy,
    spring_ai_storable,
    stamp,
    validate_messages,
    validate_positive_int,
)

from .._errors import translate_errors
from .._native.spring_ai import (
    COLLECTION,
    HOLDS,
    INDEX,
    INDEX_KEYS,
    LOCK_COLLECTION,
    NEWEST_FIRST,
    ORDER,
    decode,
    encode,
    index_command,
    ms_of,
    older_than,
    ordered,
    storable_metadata,
)
from .leases import ConversationLeases
from .repository import _URL_SCHEMES, MongoChatMemoryRepository, _database_of

NOT_SYSTEM = {"message.type": {"$ne": "SYSTEM"}}
SCHEMA_MODES = ("embedded", "always", "never")
"""``embedded``: nothing to create on a server (as Spring's repository and Boot's default)."""


class SpringAiMongoChatMemoryRepository(
    ConversationLeases, OwnedClientMixin, BaseChatMemoryRepository
):
    """Chat memory in Spring AI's MongoDB documents, readable and writable by Spring AI's
    ``MongoChatMemoryRepository`` at the same time.

    Pass a ``pymongo`` ``Database`` or ``MongoClient`` (plus ``database_name``;
    never closed by us) or use ``from_url`` (or ``MongoChatMemoryRepository.from_url(url,
    layout="spring-ai")``). ``initialize_schema``: ``"embedded"`` (the default) and
    ``"never"`` create nothing, as Spring's repository; ``"always"`` creates Spring Boot's
    ``create-indices`` index. ``lossy``: what a write may drop (tool calls, tool responses,
    media, metadata the documents cannot hold); otherwise refused by name.
    """

    schema_statement_terminator = ""

    def __init__(
        self,
        client: MongoClient[Any] | Database[Any],
        *,
        database_name: str | None = None,
        initialize_schema: Any = "embedded",
        lossy: Iterable[str] = (),
    ) -> None:
        self.lossy = spring_ai_lossy(lossy)
        self.initialize_schema = schema_mode(initialize_schema, SCHEMA_MODES)
        self.database = _database_of(client, database_name)
        self.collection: Collection[dict[str, Any]] = self.database[COLLECTION]
        self.locks: Collection[dict[str, Any]] = self.database[LOCK_COLLECTION]
        if self.initialize_schema == "always":
            self.create_schema()

    @classmethod
    def from_url(
        cls, url: str, *, client_options: dict[str, Any] | None = None, **options: Any
    ) -> SpringAiMongoChatMemoryRepository:
        """Build from ``mongodb://host:port/dbname`` as the chatmem layout does."""
        url, _ = split_layout(url, options)
        if not url.startswith(_URL_SCHEMES):
            raise InvalidArgumentError("url", "must be a mongodb:// or mongodb+srv:// URL")
        spring_ai_lossy(options.get("lossy", ()))
        try:
            client: MongoClient[Any] = MongoClient(url, **(client_options or {}))
        except (ConfigurationError, TypeError, ValueError) as exc:
            raise InvalidArgumentError("url", f"is not a usable MongoDB URL: {exc}") from exc

        def build() -> SpringAiMongoChatMemoryRepository:
            repo = cls(client, **options)
            return repo

        return owning(client, client.close, build)

    # -- schema ---------------------------------------------------------------------------
    def schema_statements(self) -> list[str]:
        """Spring Boot's index on ``(conversationId, timestamp desc)``, as mongosh text."""
        return [index_command()]

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """The same, built without a connection."""
        url, _ = split_layout(url, options)
        if not url.startswith(_URL_SCHEMES):
            raise InvalidArgumentError("url", "must be a mongodb:// or mongodb+srv:// URL")
        return [index_command()]

    def create_schema(self) -> None:
        """Create that index when missing (what ``create-indices=true`` gives)."""
        with translate_errors("create the Spring AI index"):
            self.collection.create_index(list(INDEX_KEYS), name=INDEX)

    def _initialize(self) -> None:
        self.create_schema()

    # -- writes: refuse what the layout does not store, before any I/O -------------------
    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace the history under the conversation's lock (readers see it whole)."""
        super().save_all(conversation_id, self._storable(messages))

    def append(self, conversation_id: str, messages: Sequence[Message] | Message) -> None:
        """Append after the newest message, under the conversation's lock."""
        super().append(conversation_id, self._storable(messages))

    def window_add(
        self,
        conversation_id: str,
        messages: Sequence[Message] | Message,
        max_messages: int,
        *,
        keep_history: bool = False,
    ) -> None:
        """Add under the window rule and store exactly the window, as Spring's
        ``MessageWindowChatMemory`` does; ``keep_history`` keeps every message instead."""
        kept = self._storable(messages)
        if keep_history:
            super().window_add(conversation_id, kept, max_messages, keep_history=True)
            return
        cid = self._cid(conversation_id)
        msgs = validate_messages(kept)
        validate_positive_int(max_messages, "max_messages")
        if not msgs:
            return
        if self._init_pending:
            self._ensure_initialized()
        self._store_window(cid, stamp(msgs), max_messages)

    def _storable(self, messages: Sequence[Message] | Message) -> list[Message]:
        if messages is None or isinstance(messages, str | bytes):
            return messages  # the base class names the error
        listed = [messages] if isinstance(messages, Message) else list(messages)
        return spring_ai_storable(storable_metadata(listed, self.lossy), self.lossy, holds=HOLDS)

    # -- hooks ----------------------------------------------------------------------------
    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        match = {"conversationId": {"$gt": after} if after is not None else {"$gte": ""}}
        pipeline: list[dict[str, Any]] = [
            {"$match": match},
            {"$group": {"_id": "$conversationId"}},
            {"$sort": {"_id": 1}},
            {"$limit": limit + 1},
        ]
        with translate_errors("list conversations"):
            rows = (self.collection.aggregate(pipeline)).to_list()
        ids = [str(r["_id"]) for r in rows[:limit]]
        return ConversationIdPage(ids, ids[-1] if len(rows) > limit else None)

    def _find(self, cid: str) -> list[Message]:
        def read() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = (
                self.collection.find({"conversationId": cid}).sort(ORDER).to_list()
            )
            return found

        return decode(self._guarded(cid, read))

    def _find_last(self, cid: str, n: int) -> list[Message]:
        def read() -> list[dict[str, Any]]:
            cursor = self.collection.find({"conversationId": cid}).sort(NEWEST_FIRST).limit(n)
            return list(reversed(cursor.to_list()))

        return decode(self._guarded(cid, read))

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        return decode(self._guarded(cid, lambda: self._window_docs(cid, non_system_limit)))

    def _save_all(self, cid: str, messages: list[Message]) -> None:
        def change() -> None:
            self.collection.delete_many({"conversationId": cid})
            self._insert(cid, messages, None)

        self._locked(cid, change, "save_all")

    def _delete(self, cid: str) -> None:
        def change() -> None:
            self.collection.delete_many({"conversationId": cid})

        self._locked(cid, change, "delete", deleting=True)

    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        def change() -> None:
            self._insert(cid, messages)
            if trim_to is not None:
                skip = {"conversationId": cid, **NOT_SYSTEM}
                cursor = self.collection.find(skip).sort(NEWEST_FIRST).skip(trim_to).limit(1)
                for doc in cursor.to_list():  # the newest one over ``trim_to``, and older
                    gone = {"$or": [older_than(doc), {"_id": doc["_id"]}]}
                    self._remove(cid, [], None, gone)

        self._locked(cid, change, "append")

    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        def change() -> None:
            docs = self._window_docs(cid, non_system_limit)
            edit = plan(decode(docs, local=True))
            gone = [docs[p]["_id"] for p in edit.delete_positions if 0 <= p < len(docs)]
            below = edit.delete_non_system_below
            cut: dict[str, Any] | None = None
            if below is not None:  # every non-system message before the cut, or all of them
                cut = older_than(docs[below]) if below < len(docs) else {}
            self._remove(cid, gone, None, cut)
            self._insert(cid, list(edit.append))

        self._locked(cid, change, "edit window")

    def _store_window(self, cid: str, new: list[Message], max_messages: int) -> None:
        """Store ``add_to_window(stored window, new, max_messages)``: delete only what leaves
        the window, insert only what is new."""

        def change() -> None:
            docs = self._window_docs(cid, max_messages + 1)
            old = decode(docs, local=True)
            result = add_to_window(old, new, max_messages)
            stay = {m.position for m in result if any(m is o for o in old)}
            gone = [d["_id"] for i, d in enumerate(docs) if i not in stay]
            self._remove(cid, gone, _first_other(docs))
            self._insert(cid, [m for m in result if not any(m is o for o in old)])

        self._locked(cid, change, "window add")

    def _append_and_load_window(
        self, cid: str, messages: list[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message]:
        if trim_to is not None:  # window_add_and_get: store exactly the window, as window_add
            self._store_window(cid, messages, trim_to - 1)
        else:
            self._append(cid, messages, None)
        return self._load_window(cid, non_system_limit)

    # -- I/O ------------------------------------------------------------------------------
    def _window_docs(self, cid: str, others: int) -> list[dict[str, Any]]:
        """Every system document and the last ``others`` non-system ones, in order."""
        systems = self.collection.find({"conversationId": cid, "message.type": "SYSTEM"})
        tail = self.collection.find({"conversationId": cid, **NOT_SYSTEM})
        return ordered(
            [
                *systems.sort(ORDER).to_list(),
                *tail.sort(NEWEST_FIRST).limit(others).to_list(),
            ]
        )

    def _insert(self, cid: str, messages: Sequence[Message], after: Any = ...) -> None:
        """Insert ``messages`` stamped after the newest document (or after ``after`` ms)."""
        if not messages:
            return
        if after is ...:
            newest = self.collection.find_one({"conversationId": cid}, sort=NEWEST_FIRST)
            after = None if newest is None else ms_of(newest)
        self.collection.insert_many(encode(cid, messages, after))

    def _remove(
        self,
        cid: str,
        ids: list[Any],
        first_other: dict[str, Any] | None,
        older: dict[str, Any] | None = None,
    ) -> None:
        """Delete the documents ``ids``, the non-system ones before ``first_other`` (outside
        a window read) and the non-system ones matching ``older``."""
        if ids:
            self.collection.delete_many({"_id": {"$in": ids}})
        for before in (older_than(first_other) if first_other else None, older):
            if before is not None:
                self.collection.delete_many({"conversationId": cid, **NOT_SYSTEM, **before})


def _first_other(docs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The oldest non-system document of a window read (older ones were not read)."""
    return next((d for d in docs if d["message"].get("type") != "SYSTEM"), None)


# the layout ``MongoChatMemoryRepository.from_url(url, layout="spring-ai")`` builds
MongoChatMemoryRepository.layouts["spring-ai"] = SpringAiMongoChatMemoryRepository
