"""Messages to Cassandra values and back.

A message's content (every field of every kind) travels in core's one JSON wire format; the
kind is also kept in its own column for people reading the table. ``created_at`` is integer
microseconds since the epoch (CQL ``timestamp`` has only milliseconds). Callers see positions
relative to the conversation's ``origin``.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from chatmem.core import InvalidArgumentError, Message, message_from_dict
from chatmem.core.backend import encode_json, from_micros, to_micros

SystemEntry = tuple[int, str]
"""A value of the ``system_messages`` map: (created_at microseconds, content JSON)."""


@dataclass(frozen=True)
class StoredRow:
    """One non-system message row as read (absolute position)."""

    position: int
    message_type: str
    content: str
    created_at: int


def row_values(message: Message) -> tuple[str, str, int]:
    """(message_type, content, created_at) of a non-system row."""
    assert message.created_at is not None
    return message.message_type.value, encode_json(message), to_micros(message.created_at)


def system_entry(message: Message) -> SystemEntry:
    """The ``system_messages`` map value of a system message."""
    assert message.created_at is not None
    return to_micros(message.created_at), encode_json(message)


DECODE_CACHE_SIZE = 4096
DECODE_CACHE_MAX_CHARS = 4096
"""Decoded messages remembered per repository, and the largest content remembered."""


class Decoder:
    """Stored values to messages, remembering recent ones: messages are immutable, so the rows
    a window shows on every read are decoded once, not on every read."""

    def __init__(self, size: int = DECODE_CACHE_SIZE) -> None:
        self._size = size
        self._cache: OrderedDict[tuple[int, int, str], Message] = OrderedDict()
        self._lock = threading.Lock()

    def decode(self, position: int, created_at: int, content: str) -> Message:
        key = (position, created_at, content)
        with self._lock:
            message = self._cache.get(key)
            if message is not None:
                self._cache.move_to_end(key)
                return message
        message = message_from_dict(
            json.loads(content),
            created_at=from_micros(created_at),
            position=position,
            trusted=True,
        )
        if len(content) <= DECODE_CACHE_MAX_CHARS:
            with self._lock:
                self._cache[key] = message
                if len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        return message

    def merge_log(
        self,
        rows: Iterable[StoredRow],
        systems: Mapping[int, SystemEntry] | None,
        origin: int | None,
    ) -> list[Message]:
        """Rows (any order) and the system map, as messages in position order."""
        base = origin or 0
        items: list[tuple[int, int, str]] = [(r.position, r.created_at, r.content) for r in rows]
        items.extend((p, ts, content) for p, (ts, content) in (systems or {}).items())
        items.sort(key=lambda item: item[0])
        return [self.decode(p - base, ts, content) for p, ts, content in items]


def encode_cursor(item: tuple[int, str]) -> str:
    """An opaque listing cursor for (token, conversation id)."""
    raw = json.dumps([item[0], item[1]], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def decode_cursor(after: str) -> tuple[int, str]:
    """Inverse of ``encode_cursor``; anything else is an InvalidArgumentError."""
    try:
        token, cid = json.loads(base64.urlsafe_b64decode(after.encode("ascii")))
        if isinstance(token, int) and not isinstance(token, bool) and isinstance(cid, str):
            return token, cid
    except (ValueError, TypeError, UnicodeError):
        pass
    raise InvalidArgumentError("after", "is not a cursor returned by a previous page")
