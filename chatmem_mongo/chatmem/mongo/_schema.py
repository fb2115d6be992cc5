"""The storage shape, defined once: one document per conversation, and its indexes.

::

    {
      "_id": <conversation id, str>,          # the lookup key (unique by construction)
      "conversation_id": <the same str>,      # readable name, first key of the position index
      "v": 2,                                 # layout version
      "rev": int,                             # new on every write: the compare-and-set token
      "next_position": int,                   # the next position to assign
      "updated_at": Date,                     # server clock at the last write: the TTL field
      "systems": [<message>, ...],            # every system message, oldest first
      "messages": [<message>, ...],           # the newest non-system messages (the tail)
      "archived": int,                        # how many archive chunks there are
      "archive": {"0": [<message> x CHUNK], "1": [...], ...}   # older non-system messages
    }

    <message> = {"position": int, "created_at": Date, "created_at_us": int64, "type": "USER",
                 "text": str|null, "metadata": {...}, "media": [...], "tool_calls": [...],
                 "responses": [...]}

Positions increase along ``archive.0``, ``archive.1``, ..., ``messages``; systems carry their
own positions, so the log is the merge of both by position. Every read names only what it
needs: the window reads the systems plus the last N of ``messages`` (an expression
projection), and a write reads the head, the systems and the tail, never the archive. The
tail holds at least ``CHUNK`` messages whenever there is an archive, so a window of up to
``CHUNK`` is served by the tail alone; a longer one adds the newest chunks by name.

Layout 1 (every message, systems included, in ``messages``; no ``systems``/``archive``) is
still read, in full, and rewritten as layout 2 by the next write.

Indexes: ``(conversation_id, messages.position)`` for queries by position, and, when a TTL is
configured, a TTL index on ``updated_at`` so an idle conversation expires whole. Indexes are
found by their keys, never by their generated names (servers name them differently). Creating
and checking them is I/O, in ``_async/schema_ops.py`` (and its generated sync twin).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo import ASCENDING

LAYOUT_VERSION = 2

ID = "_id"
CONVERSATION_ID = "conversation_id"
VERSION = "v"
REVISION = "rev"
NEXT_POSITION = "next_position"
UPDATED_AT = "updated_at"
MESSAGES = "messages"
SYSTEMS = "systems"
ARCHIVE = "archive"
ARCHIVED = "archived"

POSITION = "position"
CREATED_AT = "created_at"
CREATED_AT_US = "created_at_us"

POSITION_INDEX: list[tuple[str, int]] = [
    (CONVERSATION_ID, ASCENDING),
    (f"{MESSAGES}.{POSITION}", ASCENDING),
]
TTL_INDEX: list[tuple[str, int]] = [(UPDATED_AT, ASCENDING)]


def conversation_fields(
    cid: str,
    rev: Any,
    next_position: int,
    systems: list[dict[str, Any]],
    tail: list[dict[str, Any]],
    archived: int,
) -> dict[str, Any]:
    """The head, systems and tail of a conversation document (not ``archive`` nor
    ``updated_at``, which the server sets)."""
    return {
        CONVERSATION_ID: cid,
        VERSION: LAYOUT_VERSION,
        REVISION: rev,
        NEXT_POSITION: next_position,
        SYSTEMS: systems,
        MESSAGES: tail,
        ARCHIVED: archived,
    }


def key_of(index: Mapping[str, Any]) -> list[tuple[str, int]]:
    """An index's key as ``(field, direction)`` pairs (indexes are matched by key, not name)."""
    return [(str(k), int(v)) for k, v in index["key"].items()]


def index_commands(collection_name: str, ttl_seconds: int | None) -> list[str]:
    """The index commands ``ensure_indexes`` (``_indexes.py``) may run, as mongosh text."""
    position = ", ".join(f'"{k}": {v}' for k, v in POSITION_INDEX)
    commands = [f"db.getCollection({collection_name!r}).createIndex({{{position}}})"]
    if ttl_seconds is not None:
        commands.append(
            f"db.getCollection({collection_name!r}).createIndex("
            f'{{"{UPDATED_AT}": 1}}, {{"expireAfterSeconds": {ttl_seconds}}})'
        )
    return commands
