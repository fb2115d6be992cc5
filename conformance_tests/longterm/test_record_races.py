"""The races every record store must win, with several handles on one store (threads) and
several processes: concurrent adds of one candidate store it once, racing reviews have one
winner, and first use by many at once creates the table once and loses nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from chatmem.core.longterm import (
    BaseMemoryRecordRepository,
    MemoryCandidate,
    MemoryStateError,
    MemoryType,
)
from chatmem.testing.harness import Harness, ServerInfo

from .conftest import store_options, store_url
from .test_records import PREF


def test_concurrent_adds_of_one_candidate_store_it_once(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    first = make_records()
    stores = [first] + [make_records(shared_with=first) for _ in range(7)]
    barrier = threading.Barrier(len(stores))
    results: list[object] = [None] * len(stores)

    def add(i: int) -> None:
        content = PREF.content.upper() if i % 2 else PREF.content
        candidate = MemoryCandidate(
            memory_type=MemoryType.PREFERENCE, content=content, confidence=0.9
        )
        barrier.wait()
        results[i] = stores[i].add("agent", "ana", candidate)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    created = [r for r in results if r is not None and r.created]  # type: ignore[attr-defined]
    assert len(created) == 1
    assert {r.record.id for r in results} == {created[0].record.id}  # type: ignore[attr-defined]
    assert len(first.find(user_id="ana").records) == 1


def test_racing_reviews_have_exactly_one_winner(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    first = make_records()
    stores = [first] + [make_records(shared_with=first) for _ in range(7)]
    for round_ in range(3):
        candidate = MemoryCandidate(
            memory_type=MemoryType.FACT, content=f"The user runs team {round_}.", confidence=0.9
        )
        rid = first.add("agent", "ana", candidate).record.id
        barrier = threading.Barrier(len(stores))
        outcomes: list[str] = []

        def review(
            i: int,
            rid: str = rid,
            barrier: threading.Barrier = barrier,
            outcomes: list[str] = outcomes,
        ) -> None:
            decide = stores[i].approve if i % 2 == 0 else stores[i].reject
            barrier.wait()
            try:
                outcome = decide(rid, reviewer=f"r{i}").status.value
            except MemoryStateError:
                outcome = "lost"
            outcomes.append(outcome)  # list.append is atomic

        threads = [threading.Thread(target=review, args=(i,)) for i in range(len(stores))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        winners = [o for o in outcomes if o != "lost"]
        assert len(outcomes) == len(stores) and len(winners) == 1
        final = first.get(rid)
        assert final is not None and final.status.value == winners[0]


@pytest.mark.backend("sqlite", "postgres", "mariadb", "redis", "mongo", "cassandra", "neo4j")
@pytest.mark.multiprocess
def test_processes_adding_one_candidate_store_it_once(
    make_records: Callable[..., BaseMemoryRecordRepository], server: ServerInfo, harness: Harness
) -> None:
    import multiprocessing

    from ._workers import add_one

    first = make_records()
    names = store_options(harness.name, first)
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [
        ctx.Process(
            target=add_one,
            args=(store_url(server), names, PREF.content.swapcase(), barrier, results),
        )
        for _ in range(4)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sum(created for _, created in outcomes) == 1
    assert len({rid for rid, _ in outcomes}) == 1
    assert [r.id for r in first.find(user_id="ana").records] == [outcomes[0][0]]


@pytest.mark.backend("sqlite", "postgres", "mariadb")
def test_first_use_by_many_threads_at_once_is_race_safe(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    first = make_records(initialize_schema="never")
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []
    made: list[BaseMemoryRecordRepository] = []

    def create(i: int) -> None:
        barrier.wait()
        try:
            repo = make_records(shared_with=first)  # creates the table if missing
            candidate = MemoryCandidate(
                memory_type=MemoryType.FACT, content=f"The user has {i} plants.", confidence=0.5
            )
            repo.add("agent", "ana", candidate)
            made.append(repo)
        except BaseException as exc:  # collected: the assertion below names it
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and len(made) == 6
    assert len(first.find(user_id="ana").records) == 6
