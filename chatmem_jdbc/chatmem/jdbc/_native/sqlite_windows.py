"""SQLite's window cache: the windows last read or written on a fast path's kept connection,
served again without a read for as long as that connection proves the database unchanged.

SQLite says whether anything changed since a connection last looked: ``PRAGMA
data_version`` changes when any other connection (another thread's, another process's)
commits, and the connection's own ``total_changes`` counts the rows it changed itself. While
both hold still, every cached window is the database's; when either moved, every window is
dropped, except that a commit of the cache's own append (checked inside that append's
``BEGIN IMMEDIATE``, where no other writer can commit) extends its conversation's windows with
what it appended. Windows are only cached and checked on the kept connection: a pooled
connection's writes are another connection's, seen through ``data_version``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

from chatmem.core import Message, MessageType

WINDOW_CACHE_CONVERSATIONS = 1024
"""Conversations whose windows are kept (the least recently used goes first)."""


class SqliteWindows:
    """Windows by conversation id and non-system limit, valid while the kept connection's
    ``(data_version, total_changes)`` is what it was when they were cached.

    Every method takes the connection its caller runs on and does nothing for any connection
    but the one the cache follows: a cancelled async call's job runs on to its end on a
    connection already replaced, and must not touch the windows of the new one."""

    def __init__(self, size: int = WINDOW_CACHE_CONVERSATIONS) -> None:
        self.size = size
        self.conn: sqlite3.Connection | None = None
        self.version = -1
        self.changes = -1
        self.windows: dict[str, dict[int, list[Message]]] = {}
        self.lock = threading.Lock()  # such a job and the new holder run on two threads

    def current(self, raw: sqlite3.Connection) -> bool:
        """Whether the cached windows are still the database's as ``raw`` sees it now; if not,
        they are dropped and the cache follows ``raw`` from its present state."""
        version = raw.execute("PRAGMA data_version").fetchone()[0]
        changes = raw.total_changes
        with self.lock:
            if raw is self.conn and version == self.version and changes == self.changes:
                return True
            self.windows.clear()
            self.conn, self.version, self.changes = raw, version, changes
            return False

    def get(self, raw: sqlite3.Connection, cid: str, limit: int) -> list[Message] | None:
        """A copy of the cached window (after ``current`` said True)."""
        with self.lock:
            by_limit = self.windows.pop(cid, None) if raw is self.conn else None
            if by_limit is None:
                return None
            self.windows[cid] = by_limit  # most recently used
            window = by_limit.get(limit)
            return None if window is None else list(window)

    def put(self, raw: sqlite3.Connection, cid: str, limit: int, window: list[Message]) -> None:
        """Cache ``window``, read at the state ``current`` last saw."""
        with self.lock:
            if raw is not self.conn:
                return
            by_limit = self.windows.pop(cid, None) or {}
            by_limit[limit] = list(window)
            self.windows[cid] = by_limit
            if len(self.windows) > self.size:
                del self.windows[next(iter(self.windows))]

    def appended(self, raw: sqlite3.Connection, cid: str, stored: Sequence[Message]) -> None:
        """Extend ``cid``'s windows with ``stored`` (appended, as a read returns them), inside
        the append's transaction after ``current`` said True there."""
        with self.lock:
            by_limit = self.windows.get(cid) if raw is self.conn else None
            if by_limit is not None:
                for limit, window in by_limit.items():
                    by_limit[limit] = extended(window, stored, limit)

    def forget(self, raw: sqlite3.Connection, cid: str) -> None:
        """Drop ``cid``'s windows (an append that trimmed, or failed)."""
        with self.lock:
            if raw is self.conn:
                self.windows.pop(cid, None)

    def committed(self, raw: sqlite3.Connection) -> None:
        """After ``raw`` committed its own write, the one change since ``current`` looked."""
        with self.lock:
            if raw is self.conn:
                self.changes = raw.total_changes


def extended(window: Sequence[Message], new: Sequence[Message], limit: int) -> list[Message]:
    """The window after appending ``new``: every system message and the newest ``limit``
    others, in position order (appended messages come after every cached one)."""
    out = [*window, *new]
    excess = sum(m.message_type is not MessageType.SYSTEM for m in out) - limit
    if excess <= 0:
        return out
    kept: list[Message] = []
    for m in out:
        if excess and m.message_type is not MessageType.SYSTEM:
            excess -= 1
            continue
        kept.append(m)
    return kept
