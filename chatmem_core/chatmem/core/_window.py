"""The window rule as pure functions: no store, no I/O, tested on their own.

The rule (docs/behaviour.md section 3): system messages are never evicted; when the total is over
the window, the oldest non-system messages go, and the cut moves forward to the next user
message so the kept part starts at a whole turn. For a log ``N`` of non-system messages and a
capacity ``c = window - len(systems)`` that is: all of ``N`` if ``len(N) <= c``, else the
longest suffix of ``N`` that starts with a user message and has at most ``c`` messages.

Stores keep an append-only log and apply the rule on read. ``window_of(log)`` equals the
result of applying the rule at every add, because ``f(f(X) + B) == f(X + B)`` whenever
``f(X)`` is not empty. The one deliberate difference: after an eviction removed every
non-system message, later messages are shown only from the next user message on, so the
window never restarts mid-turn. An add that brings a new system message replaces the stored
ones; the store then materialises the window first (``plan_window_edit``), exactly as the
incremental rule does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ._messages import Message, MessageType, SystemMessage


def window_of(log: Sequence[Message], max_messages: int) -> list[Message]:
    """The window visible in ``log`` (system messages kept in place, order preserved).

    The capacity for non-system messages is ``max_messages`` less the system ones, so
    ``len(log) - max_messages`` of the oldest non-system messages go, then those before
    the next user message. One pass: every window read runs this on the rows the store
    returned."""
    system, user = MessageType.SYSTEM, MessageType.USER
    kinds = [m.message_type for m in log]
    skip = len(log) - max_messages  # non-system messages beyond the capacity
    if skip <= 0:
        return list(log)
    out: list[Message] = []
    cutting = True
    for m, kind in zip(log, kinds, strict=False):
        if kind is system or not cutting:
            out.append(m)
        elif skip > 0:
            skip -= 1
        elif kind is user:
            cutting = False
            out.append(m)
    return out


def resets_system(stored: Sequence[Message], new: Sequence[Message]) -> bool:
    """True when ``new`` holds a system message not already stored (so stored ones go)."""
    stored_systems = [m for m in stored if isinstance(m, SystemMessage)]
    return any(isinstance(m, SystemMessage) and m not in stored_systems for m in new)


def add_to_window(
    stored: Sequence[Message], new: Sequence[Message], max_messages: int
) -> list[Message]:
    """The reference rule, applied at one add: the kept list after adding ``new``."""
    if resets_system(stored, new):
        base: list[Message] = [m for m in stored if not isinstance(m, SystemMessage)]
        return window_of([*base, *new], max_messages)
    added: list[Message] = [m for m in new if not isinstance(m, SystemMessage)]
    return window_of([*stored, *added], max_messages)


@dataclass(frozen=True)
class WindowEdit:
    """An atomic change to a stored log, computed from a bounded read of it.

    The store deletes the rows at ``delete_positions``, then every non-system row whose
    position is below ``delete_non_system_below`` (when set), then appends ``append`` with
    fresh positions after every existing one.
    """

    delete_positions: frozenset[int] = frozenset()
    delete_non_system_below: int | None = None
    append: tuple[Message, ...] = field(default_factory=tuple)


def plan_window_edit(
    source: Sequence[Message],
    new: Sequence[Message],
    max_messages: int,
    *,
    keep_history: bool = False,
) -> WindowEdit:
    """Plan an add that carries system messages, given every stored system message plus
    at least the last ``max_messages + 1`` non-system ones (with positions).

    Without a new system message, the already-stored system messages in ``new`` are dropped
    (never stored twice) and the rest is appended. With one, the current window is
    materialised (evicted rows deleted), every stored system message is deleted, and all of
    ``new`` is appended. With ``keep_history`` no non-system row is deleted: only the
    stored system messages go, and the window is computed over the whole log on read.
    """
    if not resets_system(source, new):
        return WindowEdit(append=tuple(m for m in new if not isinstance(m, SystemMessage)))
    if keep_history:
        stored = frozenset(
            m.position for m in source if isinstance(m, SystemMessage) and m.position is not None
        )
        return WindowEdit(delete_positions=stored, append=tuple(new))
    visible = window_of(source, max_messages)
    kept_non_system = [m for m in visible if not isinstance(m, SystemMessage)]
    systems = frozenset(
        m.position for m in source if isinstance(m, SystemMessage) and m.position is not None
    )
    if kept_non_system:
        below = kept_non_system[0].position
    else:
        below = max((m.position for m in source if m.position is not None), default=-1) + 1
    return WindowEdit(delete_positions=systems, delete_non_system_below=below, append=tuple(new))


def apply_window_edit(log: Sequence[Message], edit: WindowEdit) -> list[Message]:
    """Apply ``edit`` to an in-memory log (positions must be set); used by simple stores."""
    below = edit.delete_non_system_below
    kept = [
        m
        for m in log
        if m.position not in edit.delete_positions
        and not (
            below is not None
            and not isinstance(m, SystemMessage)
            and m.position is not None
            and m.position < below
        )
    ]
    return kept + list(edit.append)
