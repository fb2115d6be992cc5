"""The Spring AI layout's pure parts on MongoDB: the documents Spring AI's
``MongoChatMemoryRepository`` (1.1 and 2.0 share them) reads and writes, their order, what
of a message they can hold, and the side documents chatmem's writers coordinate through (the
repository is ``_async/spring_ai.py``).

::

    ai_chat_memory       {_id: ObjectId, conversationId, timestamp: date (ms),
                          message: {content, type: USER|ASSISTANT|SYSTEM|TOOL, metadata},
                          _class: CLASS}
    ai_chat_memory_lock  {_id: "lock:<id>", owner, expires}   a writer's lease (chatmem only)
                         {_id: "seq:<id>", token, busy, expires}  the seqlock readers check

``timestamp`` is the only order Spring has: chatmem writes strictly increasing milliseconds
per conversation and reads by ``(timestamp, _id)`` (``_id`` orders Spring's same-millisecond
inserts, whose ObjectIds one process generates in insertion order). Side-document times are
integer milliseconds (the nx-27017 stand-in turns a ``$set`` date into a string).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from bson import ObjectId

from chatmem.core import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import InvalidArgumentError, from_micros, to_micros

COLLECTION = "ai_chat_memory"
"""Spring's ``@Document`` name (not configurable in Spring's repository)."""
LOCK_COLLECTION = "ai_chat_memory_lock"
CLASS = "org.springframework.ai.chat.memory.repository.mongo.Conversation"
INDEX = "conversationId_1_timestamp_-1"
INDEX_KEYS = (("conversationId", 1), ("timestamp", -1))
"""Spring Boot's ``create-indices=true`` index (the repository itself creates none)."""
HOLDS = frozenset({"metadata"})
"""What this layout stores (the rest of ``SPRING_AI_LOSSY`` is refused unless named)."""
TYPE_KEY = "messageType"
"""The metadata key Spring's messages add themselves (read back, it is dropped)."""
LEASE_MS = 30_000
"""How long a writer's lock and busy mark hold before another writer or reader may ignore
them (a crashed writer frees its conversation after this)."""
ORDER = [("timestamp", 1), ("_id", 1)]
NEWEST_FIRST = [("timestamp", -1), ("_id", -1)]
_INT64 = (-(2**63), 2**63 - 1)
_TYPES: dict[str, Any] = {
    "USER": UserMessage,
    "ASSISTANT": AssistantMessage,
    "SYSTEM": SystemMessage,
}


def lock_key(cid: str) -> str:
    return f"lock:{cid}"


def seq_key(cid: str) -> str:
    return f"seq:{cid}"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_token() -> str:
    return uuid.uuid4().hex


def busy(seq: dict[str, Any] | None, now: int) -> bool:
    """Whether a writer is between its first and last change (its lease not yet over)."""
    return seq is not None and bool(seq.get("busy")) and int(seq.get("expires", 0)) > now


def metadata_problem(value: Any, path: str = "metadata") -> str | None:
    """Why Spring's document cannot hold ``value`` as it is (None when it can): Spring Data
    refuses map keys with ``.``, MongoDB field names starting with ``$``, BSON ints beyond
    64 bits, and ``messageType`` is Spring's own key."""
    if isinstance(value, dict):
        for k, v in value.items():
            if path == "metadata" and k == TYPE_KEY:
                return f"key {k!r} is Spring's own"
            if "." in k or k.startswith("$"):
                return f"key {k!r} has a '.' or starts with '$'"
            found = metadata_problem(v, f"{path}.{k}")
            if found:
                return found
    elif isinstance(value, list):
        for v in value:
            found = metadata_problem(v, path)
            if found:
                return found
    elif isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        return f"{path} is beyond BSON's 64-bit integers"
    return None


