"""What the compare-and-set writes of both repository twins share, with no I/O: the snapshot
of a conversation document, the small LRU of the last snapshot per conversation, the
``rev`` token and the window trim done on documents."""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

CACHED_CONVERSATIONS = 256
CACHED_MESSAGES = 128
"""The snapshot cache keeps at most this many conversations of at most this many messages."""

_TYPE = "type"
_SYSTEM = "SYSTEM"


class Snapshot(NamedTuple):
    """A conversation document as read or written: the CAS token and the stored messages."""

    rev: Any
    next_position: int
    docs: tuple[dict[str, Any], ...]


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
            if len(snap.docs) > CACHED_MESSAGES:
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


def trim(docs: Sequence[dict[str, Any]], keep: int) -> list[dict[str, Any]]:
    """Every system document plus the newest ``keep`` others, in order (what
    ``window_source`` selects, done on documents so only those get decoded)."""
    others = [i for i, d in enumerate(docs) if d[_TYPE] != _SYSTEM]
    if len(others) <= keep:
        return list(docs)
    cut = others[-keep] if keep > 0 else len(docs)
    return [d for i, d in enumerate(docs) if i >= cut or d[_TYPE] == _SYSTEM]


def is_system(doc: dict[str, Any]) -> bool:
    return bool(doc[_TYPE] == _SYSTEM)


def foreign(cid: str, collection: str) -> str:
    """The SchemaError message for a document under ``cid`` that chatmem did not write."""
    return (
        f"document {cid!r} in collection {collection!r} is not a chatmem conversation "
        "(no rev/next_position): use a collection of its own for chat memory"
    )
