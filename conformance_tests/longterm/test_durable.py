"""Durable analysis on every record store: an accepted message is in the store's queue before
``observe`` returns, workers claim entries with leases (one winner per entry), a dead
worker's claim returns to the pool when its lease passes, analysing twice stores nothing
twice, and forgetting a user drops their queued messages. On SQLite, PostgreSQL and Redis:
processes killed with -9 (a worker holding claims, an app right after its turns) lose no
message, and two worker processes share 1,000 queued messages, none skipped."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta

import pytest

from chatmem.core.longterm import (
    QUEUE_NAMESPACE,
    BaseMemoryRecordRepository,
    LongTermMemory,
    QueueWorker,
    RuleBasedExtractor,
    enqueue,
    make_job,
    put_settings,
)
from chatmem.testing.harness import Harness, ServerInfo

from .conftest import TestClock, store_options, store_url

LEASE = timedelta(seconds=30)


def _queued(records: BaseMemoryRecordRepository) -> int:
    count, after = 0, None
    while True:
        page = records.list_state(QUEUE_NAMESPACE, after=after, limit=1000)
        count += len(page)
        if len(page) < 1000:
            return count
        after = page[-1].key


def _contents(records: BaseMemoryRecordRepository, user: str = "ana") -> list[str]:
    found, cursor = [], None
    while True:
        page = records.find(user_id=user, limit=1000, cursor=cursor)
        found += [r.content for r in page.records]
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def _worker(records: BaseMemoryRecordRepository, name: str, **kw: object) -> QueueWorker:
    return QueueWorker(records, RuleBasedExtractor(), worker_id=name, lease=LEASE, **kw)  # type: ignore[arg-type]


def test_an_accepted_message_is_queued_in_the_store_before_observe_returns(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    memory = LongTermMemory(records, agent_id="helper", durable=True)  # analysed elsewhere
    assert memory.observe("ana", "I work at Acme Robotics.", conversation_id="c1")
    assert _queued(records) == 1
    stats = _worker(make_records(shared_with=records), "w1").drain()
    assert (stats.claimed, stats.analysed, stats.stored) == (1, 1, 1)
    assert _queued(records) == 0
    (record,) = records.find(user_id="ana").records
    assert record.conversation_id == "c1"


def test_the_in_process_worker_analyses_what_it_queued(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    memory = LongTermMemory(
        records, agent_id="helper", extractor=RuleBasedExtractor(), durable=True
    )
    try:
        for n in range(3):
            assert memory.observe("ana", f"I work at Company{n}.")
        assert memory.flush(30)
    finally:
        memory.close()
    assert _queued(records) == 0
    assert len(_contents(records)) == 3


def test_a_claim_holds_until_its_lease_passes_then_another_worker_takes_it(
    make_records: Callable[..., BaseMemoryRecordRepository], clock: TestClock
) -> None:
    records = make_records()
    enqueue(records, make_job("helper", "ana", "I work at Acme Robotics."))
    (entry,) = records.list_state(QUEUE_NAMESPACE)
    dead = _worker(records, "dead")
    claimed = dead.claim(entry)
    assert claimed is not None and claimed.version == entry.version + 1
    assert dead.claim(entry) is None, "a stale version claims nothing"
    alive = _worker(make_records(shared_with=records), "alive")
    assert alive.run_once() == 1, "held by the dead worker's lease"
    clock.advance(LEASE)
    assert alive.run_once() == 0
    assert alive.stats.analysed == 1 and _queued(records) == 0
    assert len(_contents(records)) == 1
    assert not records.delete_state(
        QUEUE_NAMESPACE, claimed.key, expected_version=claimed.version
    ), "the dead worker's late delete finds nothing"


def test_a_repeated_analysis_stores_nothing_twice(
    make_records: Callable[..., BaseMemoryRecordRepository], clock: TestClock
) -> None:
    records = make_records()
    for _ in range(2):  # the same message accepted twice (a retried turn)
        enqueue(records, make_job("helper", "ana", "I work at Acme Robotics."))
    stats = _worker(records, "w").drain()
    assert (stats.analysed, stats.stored, stats.duplicates) == (2, 1, 1)
    assert len(_contents(records)) == 1


def test_a_disabled_agents_queued_messages_are_dropped_unanalysed(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    enqueue(records, make_job("helper", "ana", "I work at Acme Robotics."))
    enqueue(records, make_job("other", "ana", "I work at Beta Labs."))
    put_settings(records, "helper", enabled=False)
    stats = _worker(records, "w").drain()
    assert (stats.skipped, stats.stored) == (1, 1)
    assert _queued(records) == 0
    assert [r.agent_id for r in records.find(user_id="ana").records] == ["other"]


def test_a_worker_leaves_an_entry_that_is_not_a_queued_message_alone(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    assert records.write_state(QUEUE_NAMESPACE, "0-not-a-message", "{}") is not None
    enqueue(records, make_job("helper", "ana", "I work at Acme Robotics."))
    stats = _worker(records, "w").drain()
    assert (stats.analysed, stats.failed) == (1, 0)
    assert [e.key for e in records.list_state(QUEUE_NAMESPACE)] == ["0-not-a-message"]
    assert records.forget_user("ana") == 1


def test_a_worker_for_one_agent_leaves_the_others_messages(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    enqueue(records, make_job("helper", "ana", "I work at Acme Robotics."))
    enqueue(records, make_job("other", "ana", "I work at Beta Labs."))
    stats = _worker(records, "w", agent_id="helper").drain()
    assert stats.analysed == 1 and _queued(records) == 1


def test_forgetting_a_user_drops_their_queued_messages(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    enqueue(records, make_job("helper", "ana", "I work at Acme Robotics."))
    enqueue(records, make_job("helper", "bo", "I work at Beta Labs."))
    records.add("helper", "ana", RuleBasedExtractor().extract("I work at Gamma.")[0])
    assert records.forget_user("ana") == 1
    assert _queued(records) == 1
    _worker(records, "w").drain()
    assert _contents(records) == [] and len(_contents(records, "bo")) == 1


def test_worker_threads_share_a_queue_and_analyse_each_message_once(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    for n in range(60):
        enqueue(records, make_job("helper", "ana", f"I work at Company{n}."))
    workers = [_worker(make_records(shared_with=records), f"w{i}") for i in range(3)]
    threads = [threading.Thread(target=w.drain) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sum(w.stats.analysed for w in workers) == 60
    assert sum(w.stats.stored for w in workers) == 60
    assert sorted(_contents(records)) == sorted(set(_contents(records)))
    assert len(_contents(records)) == 60 and _queued(records) == 0


# -- processes killed with -9 --------------------------------------------------------
MESSAGES = 1000


def _claimed_by(records: BaseMemoryRecordRepository, worker: str, text: str) -> bool:
    """Whether ``worker`` holds the claim on the queued message ``text``."""
    after = None
    while True:
        page = records.list_state(QUEUE_NAMESPACE, after=after, limit=1000)
        for entry in page:
            if f'"worker": "{worker}"' in entry.value and text in entry.value:
                return True
        if len(page) < 1000:
            return False
        after = page[-1].key


@pytest.mark.backend("sqlite", "postgres", "redis")
@pytest.mark.multiprocess
def test_killed_workers_and_apps_lose_no_message(
    make_records: Callable[..., BaseMemoryRecordRepository],
    server: ServerInfo,
    harness: Harness,
) -> None:
    """An app killed right after accepting 5 messages, a worker killed while it holds
    claims, then two workers sharing the rest: 1,005 messages, one record each."""
    import multiprocessing

    from ._workers import app_turns, drain_queue

    records = make_records()
    names = store_options(harness.name, records)
    url = store_url(server)
    ctx = multiprocessing.get_context("spawn")
    done = ctx.Event()
    app_texts = [f"I work at AppCompany{n}." for n in range(5)]
    app = ctx.Process(target=app_turns, args=(url, names, app_texts, done))
    app.start()
    assert done.wait(120), "the app never accepted its messages"
    app.kill()
    app.join(30)
    assert _queued(records) >= len(app_texts) - 1, "the app analysed what it accepted"
    hang = "I work at HangingCompany."  # the killed worker never finishes this one
    enqueue(records, make_job("helper", "ana", hang))
    for n in range(MESSAGES - 1):
        enqueue(records, make_job("helper", "ana", f"I work at Company{n}."))
    assert _queued(records) >= MESSAGES
    lease = 2.0
    killed = ctx.Process(target=drain_queue, args=(url, names, lease, "killed", "Hanging"))
    killed.start()
    deadline = time.monotonic() + 120
    while not _claimed_by(records, "killed", hang):
        assert time.monotonic() < deadline, "the worker never claimed the message"
        time.sleep(0.05)
    killed.kill()  # holding the claim
    killed.join(30)
    assert _claimed_by(records, "killed", hang)
    partial = len(_contents(records))
    assert partial < MESSAGES, f"kill it part way: {partial} records"
    workers = [ctx.Process(target=drain_queue, args=(url, names, lease, f"w{i}")) for i in range(2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(600)
        assert p.exitcode == 0
    contents = _contents(records)
    assert len(contents) == len(set(contents)) == MESSAGES + len(app_texts)
    assert _queued(records) == 0
