# Generated from chatmem_core/chatmem/core/longterm/_async/settings.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""Reading and writing an agent's settings through the record store's state primitive.

The value rules are pure (``.._settings``); this module holds the I/O: a read, and a
compare-and-set write that re-reads and retries when another writer got in first, so two
processes changing different fields of one agent's settings both keep their change.
"""

from __future__ import annotations

from datetime import timedelta

from chatmem.core._errors import ConcurrencyError

from .. import _rules as rules
from .._settings import (
    DEFAULT_SETTINGS,
    MAX_PUT_ATTEMPTS,
    SETTINGS_NAMESPACE,
    AgentSettings,
    decode_settings,
    encode_settings,
    merged,
)
from .repository import MemoryRecordRepository


def defaults_of(records: object) -> AgentSettings:
    """The settings of an agent without an entry: enabled, the store's pending TTL."""
    ttl = getattr(records, "pending_ttl", DEFAULT_SETTINGS.pending_ttl)
    return AgentSettings(
        pending_ttl=ttl if isinstance(ttl, timedelta) else rules.DEFAULT_PENDING_TTL
    )


def read_settings(records: MemoryRecordRepository, agent_id: str) -> AgentSettings | None:
    """The agent's stored settings, or None when it has no entry."""
    entry = records.read_state(SETTINGS_NAMESPACE, rules.validate_id(agent_id, "agent_id"))
    return None if entry is None else decode_settings(entry.value)


def get_settings(records: MemoryRecordRepository, agent_id: str) -> AgentSettings:
    """The agent's settings: its entry, else the defaults (``defaults_of``)."""
    stored = read_settings(records, agent_id)
    return defaults_of(records) if stored is None else stored


def put_settings(
    records: MemoryRecordRepository,
    agent_id: str,
    *,
    enabled: bool | None = None,
    pending_ttl: timedelta | None = None,
) -> AgentSettings:
    """Change the given fields of the agent's settings (the others keep their stored value)
    and return the settings stored. Compare-and-set on the entry's version, retried when a
    concurrent writer won; ``ConcurrencyError`` after ``MAX_PUT_ATTEMPTS`` lost rounds."""
    agent = rules.validate_id(agent_id, "agent_id")
    merged(DEFAULT_SETTINGS, enabled=enabled, pending_ttl=pending_ttl)  # validate before I/O
    for _ in range(MAX_PUT_ATTEMPTS):
        entry = records.read_state(SETTINGS_NAMESPACE, agent)
        current = defaults_of(records) if entry is None else decode_settings(entry.value)
        wanted = merged(current, enabled=enabled, pending_ttl=pending_ttl)
        written = records.write_state(
            SETTINGS_NAMESPACE,
            agent,
            encode_settings(wanted),
            expected_version=None if entry is None else entry.version,
        )
        if written is not None:
            return decode_settings(written.value)
    raise ConcurrencyError(f"settings of agent {agent} kept changing; try again")
