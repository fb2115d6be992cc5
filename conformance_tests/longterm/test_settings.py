"""Per-agent settings on every record store: stored through the state primitive, changed by
another handle (another process's view), applied by a running ``LongTermMemory`` within its
refresh interval: off means nothing extracted and nothing injected; the pending expiry of
new records follows the agent's setting."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest

from chatmem.core import ConcurrencyError, InvalidArgumentError
from chatmem.core.longterm import (
    AgentSettings,
    BaseMemoryRecordRepository,
    LongTermMemory,
    MemoryStatus,
    RuleBasedExtractor,
    get_settings,
    put_settings,
)

from .test_records import PREF

REFRESH = timedelta(seconds=0.2)


def _until(check: Callable[[], bool], within: float = 5.0) -> float:
    """Seconds until ``check()`` held (fails after ``within``)."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < within, f"not within {within} s"
        time.sleep(0.02)
    return time.monotonic() - start


def test_settings_default_then_change_field_by_field(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    assert get_settings(records, "helper") == AgentSettings()
    assert put_settings(records, "helper", enabled=False) == AgentSettings(enabled=False)
    other = make_records(shared_with=records)
    changed = put_settings(other, "helper", pending_ttl=timedelta(days=2))
    assert changed == AgentSettings(enabled=False, pending_ttl=timedelta(days=2))
    assert get_settings(records, "helper") == changed
    assert get_settings(records, "other-agent") == AgentSettings()


def test_settings_are_validated_before_any_write(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    for kwargs, argument in (
        ({"enabled": "yes"}, "enabled"),
        ({"pending_ttl": timedelta(0)}, "pending_ttl"),
        ({"pending_ttl": 7}, "pending_ttl"),
    ):
        with pytest.raises(InvalidArgumentError, match=argument):
            put_settings(records, "helper", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="agent_id"):
        put_settings(records, "", enabled=True)
    assert get_settings(records, "helper") == AgentSettings()


def test_a_running_memory_sees_a_disable_within_the_refresh_interval(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    approved = records.add("helper", "ana", PREF).record
    records.approve(approved.id)
    memory = LongTermMemory(
        records, agent_id="helper", extractor=RuleBasedExtractor(), settings_refresh=REFRESH
    )
    try:
        assert memory.system_prompt_block("ana") is not None
        admin = make_records(shared_with=records)  # the CLI or REST API, elsewhere
        put_settings(admin, "helper", enabled=False)
        took = _until(lambda: memory.system_prompt_block("ana") is None)
        assert took < 5
        assert not memory.observe("ana", "I work at Acme Robotics.")
        assert memory.flush(10)
        assert [r.id for r in records.find(user_id="ana").records] == [approved.id]
        put_settings(admin, "helper", enabled=True)
        _until(lambda: memory.system_prompt_block("ana") is not None)
        assert memory.observe("ana", "I work at Acme Robotics.")
        assert memory.flush(10)
        assert len(records.find(user_id="ana", status=MemoryStatus.PENDING).records) == 1
    finally:
        memory.close()


def test_new_pending_records_expire_after_the_agents_setting(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    put_settings(records, "helper", pending_ttl=timedelta(days=2))
    memory = LongTermMemory(
        records, agent_id="helper", extractor=RuleBasedExtractor(), settings_refresh=REFRESH
    )
    try:
        assert memory.observe("ana", "I work at Acme Robotics.")
        assert memory.flush(10)
    finally:
        memory.close()
    (record,) = records.find(user_id="ana").records
    assert record.expires_at is not None
    assert record.expires_at - record.created_at == timedelta(days=2)


def test_racing_settings_writers_both_keep_their_field(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    import threading

    records = make_records()
    handles = [make_records(shared_with=records) for _ in range(2)]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        barrier.wait(30)
        try:
            if i == 0:
                put_settings(handles[0], "helper", enabled=False)
            else:
                put_settings(handles[1], "helper", pending_ttl=timedelta(days=3))
        except ConcurrencyError as exc:  # pragma: no cover - only if 20 rounds all lost
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert get_settings(records, "helper") == AgentSettings(
        enabled=False, pending_ttl=timedelta(days=3)
    )
