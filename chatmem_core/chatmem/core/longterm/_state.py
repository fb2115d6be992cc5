"""The state primitive of a record store: a tiny versioned key-value map (per-agent settings,
the durable analysis queue), its entry value and its validation (pure; the stores do the I/O).

An entry is ``(namespace, key) -> value`` with a version that is 1 when created and grows by
one on every write, so a writer replaces an entry only if nobody wrote it since it read it
(compare-and-set on ``expected_version``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import check_text

from . import _rules as rules

MAX_STATE_VALUE_BYTES = 65_536
"""A value is at most this many bytes as UTF-8."""
DEFAULT_STATE_PAGE_SIZE = 100
MAX_STATE_PAGE_SIZE = 1000
MAX_NAMESPACE_LENGTH = 64
_NAMESPACE = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")


@dataclass(frozen=True, slots=True, kw_only=True)
class StateEntry:
    """One stored state entry; ``updated_at`` is the store's clock at the last write."""

    namespace: str
    key: str
    value: str
    version: int
    updated_at: datetime


def validate_namespace(value: object, argument: str = "namespace") -> str:
    """1-64 characters of letters, digits and ``_ . : -``."""
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"must be a str, got {type(value).__name__}")
    if not _NAMESPACE.fullmatch(value):
        raise InvalidArgumentError(
            argument, f"{value[:80]!r} is not 1-64 characters of A-Z a-z 0-9 _ . : -"
        )
    return value


def validate_key(value: object, argument: str = "key") -> str:
    """A key follows the id rule (a non-empty str of at most 255 characters)."""
    return rules.validate_id(value, argument)


def validate_value(value: object, argument: str = "value") -> str:
    """A str of at most ``MAX_STATE_VALUE_BYTES`` UTF-8 bytes, with no NUL (no store keeps
    one) and no lone surrogate."""
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"must be a str, got {type(value).__name__}")
    size = len(check_text(argument, value).encode("utf-8"))
    if size > MAX_STATE_VALUE_BYTES:
        raise InvalidArgumentError(
            argument, f"is {size} UTF-8 bytes; the limit is {MAX_STATE_VALUE_BYTES}"
        )
    return value


def validate_expected_version(value: object, argument: str = "expected_version") -> int | None:
    """None or an int >= 1 (not a bool)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(argument, f"must be None or an int >= 1, got {value!r}")
    return value


def validate_after(value: object, argument: str = "after") -> str | None:
    """None or a valid key."""
    return None if value is None else validate_key(value, argument)


def validate_state_limit(value: object, argument: str = "limit") -> int:
    """An int from 1 to ``MAX_STATE_PAGE_SIZE``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(argument, f"must be an int, got {type(value).__name__}")
    if not 1 <= value <= MAX_STATE_PAGE_SIZE:
        raise InvalidArgumentError(argument, f"must be 1..{MAX_STATE_PAGE_SIZE}, got {value}")
    return value


def next_entry(
    namespace: str, key: str, value: str, current: StateEntry | None, now: datetime
) -> StateEntry:
    """The entry a successful write stores: version 1 on create, else the current + 1."""
    version = 1 if current is None else current.version + 1
    return StateEntry(namespace=namespace, key=key, value=value, version=version, updated_at=now)
