"""The pure parts of the repository contract, shared by the sync and async twins: the id
page, capability names, creation stamps, the window source rule and the retry back-off."""

from __future__ import annotations

import inspect
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from ._errors import InvalidArgumentError
from ._messages import Message, SystemMessage

DEFAULT_PAGE_SIZE = 1000

ASYNC_TWIN = True
"""Passed by async code where a check needs to know its twin; ``scripts/unasync.py`` turns
it into ``SYNC_TWIN`` (False) in the generated sync code."""
SYNC_TWIN = False


@dataclass(frozen=True)
class ConversationIdPage:
    """One page of conversation ids; pass ``next_after`` back to get the next page."""

    ids: list[str]
    next_after: str | None


class Capability:
    """Optional features a backend can claim; the conformance suite tests each claim."""

    TTL = "ttl"
    SEARCH = "search"
    LABELS = "labels"


def stamp(messages: Sequence[Message], now: datetime | None = None) -> list[Message]:
    """Give messages without a creation time ``now``; keep the time of those that have one."""
    ts = now or datetime.now(timezone.utc)
    return [
        m if m.created_at is not None else m.with_store_fields(created_at=ts, position=None)
        for m in messages
    ]


def window_source(log: Sequence[Message], non_system_limit: int) -> list[Message]:
    """Every system message of ``log`` plus its last ``non_system_limit`` other messages."""
    others = [i for i, m in enumerate(log) if not isinstance(m, SystemMessage)]
    keep = set(others[-non_system_limit:]) if non_system_limit > 0 else set()
    return [m for i, m in enumerate(log) if i in keep or isinstance(m, SystemMessage)]


def backoff(attempt: int, base_sleep: float, max_sleep: float) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): none before the first retry (a
    stale cached state is the usual loser), then exponential from ``base_sleep`` with full
    jitter, capped at ``max_sleep``, so contending writers spread out."""
    if not attempt:
        return 0.0
    return random.uniform(0, min(max_sleep, base_sleep * 2**attempt))


def validate_cursor(after: object) -> str | None:
    """A page cursor: None or a str returned by a previous page."""
    if after is not None and not isinstance(after, str):
        raise InvalidArgumentError("after", "must be a cursor str from a previous page")
    return after


def is_async_repository(repository: object) -> bool:
    """True for an async repository (its reads are coroutine functions)."""
    return inspect.iscoroutinefunction(getattr(repository, "find_by_conversation_id", None))


def require_twin(repository: object, *, want_async: bool, user: str) -> None:
    """``InvalidArgumentError`` when a sync repository is given to an async ``user`` or the
    reverse, naming the class to use instead."""
    if is_async_repository(repository) == want_async:
        return
    if want_async:
        raise InvalidArgumentError(
            "repository", f"is a sync repository; {user} needs an async one (Async*Repository)"
        )
    raise InvalidArgumentError(
        "repository", f"is an async repository; use the Async twin of {user} with it"
    )
