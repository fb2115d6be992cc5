"""The token window's rule as pure functions, applied by ``TokenWindowChatMemory`` and its
async twin (``_async/token_window.py``, which says how counts are stored and reads bounded).

The rule is the message window's (``_window``) measured in tokens: system messages stay; the
oldest others go until the rest fits what the shown system messages leave of ``max_tokens``,
and the cut moves on to the next user message so the window starts at a whole turn. A count
lives with its message under ``TOKENS_KEY``; every message costs at least one token.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ._errors import InvalidArgumentError, MissingDependencyError
from ._messages import (
    AssistantMessage,
    Message,
    MessageType,
    SystemMessage,
    ToolResponseMessage,
)

DEFAULT_MAX_TOKENS = 2000
TOKENS_KEY = "chatmem_token_window"
"""Reserved metadata key: ``{"tokens": n}`` (and ``"systems"``, the add a system message came
with, under ``keep_history=True``). Never returned by ``get``."""

TokenCounter = Callable[[str], int]
FIRST_READ = 32
"""Non-system messages a window read asks for first; each further read doubles it."""


def message_text(m: Message) -> str:
    """What a message costs: its text, tool calls (name and arguments) and tool results."""
    parts: list[str] = []
    if isinstance(m, ToolResponseMessage):
        parts.extend(f"{r.name} {r.response_data}" for r in m.responses)
    elif m.text:
        parts.append(m.text)
    if isinstance(m, AssistantMessage):
        parts.extend(f"{c.name} {c.arguments}" for c in m.tool_calls)
    return "\n".join(parts)


def tiktoken_counter(encoding: str = "cl100k_base") -> TokenCounter:
    """A counter with tiktoken's ``encoding`` (``pip install "chatmem[tokens]"``)."""
    try:
        import tiktoken
    except ImportError as exc:
        raise MissingDependencyError("tokens", "tiktoken") from exc
    enc = tiktoken.get_encoding(encoding)
    return lambda text: len(enc.encode(text, disallowed_special=()))


# -- the rule as pure functions -----------------------------------------------------------
def tokens_of(m: Message) -> int | None:
    """The stored count of ``m``; None when it carries none."""
    info = m.metadata.get(TOKENS_KEY)
    if isinstance(info, dict) and isinstance(info.get("tokens"), int):
        return max(int(info["tokens"]), 1)
    return None


def visible_systems(log: Sequence[Message]) -> list[int]:
    """Indexes of the system messages the window shows: those of the latest add that
    brought system messages (all of them when none is marked)."""
    systems = [i for i, m in enumerate(log) if isinstance(m, SystemMessage)]
    marks = [_mark(log[i]) for i in systems]
    latest = next((k for k in reversed(marks) if k is not None), None)
    if latest is None:
        return systems
    return [i for i, k in zip(systems, marks, strict=True) if k == latest]


def token_window_of(
    log: Sequence[Message], max_tokens: int, cost: Callable[[Message], int]
) -> list[Message]:
    """The window ``log`` shows under ``max_tokens`` (order kept, superseded systems out):
    the longest run of the newest non-system messages that fits what the shown system
    messages leave and starts with a user message (all of them when all fit)."""
    systems = set(visible_systems(log))
    capacity = max_tokens - sum(cost(log[i]) for i in systems)
    others = [i for i, m in enumerate(log) if not isinstance(m, SystemMessage)]
    costs = [cost(log[i]) for i in others]
    start, total = 0, sum(costs)
    if total > capacity:
        while start < len(others) and total > capacity:
            total -= costs[start]
            start += 1
        while start < len(others) and log[others[start]].message_type is not MessageType.USER:
            start += 1
    keep = systems | set(others[start:])
    return [m for i, m in enumerate(log) if i in keep]


def next_read(
    source: Sequence[Message], n: int, max_tokens: int, cost: Callable[[Message], int]
) -> int | None:
    """After a read of every system message plus the last ``n`` others (``source``), the
    ``n`` to read next, or None when ``source`` already holds the window: it is the whole
    log, more than any window can show, or its cut falls inside what was read."""
    others = [m for m in source if not isinstance(m, SystemMessage)]
    if len(others) < n or n > max_tokens:
        return None
    shown = [source[i] for i in visible_systems(source)]
    if sum(map(cost, others)) > max_tokens - sum(map(cost, shown)):
        return None
    return min(n * 2, max_tokens + 1)


def count_with(counter: TokenCounter, m: Message) -> int:
    """``counter``'s count of ``m`` (at least 1); a bad count is an ``InvalidArgumentError``
    naming ``count_tokens``."""
    n = counter(message_text(m))
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidArgumentError("count_tokens", f"returned {n!r}, not an int >= 0")
    return max(n, 1)


def _mark(m: Message) -> str | None:
    info = m.metadata.get(TOKENS_KEY)
    mark = info.get("systems") if isinstance(info, dict) else None
    return mark if isinstance(mark, str) else None


def _with_metadata(m: Message, metadata: dict[str, Any]) -> Message:
    return dataclasses.replace(m, metadata=metadata)


def strip(m: Message) -> Message:
    """``m`` without the reserved key."""
    if TOKENS_KEY not in m.metadata:
        return m
    return _with_metadata(m, {k: v for k, v in m.metadata.items() if k != TOKENS_KEY})


def tag(m: Message, tokens: int, systems: str | None = None) -> Message:
    """``m`` carrying its count (and its add's mark) under the reserved key."""
    if TOKENS_KEY in m.metadata:
        raise InvalidArgumentError("messages", f"metadata key {TOKENS_KEY!r} is reserved")
    info: dict[str, Any] = {"tokens": tokens}
    if systems is not None:
        info["systems"] = systems
    return _with_metadata(m, {**m.metadata, TOKENS_KEY: info})
