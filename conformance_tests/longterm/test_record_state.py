"""The state primitive of every record store: create only when absent, replace only at the
expected version, conditional delete, listing in code-point order with paging, validation
before any I/O, two stores in one database kept apart, and racing writers with one winner."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta

import pytest

from chatmem.core import InvalidArgumentError
from chatmem.core.longterm import MAX_STATE_VALUE_BYTES, BaseMemoryRecordRepository, StateEntry

from .conftest import TestClock

NS = "settings"
KEYS = ["b", "a", "B", "10", "9", "a b", "a:b", "%_*", "é", "ä", "z", "日本", "a\\b", "$ne"]


def test_create_only_when_absent(records: BaseMemoryRecordRepository, clock: TestClock) -> None:
    assert records.read_state(NS, "agent-1") is None
    made = records.write_state(NS, "agent-1", '{"threshold": 0.7}')
    assert made == StateEntry(
        namespace=NS, key="agent-1", value='{"threshold": 0.7}', version=1, updated_at=clock.now
    )
    assert records.read_state(NS, "agent-1") == made
    clock.advance(timedelta(seconds=1))
    assert records.write_state(NS, "agent-1", "other") is None  # present: create fails
    assert records.read_state(NS, "agent-1") == made


def test_replace_only_at_the_expected_version(
    records: BaseMemoryRecordRepository, clock: TestClock
) -> None:
    assert records.write_state(NS, "k", "v", expected_version=1) is None  # absent
    assert records.read_state(NS, "k") is None
    records.write_state(NS, "k", "v1")
    clock.advance(timedelta(minutes=1))
    second = records.write_state(NS, "k", "v2", expected_version=1)
    assert second is not None
    assert (second.value, second.version, second.updated_at) == ("v2", 2, clock.now)
    assert records.write_state(NS, "k", "stale", expected_version=1) is None
    assert records.write_state(NS, "k", "ahead", expected_version=3) is None
    third = records.write_state(NS, "k", "v3", expected_version=2)
    assert third is not None and third.version == 3
    assert records.read_state(NS, "k") == third


def test_delete_unconditional_and_at_a_version(records: BaseMemoryRecordRepository) -> None:
    assert records.delete_state(NS, "k") is False
    records.write_state(NS, "k", "v")
    assert records.delete_state(NS, "k", expected_version=2) is False
    assert records.read_state(NS, "k") is not None
    assert records.delete_state(NS, "k", expected_version=1) is True
    assert records.read_state(NS, "k") is None
    assert records.delete_state(NS, "k", expected_version=1) is False
    records.write_state(NS, "k", "again")  # a deleted key can be created anew, at version 1
    entry = records.read_state(NS, "k")
    assert entry is not None and entry.version == 1
    assert records.delete_state(NS, "k") is True
    assert records.read_state(NS, "k") is None


def test_values_round_trip_exactly_up_to_the_limit(records: BaseMemoryRecordRepository) -> None:
    values = {
        "json": json.dumps({"queue": [1, 2], "text": "naïve 日本 \\ \" '"}),
        "lines": "one\ntwo\r\n\tthree ",
        "empty": "",
        "largest": "é" * (MAX_STATE_VALUE_BYTES // 2),  # two bytes each: exactly the limit
    }
    for key, value in values.items():
        records.write_state(NS, key, value)
    for key, value in values.items():
        entry = records.read_state(NS, key)
        assert entry is not None and entry.value == value, key


def test_list_in_code_point_order_with_paging(records: BaseMemoryRecordRepository) -> None:
    for key in KEYS:
        records.write_state(NS, key, f"value of {key}")
    records.write_state("other", "a", "elsewhere")
    records.write_state("settingsx", "c", "a namespace sharing a prefix")
    listed = records.list_state(NS)
    assert [e.key for e in listed] == sorted(KEYS)
    assert all(e.namespace == NS and e.value == f"value of {e.key}" for e in listed)
    pages: list[str] = []
    after: str | None = None
    while True:
        page = records.list_state(NS, after=after, limit=3)
        assert len(page) <= 3
        if not page:
            break
        pages += [e.key for e in page]
        after = page[-1].key
    assert pages == sorted(KEYS)
    assert [e.key for e in records.list_state(NS, after="a", limit=2)] == ["a b", "a:b"]
    assert [e.key for e in records.list_state(NS, after="zz")] == ["ä", "é", "日本"]
    assert records.list_state("empty") == []
    assert [e.key for e in records.list_state("other")] == ["a"]


def test_two_record_stores_in_one_database_keep_apart(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    one, two = make_records(), make_records()
    one.write_state(NS, "k", "one's")
    assert two.read_state(NS, "k") is None
    assert two.list_state(NS) == []
    made = two.write_state(NS, "k", "two's")
    assert made is not None and made.version == 1
    entry = one.read_state(NS, "k")
    assert entry is not None and entry.value == "one's"


BAD_ARGUMENTS = [
    ("namespace", {"namespace": ""}),
    ("namespace", {"namespace": "a b"}),
    ("namespace", {"namespace": "x" * 65}),
    ("namespace", {"namespace": "ns/x"}),
    ("namespace", {"namespace": None}),
    ("key", {"key": ""}),
    ("key", {"key": None}),
    ("key", {"key": 7}),
    ("key", {"key": "k" * 256}),
    ("key", {"key": "a\x00b"}),
    ("value", {"value": None}),
    ("value", {"value": b"bytes"}),
    ("value", {"value": "x" * (MAX_STATE_VALUE_BYTES + 1)}),
    ("value", {"value": "é" * (MAX_STATE_VALUE_BYTES // 2) + "x"}),
    ("value", {"value": "nul\x00"}),
    ("expected_version", {"expected_version": 0}),
    ("expected_version", {"expected_version": -1}),
    ("expected_version", {"expected_version": True}),
    ("expected_version", {"expected_version": "1"}),
    ("expected_version", {"expected_version": 1.0}),
]


def test_bad_writes_are_rejected_before_any_io(records: BaseMemoryRecordRepository) -> None:
    for argument, bad in BAD_ARGUMENTS:  # one store for every case: none may write
        call: dict[str, object] = {"namespace": NS, "key": "k", "value": "v", **bad}
        with pytest.raises(InvalidArgumentError) as err:
            records.write_state(
                call["namespace"],  # type: ignore[arg-type]
                call["key"],  # type: ignore[arg-type]
                call["value"],  # type: ignore[arg-type]
                expected_version=call.get("expected_version"),  # type: ignore[arg-type]
            )
        assert err.value.argument == argument, bad
    assert records.list_state(NS) == []


BAD_CALLS: list[tuple[str, Callable[[BaseMemoryRecordRepository], object]]] = [
    ("namespace", lambda r: r.read_state("", "k")),
    ("key", lambda r: r.read_state(NS, "")),
    ("namespace", lambda r: r.delete_state("bad ns", "k")),
    ("key", lambda r: r.delete_state(NS, None)),
    ("expected_version", lambda r: r.delete_state(NS, "k", expected_version=0)),
    ("namespace", lambda r: r.list_state("*")),
    ("after", lambda r: r.list_state(NS, after="")),
    ("after", lambda r: r.list_state(NS, after=3)),
    ("limit", lambda r: r.list_state(NS, limit=0)),
    ("limit", lambda r: r.list_state(NS, limit=1001)),
    ("limit", lambda r: r.list_state(NS, limit=True)),
    ("limit", lambda r: r.list_state(NS, limit="5")),
]


def test_bad_reads_and_deletes_are_rejected(records: BaseMemoryRecordRepository) -> None:
    records.write_state(NS, "k", "v")
    for argument, call in BAD_CALLS:
        with pytest.raises(InvalidArgumentError) as err:
            call(records)
        assert err.value.argument == argument
    entry = records.read_state(NS, "k")
    assert entry is not None and entry.version == 1


def test_limit_bounds_are_accepted(records: BaseMemoryRecordRepository) -> None:
    records.write_state(NS, "a", "1")
    records.write_state(NS, "b", "2")
    assert [e.key for e in records.list_state(NS, limit=1)] == ["a"]
    assert [e.key for e in records.list_state(NS, limit=1000)] == ["a", "b"]


def race(stores: list[BaseMemoryRecordRepository], write: Callable[..., object]) -> list[object]:
    """Every store runs ``write(store, i)`` at once; their results in store order."""
    barrier = threading.Barrier(len(stores))
    results: list[object] = [None] * len(stores)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = write(stores[i], i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_racing_writers_have_exactly_one_winner(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    first = make_records()
    stores = [first] + [make_records(shared_with=first) for _ in range(5)]
    created = race(stores, lambda s, i: s.write_state(NS, "job", f"created by {i}"))
    winners = [e for e in created if e is not None]
    assert len(winners) == 1
    assert first.read_state(NS, "job") == winners[0]
    replaced = race(
        stores, lambda s, i: s.write_state(NS, "job", f"claimed by {i}", expected_version=1)
    )
    claims = [e for e in replaced if isinstance(e, StateEntry)]
    assert len(claims) == 1 and claims[0].version == 2
    assert first.read_state(NS, "job") == claims[0]
    deleted = race(stores, lambda s, i: s.delete_state(NS, "job", expected_version=2))
    assert deleted.count(True) == 1
    assert first.read_state(NS, "job") is None
