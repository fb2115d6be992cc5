"""``DecodeCache``: decoded messages by the exact stored bytes, for a store's read path.

A window read returns mostly the same rows turn after turn; decoding each again (JSON, then
message objects) is most of a read's client time. A row's stored form (payload plus its
store-assigned fields) fully determines the decoded message, and messages are immutable all
the way down (core freezes metadata), so serving a cached object can never show stale or
shared-mutable data: a replaced or concurrently written row has other bytes, hence another key.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from datetime import timezone
from functools import partial
from typing import TypeVar

from ._messages import Message, MessageType

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

DEFAULT_DECODE_CACHE_SIZE = 4096

REMEMBERED_TAIL = 256
"""Messages of a replace that a store caches (its newest: what the next read wants)."""


class DecodeCache:
    """At most ``size`` decoded values by key; the oldest goes first when full.

    ``get(key, decode)`` returns the cached value or ``decode()``'s, stored under ``key``. Use
    a key made only of what was read (payload text or bytes, position, the raw timestamp),
    never of anything the caller can change. Safe under threads (dict operations are atomic;
    a race decodes twice, harmlessly)."""

    __slots__ = ("_data", "_size")

    def __init__(self, size: int = DEFAULT_DECODE_CACHE_SIZE) -> None:
        self._size = size
        self._data: dict[Hashable, object] = {}

    def get(self, key: Hashable, decode: Callable[[], T]) -> T:
        data = self._data
        hit = data.get(key)
        if hit is not None:
            return hit  # type: ignore[return-value]
        value = decode()
        if len(data) >= self._size:
            try:
                del data[next(iter(data))]
            except (KeyError, StopIteration, RuntimeError):
                data.clear()  # another thread changed it mid-eviction: start afresh
        data[key] = value
        return value

    def get_many(self, keys: Iterable[K], decode: Callable[[K], T]) -> list[T]:
        """``[get(k, lambda: decode(k)) for k in keys]`` without a call per hit: a window
        read is mostly hits, and their lookups were a fifth of its client time."""
        hit = self._data.get
        out: list[T] = []
        for key in keys:
            value = hit(key)
            out.append(value if value is not None else self.get(key, partial(decode, key)))  # type: ignore[arg-type]
        return out

    def put_written(self, key: Hashable, message: Message, position: int) -> None:
        """Cache ``message``, which this store just wrote at ``position``, under ``key``: the
        stored form a read will return for it (so the next read decodes nothing). Only UTC
        timestamps: a read returns UTC, so another zone would be an equal message that
        prints differently."""
        created = message.created_at
        if created is not None and created.tzinfo is timezone.utc:
            stored = message.with_store_fields(created_at=created, position=position)
            self.get(key, partial(_same, stored))

    def clear(self) -> None:
        self._data.clear()


def remembered(messages: Sequence[Message], tail: int = REMEMBERED_TAIL) -> list[int]:
    """Indexes of what a store caches after replacing a history with ``messages``: the
    newest ``tail`` and every system message, i.e. what the next window read returns (a
    whole import would only push the cache's other entries out)."""
    start = max(0, len(messages) - tail)
    head = [i for i in range(start) if messages[i].message_type is MessageType.SYSTEM]
    return [*head, *range(start, len(messages))]


def _same(value: T) -> T:
    return value
