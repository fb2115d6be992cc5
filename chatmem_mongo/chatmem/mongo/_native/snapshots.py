"""What the compare-and-set writes of both repository twins share, with no I/O: the snapshot
of a conversation document (its head, systems and tail, never the archive), the small LRU of
the last snapshot per conversation, the ``rev`` token, the projections that bound every read,
and the layout of a write (the trim, and the tail cut into archive chunks)."""

from __future__ import annotations

import heapq
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, NamedTuple

from .._schema import ARCHIVE, POSITION

CACHED_CONVERSATIONS = 256
CACHED_MESSAGES = 128
"""The snapshot cache keeps at most this many conversations of at most this many messages."""

CHUNK = 32
"""Messages per archive chunk. A write cuts the tail once it reaches ``2 * CHUNK``, so the
tail a write reads (or the cache holds) stays under ``2 * CHUNK`` and over ``CHUNK - 1``
whenever an archive exists."""

_TYPE = "type"
_SYSTEM = "SYSTEM"


Doc = dict[str, Any]


class Snapshot(NamedTuple):
    """What a write starts from: the CAS token, every system document, the tail of
    non-system documents, and the archive chunks ``0..archived-1`` it leaves as they are.
    Chunks ``archived..chunks-1`` also exist on the server but were read into ``tail``
    (a window longer than the stored tail), so a write rewrites or removes them."""

    rev: Any
    next_position: int
    systems: tuple[Doc, ...]
    tail: tuple[Doc, ...]
    archived: int = 0
    chunks: int = 0

    @property
    def size(self) -> int:
        return len(self.systems) + len(self.tail)


class Layout(NamedTuple):
    """One write: the new systems and tail, the chunks it adds (by index), the chunk keys it
    removes, and whether the whole archive is replaced by ``new_chunks``."""

    systems: list[Doc]
    tail: list[Doc]
    archived: int
    new_chunks: dict[int, list[Doc]]
    unset_chunks: list[int]
    replace_archive: bool

    @property
    def empty(self) -> bool:
        return not self.systems and not self.tail and self.archived == 0


def layout(
    base: Snapshot | None,
    systems: list[Doc],
    tail: list[Doc],
    *,
    trim_to: int | None = None,
    replace_archive: bool = False,
) -> Layout:
    """Lay out a write of ``systems`` and ``tail`` (the non-systems after the chunks ``base``
    keeps). With ``trim_to`` the tail keeps its newest ``trim_to`` and the archive goes,
    when the tail alone holds that many; a tail of ``2 * CHUNK`` or more is cut into
    chunks of ``CHUNK`` from its oldest end."""
    archived = 0 if base is None or replace_archive else base.archived
    existing = 0 if base is None else max(base.chunks, base.archived)
    if trim_to is not None and len(tail) >= trim_to:
        tail = tail[-trim_to:]
        archived, replace_archive = 0, True
    new_chunks: dict[int, list[Doc]] = {}
    while len(tail) >= 2 * CHUNK and trim_to is None:
        new_chunks[archived], tail = tail[:CHUNK], tail[CHUNK:]
        archived += 1
    unset = [] if replace_archive else [k for k in range(archived, existing) if k not in new_chunks]
    return Layout(systems, tail, archived, new_chunks, unset, replace_archive or base is None)


def merge(systems: Iterable[Doc], others: Iterable[Doc]) -> list[Doc]:
    """Systems and non-systems in log order (both are in position order)."""
    return list(heapq.merge(systems, others, key=lambda d: int(d[POSITION])))


def last(field: str, n: int) -> dict[str, Any]:
    """An expression projection of the last ``n`` elements of array ``field``. Expression
    form (MongoDB 4.4+), inside ``$let`` so no server can read it as find's own ``$slice``
    projection, which nx-27017 rejects ("$slice requires array and count/position")."""
    return {"$let": {"vars": {"a": f"${field}"}, "in": {"$slice": ["$$a", -n]}}}


def chunk_field(k: int) -> str:
    return f"c{k}"


def chunks_projection(first: int, end: int) -> dict[str, str]:
    """Archive chunks ``first..end-1``, each as a top-level field ``c<k>`` (an expression
    projection: nx-27017 returns a dotted inclusion as a flat ``"archive.k"`` key, MongoDB
    as a nested document; both return ``{"c3": "$archive.3"}`` the same way)."""
    return {chunk_field(k): f"${ARCHIVE}.{k}" for k in range(first, end)}


def split(docs: Iterable[Doc]) -> tuple[list[Doc], list[Doc]]:
    """Layout-1 ``messages`` (systems inline) as (systems, non-systems)."""
    systems: list[Doc] = []
    others: list[Doc] = []
    for d in docs:
        (systems if d[_TYPE] == _SYSTEM else others).append(d)
    return systems, others


class SnapshotCache:
    """The last snapshot read or written per conversation: a hint, since every write is still
    checked against ``rev``. The lock is held for a few dict operations and never across I/O,
    so it serves threads (sync twin) and never stalls an event loop (async twin)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshots: OrderedDict[str, Snapshot] = OrderedDict()

    def get(self, cid: str) -> Snapshot | None:
        with self._lock:
            snap = self._snapshots.get(cid)
            if snap is not None:
                self._snapshots.move_to_end(cid)
            return snap

    def put(self, cid: str, snap: Snapshot) -> None:
        with self._lock:
            if snap.size > CACHED_MESSAGES:
                self._snapshots.pop(cid, None)
                return
            self._snapshots[cid] = snap
            self._snapshots.move_to_end(cid)
            while len(self._snapshots) > CACHED_CONVERSATIONS:
                self._snapshots.popitem(last=False)

    def forget(self, cid: str) -> None:
        with self._lock:
            self._snapshots.pop(cid, None)


def new_rev() -> int:
    """A fresh compare-and-set token: random, so a deleted and re-created document never
    repeats the token a stale writer holds (an int: the stand-in cannot match ObjectIds)."""
    return secrets.randbits(63)


def is_system(doc: dict[str, Any]) -> bool:
    return bool(doc[_TYPE] == _SYSTEM)


def foreign(cid: str, collection: str) -> str:
    """The SchemaError message for a document under ``cid`` that chatmem did not write."""
    return (
        f"document {cid!r} in collection {collection!r} is not a chatmem conversation "
        "(no rev/next_position): use a collection of its own for chat memory"
    )