def storable_metadata(messages: list[Message], lossy: frozenset[str]) -> list[Message]:
    """``messages`` with metadata the documents can hold: otherwise refused, naming the
    element and why, unless ``"metadata"`` is in ``lossy`` (then that metadata is dropped)."""
    out = []
    for i, m in enumerate(messages):
        problem = metadata_problem(m.metadata) if isinstance(m, Message) else None
        if problem is not None:
            if "metadata" not in lossy:
                raise InvalidArgumentError(
                    f"messages[{i}]",
                    f"the spring-ai layout cannot store its metadata: {problem}"
                    " (pass lossy=('metadata',) to drop it)",
                )
            m = dataclasses.replace(m, metadata={})
        out.append(m)
    return out


def timestamps(messages: Sequence[Message], last: int | None) -> list[int]:
    """Strictly increasing milliseconds after ``last``: each message's own creation time
    when later than the one before, else one millisecond after it."""
    out = []
    prev = last
    for m in messages:
        own = to_micros(m.created_at) // 1000 if m.created_at is not None else now_ms()
        prev = own if prev is None or own > prev else prev + 1
        out.append(prev)
    return out


def as_date(ms: int) -> datetime:
    return from_micros(ms * 1000)


def ms_of(doc: dict[str, Any]) -> int:
    return to_micros(_aware(doc["timestamp"])) // 1000


def encode(cid: str, messages: Sequence[Message], last: int | None) -> list[dict[str, Any]]:
    """Spring's documents for ``messages``, stamped after ``last`` (ms, or None)."""
    out = []
    for m, ms in zip(messages, timestamps(messages, last), strict=True):
        text = "" if isinstance(m, ToolResponseMessage) else (m.text or "")
        out.append(
            {
                "_id": ObjectId(),
                "conversationId": cid,
                "message": {
                    "content": text,
                    "type": m.message_type.value,
                    "metadata": {**m.metadata, TYPE_KEY: m.message_type.value},
                },
                "timestamp": as_date(ms),
                "_class": CLASS,
            }
        )
    return out


def decode(docs: Sequence[dict[str, Any]], local: bool = False) -> list[Message]:
    """Documents (in order) as messages, created at their ``timestamp``; positioned by it
    (milliseconds: Spring has no sequence), or by index in ``docs`` when ``local``."""
    out: list[Message] = []
    for i, doc in enumerate(docs):
        body = doc.get("message") or {}
        kind = body.get("type")
        metadata = {k: _plain(v) for k, v in (body.get("metadata") or {}).items() if k != TYPE_KEY}
        if kind == "TOOL":
            msg: Message = ToolResponseMessage((), metadata=metadata)
        elif kind in _TYPES:
            msg = _TYPES[kind](body.get("content") or "", metadata=metadata)
        else:
            raise InvalidArgumentError("message.type", f"unknown Spring message type {kind!r}")
        ms = ms_of(doc)
        out.append(msg.with_store_fields(created_at=as_date(ms), position=i if local else ms))
    return out


def older_than(doc: dict[str, Any]) -> dict[str, Any]:
    """The filter of documents before ``doc`` in ``(timestamp, _id)`` order."""
    ts = doc["timestamp"]
    return {"$or": [{"timestamp": {"$lt": ts}}, {"timestamp": ts, "_id": {"$lt": doc["_id"]}}]}


def ordered(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(docs, key=lambda d: (ms_of(d), d["_id"]))


def index_command() -> str:
    """``create_schema``'s one command, as mongosh text."""
    keys = ", ".join(f'"{k}": {v}' for k, v in INDEX_KEYS)
    return f"db.getCollection({COLLECTION!r}).createIndex({{{keys}}})"


def _aware(ts: Any) -> datetime:
    if not isinstance(ts, datetime):
        raise InvalidArgumentError("timestamp", f"is not a date in a Spring document: {ts!r}")
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


def _plain(value: Any) -> Any:
    """A metadata value Spring wrote as JSON (dates as ISO text, other BSON values as str)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return _aware(value).isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
