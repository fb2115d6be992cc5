"""The pure values of per-agent settings and the durable queue: encoding, validation, the
refresh rule and the queue's key order and leases (no store)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from chatmem.core import InvalidArgumentError
from chatmem.core.longterm._queue import (
    Claim,
    claimable,
    decode_entry,
    encode_entry,
    make_job,
    new_key,
)
from chatmem.core.longterm._settings import (
    AgentSettings,
    SettingsCache,
    decode_settings,
    encode_settings,
    merged,
)

T0 = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)


def test_settings_round_trip_as_the_documented_json() -> None:
    settings = AgentSettings(enabled=False, pending_ttl=timedelta(days=3))
    value = encode_settings(settings)
    assert json.loads(value) == {"enabled": False, "pending_ttl_seconds": 3 * 86400}
    assert decode_settings(value) == settings
    assert decode_settings("{}") == AgentSettings()


@pytest.mark.parametrize(
    "value",
    [
        "not json",
        "[]",
        '{"enabled": "no"}',
        '{"pending_ttl_seconds": 0}',
        '{"pending_ttl_seconds": true}',
    ],
)
def test_a_broken_settings_entry_is_an_error_naming_value(value: str) -> None:
    with pytest.raises(InvalidArgumentError, match="value"):
        decode_settings(value)


def test_merged_keeps_the_fields_not_given_and_validates_the_others() -> None:
    current = AgentSettings(enabled=False, pending_ttl=timedelta(days=2))
    assert merged(current, enabled=None, pending_ttl=timedelta(days=9)) == AgentSettings(
        enabled=False, pending_ttl=timedelta(days=9)
    )
    assert merged(current, enabled=True, pending_ttl=None).pending_ttl == timedelta(days=2)
    with pytest.raises(InvalidArgumentError, match="enabled"):
        merged(current, enabled=1, pending_ttl=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="pending_ttl"):
        merged(current, enabled=None, pending_ttl=timedelta(seconds=1.5))


def test_the_settings_cache_reads_again_once_the_refresh_interval_passed() -> None:
    now = [100.0]
    cache = SettingsCache(timedelta(seconds=5), AgentSettings(), monotonic=lambda: now[0])
    assert cache.due()
    off = AgentSettings(enabled=False)
    assert cache.update(off) == off
    now[0] += 4.9
    assert not cache.due()
    now[0] += 0.1
    assert cache.due()
    assert cache.update(None) == off, "a failed read keeps what applied"
    with pytest.raises(InvalidArgumentError, match="settings_refresh"):
        SettingsCache(timedelta(seconds=-1), AgentSettings())


def test_queue_keys_sort_by_time_and_never_repeat() -> None:
    keys = [new_key(T0 + timedelta(microseconds=n)) for n in (3, 1, 2, 1)]
    assert len(set(keys)) == 4
    assert [k[:17] for k in sorted(keys)] == sorted(k[:17] for k in keys)
    assert sorted(keys)[-1] == keys[0]
    assert new_key(T0) < new_key(T0 + timedelta(days=365 * 200))


def test_a_queue_entry_round_trips_with_its_claim_and_the_lease_decides() -> None:
    job = make_job("agent", "ana", "저는 StartupCorp의 CTO입니다.", "c1", 4)
    assert decode_entry(encode_entry(job)) == (job, None)
    claim = Claim("w1", T0 + timedelta(seconds=30))
    assert decode_entry(encode_entry(job, claim)) == (job, claim)
    assert claimable(None, T0)
    assert not claimable(claim, T0 + timedelta(seconds=29))
    assert claimable(claim, T0 + timedelta(seconds=30))


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        (("", "ana", "hi"), "agent_id"),
        (("a", None, "hi"), "user_id"),
        (("a", "ana", 3), "text"),
        (("a", "ana", "hi", ""), "conversation_id"),
    ],
)
def test_a_job_is_validated_naming_the_argument(args: tuple[object, ...], argument: str) -> None:
    with pytest.raises(InvalidArgumentError, match=argument):
        make_job(*args)  # type: ignore[arg-type]
