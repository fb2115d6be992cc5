"""What one write does, planned without I/O: which rows it keeps, trims and re-writes, and
the statements of its batch.

Every write is one lightweight-transaction batch on one partition. Besides inserting the new
rows it may delete old rows (``DELETE ... WHERE position < floor``, one range tombstone) and,
with a TTL, re-write the rows it keeps so that the whole conversation carries the same expiry:
the conversation then expires as one, once idle for the TTL, and never starts with an orphan
tool result left by rows that expired before their neighbours. The repository only runs the
``Batch`` a plan gives it and remembers what the plan says is known afterwards.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatmem.core import Message, SystemMessage
from chatmem.core.backend import WindowEdit

from ._codec import Decoder, StoredRow, SystemEntry, row_values, system_entry

ORIGIN_BITS = 52
"""A new conversation starts at a random position below 2**52 (room for 2**62 more)."""


def after(guard: int) -> int:
    """The first free position a stored guard stands for. An edit that leaves a conversation
    without a message stores its guard negated: listing skips the conversation, and the next
    write, which always sets the guard, makes it positive again (see ``_schema``)."""
    return -guard if guard < 0 else guard


def new_origin() -> int:
    """A random first position for a new conversation (see ``_schema``: never reused)."""
    return secrets.randbelow(1 << ORIGIN_BITS)


@dataclass(frozen=True)
class RowPlan:
    """The row part of one write.

    ``kept``: positions of the rows known after the write, newest first (the newest rows of
    the conversation, exactly). ``floor``: delete every row below it (None: no range delete).
    ``delete``: single rows to delete at or above ``floor``. ``rewrite``: surviving rows to
    write again with the TTL.
    """

    kept: tuple[int, ...]
    floor: int | None
    delete: tuple[int, ...]
    rewrite: tuple[int, ...]


def plan_rows(
    known: Sequence[int],
    *,
    new: Sequence[int],
    keep: int | None,
    removed: Collection[int] = (),
    below: int | None = None,
    ttl: bool = False,
    complete: bool = False,
    next_position: int = 0,
) -> RowPlan:
    """Plan the rows of a write.

    ``known``: positions of the newest stored rows, newest first (a prefix of the truth);
    ``complete``: ``known`` is every stored row. ``new``: positions being inserted, newest
    first. ``keep``: keep at most this many newest rows (None: all). ``removed`` / ``below``:
    rows an edit deletes. With ``ttl`` every kept row is re-written, so rows that cannot be
    re-written (unknown ones) are deleted instead.
    """
    survivors = [p for p in known if p not in removed and (below is None or p >= below)]
    kept = list(new) + survivors
    floor = below
    if keep is not None and len(kept) > keep:
        cut = kept[keep - 1]
        kept = kept[:keep]
        floor = cut if floor is None else max(floor, cut)
    elif ttl and not complete:
        lowest = kept[-1] if kept else next_position
        floor = lowest if floor is None else max(floor, lowest)
    kept_set = set(kept)
    delete = tuple(
        p for p in known if p in removed and (floor is None or p >= floor) and p not in kept_set
    )
    rewrite = tuple(p for p in survivors if p in kept_set) if ttl else ()
    return RowPlan(tuple(kept), floor, delete, rewrite)


Part = tuple[str, Sequence[Any]]
"""One statement of a batch: its name in ``Statements`` and its bound values."""


@dataclass(frozen=True)
class Claims:
    """What a write claims, to tell after an unknown outcome whether it applied: the new
    messages it puts at their positions (rows as ``(message_type, content, created_at)``,
    system entries as ``(created_at, content)``).
    A replace or a delete may simply be tried again: a repeat is the same operation, ordered
    later. A deletion-only edit (``pop_last``) may not: run twice it deletes two messages, so
    it claims the receipt it leaves in the system-message map at a position it deletes (see
    ``new_receipt``); a later write carries the receipt on."""

    rows: Mapping[int, tuple[str, str, int]] = field(default_factory=dict)
    systems: Mapping[int, SystemEntry] = field(default_factory=dict)

    def verdict(self, systems: Mapping[int, Any], rows: Mapping[int, tuple[str, str, int]]) -> bool:
        """From a settled read (SERIAL: no transaction left in flight) of the claimed
        positions: True when every new message is stored there (done), else False (write it
        again). False also covers a write that did apply but whose positions a concurrent
        write has since trimmed or replaced: written again, it is stored once, as the newest,
        which is how the two writes are then ordered; it is never stored twice and an
        acknowledged write is never missing."""
        if not self.rows and not self.systems:
            return False  # a replace, a delete: repeatable
        found = {p: tuple(v) for p, v in systems.items()}
        return all(rows.get(p) == v for p, v in self.rows.items()) and all(
            found.get(p) == tuple(v) for p, v in self.systems.items()
        )


@dataclass(frozen=True)
class Batch:
    """One conditional single-partition batch, and what is known once it applied: the new
    guard (``next_position``) and the newest row positions (newest first); ``claims`` tell
    after an unknown outcome whether it applied. ``base``: the position of the first new
    message; ``floor``: every row below it is deleted (None: no range delete)."""

    parts: tuple[Part, ...]
    next_position: int
    kept: tuple[int, ...]
    claims: Claims = field(default_factory=Claims)
    base: int = 0
    floor: int | None = None


def claims(base: int, messages: Sequence[Message]) -> Claims:
    """The claims of a write putting ``messages`` at ``base + i``."""
    return Claims(
        {base + i: row_values(m) for i, m in enumerate(messages) if not is_system(m)},
        {base + i: system_entry(m) for i, m in enumerate(messages) if is_system(m)},
    )


@dataclass
class Snapshot:
    """One consistent read of a conversation (rows newest first); ``complete`` when the read
    saw every stored row."""

    next_position: int | None = None
    origin: int | None = None
    systems: dict[int, SystemEntry] = field(default_factory=dict)
    rows: list[StoredRow] = field(default_factory=list)
    complete: bool = True
    receipts: dict[int, SystemEntry] = field(default_factory=dict)

    def messages(self, decoder: Decoder) -> list[Message]:
        """The messages read, oldest first, positions relative to the origin."""
        return decoder.merge_log(self.rows, self.systems, self.origin)


RECEIPT_MARK = -(1 << 63)
"""The ``created_at`` of a receipt in the system-message map: no message can carry it (the
smallest bigint is long before year 1), so readers tell receipts from system messages."""
RECEIPT_SECONDS = 600
RECEIPT_LIMIT = 32
"""Receipts are kept this long, and at most this many (the newest): long enough to settle the
unknown outcome of the write that left one, which takes seconds."""


def new_receipt() -> SystemEntry:
    """A receipt for one deletion-only edit: ``(RECEIPT_MARK, "<micros>:<random>")``."""
    return RECEIPT_MARK, f"{time.time_ns() // 1000}:{secrets.token_hex(12)}"


def split_receipts(
    entries: Mapping[int, SystemEntry],
) -> tuple[dict[int, SystemEntry], dict[int, SystemEntry]]:
    """The system-message map as stored, split into system messages and receipts."""
    systems = {p: e for p, e in entries.items() if e[0] != RECEIPT_MARK}
    receipts = {p: e for p, e in entries.items() if e[0] == RECEIPT_MARK}
    return systems, receipts


def live_receipts(
    receipts: Mapping[int, SystemEntry], limit: int = RECEIPT_LIMIT
) -> dict[int, SystemEntry]:
    """The receipts a write carries on: younger than ``RECEIPT_SECONDS``, the newest
    ``limit``."""
    horizon = time.time_ns() // 1000 - RECEIPT_SECONDS * 1_000_000

    def issued(entry: SystemEntry) -> int:
        stamp = entry[1].partition(":")[0]
        return int(stamp) if stamp.isdigit() else 0

    young = sorted(
        ((issued(e), p, e) for p, e in receipts.items() if issued(e) >= horizon), reverse=True
    )
    return {p: e for _, p, e in young[:limit]}


def is_system(message: Message) -> bool:
    """System messages live in the static map, every other message in its own row."""
    return isinstance(message, SystemMessage)


def new_rows(base: int, messages: Sequence[Message]) -> list[int]:
    """Positions of the non-system rows a write inserts from ``base``, newest first."""
    return [base + i for i in range(len(messages) - 1, -1, -1) if not is_system(messages[i])]


def row_parts(
    cid: str,
    base: int,
    new: Sequence[Message],
    rows: RowPlan,
    rewrite: Sequence[StoredRow],
    ttl_seconds: int,
) -> list[Part]:
    """The row statements of a batch: the range delete, single deletes, re-written rows
    (with the TTL) and the new non-system rows at ``base + i``."""
    parts: list[Part] = []
    if rows.floor is not None:
        parts.append(("delete_below", (cid, rows.floor)))
    parts.extend(("delete_row", (cid, p)) for p in rows.delete)
    for r in rewrite:
        values = (cid, r.position, r.message_type, r.content, r.created_at, ttl_seconds)
        parts.append(("insert_row", values))
    for i, m in enumerate(new):
        if not is_system(m):
            parts.append(("insert_row", (cid, base + i, *row_values(m), ttl_seconds)))
    return parts


def plan_append(
    cid: str,
    guard: int | None,
    known: Sequence[int],
    messages: Sequence[Message],
    keep: int | None,
) -> Batch:
    """A plain append without a TTL, from the remembered guard and newest row positions:
    new rows, the trim the window allows, and only the statics that change."""
    base = after(guard) if guard is not None else new_origin()
    rows = plan_rows(known, new=new_rows(base, messages), keep=keep)
    systems = {base + i: system_entry(m) for i, m in enumerate(messages) if is_system(m)}
    parts = row_parts(cid, base, messages, rows, (), 0)
    end = base + len(messages)
    if guard is None:
        parts.append(("cas_state", (0, end, base, systems, cid, None)))
    elif systems:
        parts.append(("cas_add_systems", (end, systems, cid, guard)))
    else:
        parts.append(("cas_next", (end, cid, guard)))
    return Batch(tuple(parts), end, rows.kept, claims(base, messages), base, rows.floor)


@dataclass(frozen=True, kw_only=True)
class WritePlan:
    """A write of the whole state (statics with the TTL, new rows, deletions and, with a TTL,
    the surviving rows again), guarded by ``IF next_position = guard``.

    ``base``: the stored position of the first new message; ``origin``: what callers see as
    position 0; ``rows``: the stored rows known (newest first; every row when ``complete``);
    ``keep``: keep at most this many newest rows; ``removed`` / ``below``: rows an edit deletes.
    """

    cid: str
    guard: int | None
    base: int
    origin: int
    systems: Mapping[int, SystemEntry]
    rows: Sequence[StoredRow]
    new: Sequence[Message]
    ttl_seconds: int
    keep: int | None = None
    removed: Collection[int] = frozenset()
    below: int | None = None
    complete: bool = True
    repeatable: bool = False
    """A replace: repeating it after an unknown outcome is the same replace, ordered later."""
    receipts: Mapping[int, SystemEntry] = field(default_factory=dict)
    """Receipts carried on (with the new one of a deletion-only edit), see ``Claims``."""
    receipt: int | None = None
    """The position of this write's own receipt, when it leaves one."""

    @classmethod
    def replace(
        cls, cid: str, guard: int | None, messages: Sequence[Message], ttl_seconds: int
    ) -> WritePlan:
        """``save_all``: every stored row goes, ``messages`` start a new origin or continue
        after the guard (positions are never reused)."""
        base = after(guard) if guard is not None else new_origin()
        return cls(
            cid=cid,
            guard=guard,
            base=base,
            origin=base,
            systems={},
            rows=(),
            new=messages,
            ttl_seconds=ttl_seconds,
            below=None if guard is None else base,
            repeatable=True,
        )

    @classmethod
    def edit(
        cls, cid: str, snap: Snapshot, edit: WindowEdit, keep: int | None, ttl_seconds: int
    ) -> WritePlan | None:
        """Apply ``edit`` (positions relative to the origin) to the state ``snap`` read; None
        when the edit changes nothing."""
        if not edit.append and not edit.delete_positions and edit.delete_non_system_below is None:
            return None
        guard = snap.next_position
        base = after(guard) if guard is not None else new_origin()
        origin = base if guard is None else (snap.origin if snap.origin is not None else base)
        removed = frozenset(origin + p for p in edit.delete_positions)
        below = edit.delete_non_system_below
        receipt = max(removed) if removed and not edit.append else None
        receipts = live_receipts(snap.receipts, RECEIPT_LIMIT - (receipt is not None))
        if receipt is not None:
            # a deleted position is never used again, so it can hold this write's receipt
            receipts[receipt] = new_receipt()
        return cls(
            cid=cid,
            guard=guard,
            base=base,
            origin=origin,
            systems={p: e for p, e in snap.systems.items() if p not in removed},
            rows=snap.rows,
            new=edit.append,
            ttl_seconds=ttl_seconds,
            keep=keep,
            removed=removed,
            below=None if below is None else origin + below,
            complete=snap.complete,
            receipts=receipts,
            receipt=receipt,
        )

    def batch(self) -> Batch:
        """The statements of this write and what is known once it applied."""
        ttl = self.ttl_seconds > 0
        rows = plan_rows(
            [r.position for r in self.rows],
            new=new_rows(self.base, self.new),
            keep=self.keep,
            removed=self.removed,
            below=self.below,
            ttl=ttl,
            complete=self.complete,
            next_position=self.base,
        )
        systems = dict(self.systems)
        systems.update(
            {self.base + i: system_entry(m) for i, m in enumerate(self.new) if is_system(m)}
        )
        by_position = {r.position: r for r in self.rows}
        rewrite = [by_position[p] for p in rows.rewrite]
        parts = row_parts(self.cid, self.base, self.new, rows, rewrite, self.ttl_seconds)
        # Every write moves the guard, even one that only deletes: a client holding the old
        # guard (and the old rows) must lose its next race instead of trimming by stale rows.
        end = self.base + max(len(self.new), 1)
        if self.complete and not rows.kept and not systems and not self.new:
            end = -end  # it leaves no message: listing skips it (see ``after``)
        systems.update(self.receipts)
        state = (self.ttl_seconds, end, self.origin, systems, self.cid, self.guard)
        parts.append(("cas_state", state))
        # a replace may be repeated (the same history, ordered later); an edit adding
        # messages must not add them twice
        new = () if self.repeatable else self.new
        claimed = claims(self.base, new)
        if self.receipt is not None:
            claimed = Claims(systems={self.receipt: self.receipts[self.receipt]})
        return Batch(tuple(parts), end, rows.kept, claimed, self.base, rows.floor)
