"""Per-agent settings of long-term memory, as pure values (the I/O is ``_async/settings.py``).

An agent's settings are one entry of the record store's state primitive: namespace
``SETTINGS_NAMESPACE``, key the agent id, value the JSON object
``{"enabled": bool, "pending_ttl_seconds": int}``. An agent without an entry has the
defaults (enabled, pending records expire after 7 days). A running ``LongTermMemory``
re-reads its agent's entry at most every ``settings_refresh`` (``SettingsCache`` decides
when), so a change made by another process (CLI, REST API) applies within that interval.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from chatmem.core._errors import InvalidArgumentError

from . import _rules as rules

SETTINGS_NAMESPACE = "longterm.settings"
DEFAULT_SETTINGS_REFRESH = timedelta(seconds=5)
"""How long a running memory trusts the settings it read before reading them again."""
MAX_PUT_ATTEMPTS = 20
"""Compare-and-set rounds ``put_settings`` tries before a ``ConcurrencyError``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    """One agent's long-term memory switch and pending expiry."""

    enabled: bool = True
    """False: nothing of the agent's users is analysed and nothing injected."""
    pending_ttl: timedelta = rules.DEFAULT_PENDING_TTL
    """How long a new pending record of the agent waits for review before it expires."""

    def to_dict(self) -> dict[str, object]:
        """The stored JSON object (whole seconds)."""
        return {
            "enabled": self.enabled,
            "pending_ttl_seconds": int(self.pending_ttl.total_seconds()),
        }


DEFAULT_SETTINGS = AgentSettings()


def validate_enabled(value: object) -> bool:
    """A bool (``enabled``)."""
    if not isinstance(value, bool):
        raise InvalidArgumentError("enabled", f"must be a bool, got {type(value).__name__}")
    return value


def validate_settings_ttl(value: object) -> timedelta:
    """A pending TTL of at least one second, in whole seconds (what the entry stores)."""
    ttl = rules.validate_pending_ttl(value)
    if ttl < timedelta(seconds=1) or ttl.microseconds:
        raise InvalidArgumentError("pending_ttl", "must be a whole number of seconds, >= 1")
    return ttl


def validate_settings_refresh(value: object) -> timedelta:
    """A non-negative timedelta (zero: read the settings on every use)."""
    if not isinstance(value, timedelta) or value < timedelta(0):
        raise InvalidArgumentError("settings_refresh", "must be a timedelta >= 0")
    return value


def encode_settings(settings: AgentSettings) -> str:
    """The entry's value for ``settings``."""
    return json.dumps(settings.to_dict(), sort_keys=True)


def decode_settings(value: str) -> AgentSettings:
    """The settings an entry holds; an ``InvalidArgumentError`` naming ``value`` when it is
    not the JSON object ``encode_settings`` writes (keys missing from it take defaults)."""
    try:
        data = json.loads(value)
    except ValueError:
        raise InvalidArgumentError("value", "settings entry is not JSON") from None
    if not isinstance(data, dict):
        raise InvalidArgumentError("value", "settings entry is not a JSON object")
    enabled = data.get("enabled", DEFAULT_SETTINGS.enabled)
    seconds = data.get("pending_ttl_seconds", int(DEFAULT_SETTINGS.pending_ttl.total_seconds()))
    if not isinstance(enabled, bool):
        raise InvalidArgumentError("value", "settings entry: enabled is not a bool")
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 1:
        raise InvalidArgumentError(
            "value", "settings entry: pending_ttl_seconds is not an int >= 1"
        )
    return AgentSettings(enabled=enabled, pending_ttl=timedelta(seconds=seconds))


def merged(
    current: AgentSettings, *, enabled: bool | None, pending_ttl: timedelta | None
) -> AgentSettings:
    """``current`` with the given fields replaced (validated)."""
    return AgentSettings(
        enabled=current.enabled if enabled is None else validate_enabled(enabled),
        pending_ttl=current.pending_ttl
        if pending_ttl is None
        else validate_settings_ttl(pending_ttl),
    )


class SettingsCache:
    """The settings a memory last read and when: ``due()`` says whether to read again.

    ``fallback`` is what applies before the first successful read (the constructor's
    ``enabled`` and the store's pending TTL); a read that fails keeps the last value."""

    def __init__(
        self,
        refresh: timedelta,
        fallback: AgentSettings,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.refresh = validate_settings_refresh(refresh).total_seconds()
        self.value = fallback
        self._monotonic = monotonic
        self._read_at = -math.inf

    def due(self) -> bool:
        """True when the refresh interval has passed since the last read."""
        return self._monotonic() - self._read_at >= self.refresh

    def update(self, value: AgentSettings | None) -> AgentSettings:
        """Record a read (None: the read failed, keep the value) and return what applies."""
        self._read_at = self._monotonic()
        if value is not None:
            self.value = value
        return self.value
