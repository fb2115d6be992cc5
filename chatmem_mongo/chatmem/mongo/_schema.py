"""The storage shape, defined once: one document per conversation, and its indexes.

::

    {
      "_id": <conversation id, str>,          # the lookup key (unique by construction)
      "conversation_id": <the same str>,      # readable name, first key of the position index
      "v": 1,                                 # layout version
      "rev": ObjectId,                        # new on every write: the compare-and-set token
      "next_position": int,                   # the next position to assign
      "updated_at": Date,                     # server clock at the last write: the TTL field
      "messages": [                           # oldest first, positions strictly increasing
        {"position": int, "created_at": Date, "created_at_us": int64, "type": "USER",
         "text": str|null, "metadata": {...}, "media": [...], "tool_calls": [...],
         "responses": [...]},
        ...
      ]
    }

Indexes: ``(conversation_id, messages.position)`` for queries by position, and, when a TTL is
configured, a TTL index on ``updated_at`` so an idle conversation expires whole. Indexes are
found by their keys, never by their generated names (servers name them differently).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo import ASCENDING
from pymongo.collection import Collection
from pymongo.errors import OperationFailure

LAYOUT_VERSION = 1

ID = "_id"
CONVERSATION_ID = "conversation_id"
VERSION = "v"
REVISION = "rev"
NEXT_POSITION = "next_position"
UPDATED_AT = "updated_at"
MESSAGES = "messages"

POSITION = "position"
CREATED_AT = "created_at"
CREATED_AT_US = "created_at_us"

POSITION_INDEX: list[tuple[str, int]] = [
    (CONVERSATION_ID, ASCENDING),
    (f"{MESSAGES}.{POSITION}", ASCENDING),
]
TTL_INDEX: list[tuple[str, int]] = [(UPDATED_AT, ASCENDING)]

# MongoDB error codes met while reconciling indexes concurrently with other processes.
_INDEX_NOT_FOUND = 27
_INDEX_CONFLICTS = frozenset({85, 86})  # IndexOptionsConflict, IndexKeySpecsConflict


def conversation_fields(
    cid: str, rev: Any, next_position: int, messages: list[dict[str, Any]]
) -> dict[str, Any]:
    """Every field of a conversation document except ``updated_at`` (set by the server)."""
    return {
        CONVERSATION_ID: cid,
        VERSION: LAYOUT_VERSION,
        REVISION: rev,
        NEXT_POSITION: next_position,
        MESSAGES: messages,
    }


def _key_of(index: Mapping[str, Any]) -> list[tuple[str, int]]:
    return [(str(k), int(v)) for k, v in index["key"].items()]


def index_commands(collection_name: str, ttl_seconds: int | None) -> list[str]:
    """The index commands ``ensure_indexes`` may run, as mongosh text."""
    position = ", ".join(f'"{k}": {v}' for k, v in POSITION_INDEX)
    commands = [f"db.getCollection({collection_name!r}).createIndex({{{position}}})"]
    if ttl_seconds is not None:
        commands.append(
            f"db.getCollection({collection_name!r}).createIndex("
            f'{{"{UPDATED_AT}": 1}}, {{"expireAfterSeconds": {ttl_seconds}}})'
        )
    return commands


def missing_indexes(collection: Collection[Any], ttl_seconds: int | None) -> list[str]:
    """The indexes ``ensure_indexes`` would create or change; empty when all match."""
    keys = {tuple(_key_of(ix)): ix for ix in collection.list_indexes()}
    missing = [] if tuple(POSITION_INDEX) in keys else ["position index"]
    ttl = keys.get(tuple(TTL_INDEX))
    expiry = None if ttl is None else ttl.get("expireAfterSeconds")
    if ttl_seconds is not None and (expiry is None or int(expiry) != ttl_seconds):
        missing.append(f"TTL index on {UPDATED_AT} ({ttl_seconds} s)")
    return missing


def ensure_indexes(collection: Collection[Any], ttl_seconds: int | None) -> None:
    """Create the position index; make the TTL index on ``updated_at`` match ``ttl_seconds``.

    A TTL index with another expiry is dropped and created again (as Spring AI does); with
    ``ttl_seconds`` None an existing TTL index is dropped. Safe to run from many processes at
    once: a concurrent drop or create of the same index is tolerated and re-checked. When
    everything already matches, this is one ``listIndexes`` and no DDL.
    """
    indexes = list(collection.list_indexes())
    if not any(_key_of(ix) == POSITION_INDEX for ix in indexes):
        collection.create_index(POSITION_INDEX)
    for attempt in range(10):
        if attempt:  # a concurrent creator changed the TTL index: look again
            indexes = list(collection.list_indexes())
        current = next((ix for ix in indexes if _key_of(ix) == TTL_INDEX), None)
        expiry = None if current is None else current.get("expireAfterSeconds")
        if current is not None and expiry is None:
            return  # a plain index on updated_at someone else made: not ours to drop
        if expiry is not None and int(expiry) == ttl_seconds:
            return
        if current is not None:
            try:
                collection.drop_index(current["name"])
            except OperationFailure as exc:
                if exc.code != _INDEX_NOT_FOUND:
                    raise
        if ttl_seconds is None:
            return
        try:
            collection.create_index(TTL_INDEX, expireAfterSeconds=ttl_seconds)
        except OperationFailure as exc:
            if exc.code not in _INDEX_CONFLICTS:
                raise
            continue  # another process created it with other options: look again
        return
