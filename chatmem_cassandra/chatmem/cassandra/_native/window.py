"""The windows the Cassandra repository last saw, so ``add_and_get`` can skip its read.

Every write moves a conversation's guard (``next_position``) and positions are never reused,
so the rows seen at one guard value are the whole truth at that value. An append whose
lightweight transaction applied at the guard a cached window was seen at therefore leaves
exactly that window plus the appended messages, trimmed as the append trimmed: no other
writer can have come in between. Anything else (another guard, no entry) means a read.
No I/O here: the repository records what it read or wrote and asks.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chatmem.core import Message

from .._codec import StoredRow, SystemEntry, row_values, system_entry
from .._plan import is_system

WINDOW_ROWS = 256
"""Rows remembered per conversation (the newest): enough for any common window."""
WINDOW_TOTAL_ROWS = 16_384
"""Rows remembered in all; the least recently used conversations go first."""


@dataclass(frozen=True)
class Window:
    """A conversation as one read or applied write left it: the guard it was seen at, the
    statics, and the newest rows (newest first); ``complete`` when they are every row."""

    guard: int | None
    origin: int | None
    systems: Mapping[int, SystemEntry]
    rows: tuple[StoredRow, ...]
    complete: bool

    def tail(self, limit: int) -> tuple[StoredRow, ...] | None:
        """The newest ``limit`` rows as a read of ``limit`` would return them; None when
        fewer are remembered than such a read could find."""
        if self.complete or len(self.rows) >= limit:
            return self.rows[:limit]
        return None

    def capped(self, most: int = WINDOW_ROWS) -> Window:
        """This window holding at most ``most`` rows (the newest)."""
        if len(self.rows) <= most:
            return self
        return Window(self.guard, self.origin, self.systems, self.rows[:most], False)


def appended(
    window: Window,
    *,
    next_position: int,
    base: int,
    messages: Sequence[Message],
    floor: int | None,
) -> Window:
    """The window an append leaves that applied at ``window.guard``: ``messages`` at
    ``base + i`` (system ones into the map), rows below ``floor`` deleted by its trim."""
    new = [
        StoredRow(base + i, *row_values(messages[i]))
        for i in range(len(messages) - 1, -1, -1)
        if not is_system(messages[i])
    ]
    rows = [*new, *window.rows]
    complete = window.complete
    if floor is not None:
        # every row below the floor is gone: when some remembered row was below it, the
        # rows kept are every stored row
        complete = complete or (bool(rows) and rows[-1].position < floor)
        rows = [r for r in rows if r.position >= floor]
    systems = dict(window.systems)
    systems.update({base + i: system_entry(m) for i, m in enumerate(messages) if is_system(m)})
    origin = base if window.guard is None else window.origin
    return Window(next_position, origin, systems, tuple(rows), complete)


class WindowCache:
    """Windows by conversation id, bounded per conversation and in total (LRU); safe to
    share between threads."""

    def __init__(self, per_conversation: int = WINDOW_ROWS, total: int = WINDOW_TOTAL_ROWS):
        self._per_conversation = per_conversation
        self._total = total
        self._rows = 0
        self._windows: OrderedDict[str, Window] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, cid: str, window: Window) -> None:
        """Remember ``window`` (the newest rows of it) as the last seen of ``cid``."""
        window = window.capped(self._per_conversation)
        with self._lock:
            self._store(cid, window)

    def forget(self, cid: str) -> None:
        with self._lock:
            self._drop(cid)

    def advance(
        self,
        cid: str,
        guard: int | None,
        *,
        next_position: int,
        base: int,
        messages: Sequence[Message],
        floor: int | None,
    ) -> Window | None:
        """After an append that applied at ``guard``: the window it left, remembered, when
        the remembered one was seen at that guard; else None (and nothing is remembered)."""
        with self._lock:
            window = self._windows.get(cid)
            if window is None or window.guard != guard:
                self._drop(cid)
                return None
            window = appended(
                window, next_position=next_position, base=base, messages=messages, floor=floor
            ).capped(self._per_conversation)
            self._store(cid, window)
            return window

    def _store(self, cid: str, window: Window) -> None:
        self._drop(cid)
        self._windows[cid] = window
        self._rows += len(window.rows)
        while self._rows > self._total and len(self._windows) > 1:
            _, oldest = self._windows.popitem(last=False)
            self._rows -= len(oldest.rows)

    def _drop(self, cid: str) -> None:
        window = self._windows.pop(cid, None)
        if window is not None:
            self._rows -= len(window.rows)
