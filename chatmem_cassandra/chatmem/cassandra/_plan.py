"""Which message rows a write keeps, trims and re-writes: pure functions, no I/O.

Every write is one lightweight-transaction batch on one partition. Besides inserting the new
rows it may delete old rows (``DELETE ... WHERE position < floor``, one range tombstone) and,
with a TTL, re-write the rows it keeps so that the whole conversation carries the same expiry:
the conversation then expires as one, once idle for the TTL, and never starts with an orphan
tool result left by rows that expired before their neighbours.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Sequence
from dataclasses import dataclass

ORIGIN_BITS = 52
"""A new conversation starts at a random position below 2**52 (room for 2**62 more)."""


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
