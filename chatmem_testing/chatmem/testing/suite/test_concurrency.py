"""Atomicity and lossless concurrency."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
    async_repository_from_url,
    repository_from_url,
)
from chatmem.core.backend import BaseChatMemoryRepository

from ..harness import Harness, ServerInfo
from ..twins import sync_of

Repo = BaseChatMemoryRepository
THREADS = 8
ADDS = 50


def _worker_label(text: str | None) -> tuple[str, int]:
    assert text is not None
    worker, n = text.split(":")
    return worker, int(n)


def _assert_lossless(messages: list[Message], workers: list[str], per_worker: int) -> None:
    seen: dict[str, list[int]] = {w: [] for w in workers}
    for m in messages:
        w, n = _worker_label(m.text)
        seen[w].append(n)
    for w in workers:
        assert seen[w] == list(range(per_worker)), f"worker {w} lost or reordered messages"
    positions = [m.position for m in messages]
    assert positions == sorted(p for p in positions if p is not None)
    assert len(set(positions)) == len(positions)


def test_replace_is_atomic_for_concurrent_readers(repository: Repo) -> None:
    old = [UserMessage(f"old:{i}") for i in range(12)]
    new = [AssistantMessage(f"new:{i}") for i in range(17)]
    repository.save_all("atomic", old)
    stop = threading.Event()
    bad: list[list[str | None]] = []
    errors: list[BaseException] = []
    reads = [0]

    def reader() -> None:
        try:
            while not stop.is_set():
                got = repository.find_by_conversation_id("atomic")
                reads[0] += 1
                if got != old and got != new:
                    bad.append([m.text for m in got])
        except BaseException as exc:  # a reader that crashes mid-replace is a failure too
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for i in range(60):
            repository.save_all("atomic", new if i % 2 == 0 else old)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, f"a concurrent reader failed: {errors[0]!r}"
    assert reads[0] > 0
    assert not bad, f"{len(bad)} of {reads[0]} reads saw a mix or an empty list, e.g. {bad[0]}"


def test_concurrent_appends_lose_nothing(repository: Repo) -> None:
    workers = [f"w{i}" for i in range(THREADS)]

    def run(w: str) -> None:
        for n in range(ADDS):
            repository.append("shared", UserMessage(f"{w}:{n}"))

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(run, workers))
    _assert_lossless(repository.find_by_conversation_id("shared"), workers, ADDS)


def test_concurrent_pop_last_takes_distinct_messages(repository: Repo) -> None:
    """THREADS poppers on a 20-message log get THREADS distinct messages (threads here; in an
    async-twin run, concurrent tasks on the twin's loop) and leave exactly the rest, in order."""
    stored = [UserMessage(f"m:{i}") for i in range(20)]
    repository.save_all("popped", stored)
    repository.save_all("bystander", stored[:3])
    start = threading.Barrier(THREADS)

    def pop(_: int) -> Message | None:
        start.wait()
        return repository.pop_last("popped")

    with ThreadPoolExecutor(THREADS) as pool:
        got = list(pool.map(pop, range(THREADS)))
    texts = [m.text or "" for m in got if m is not None]
    assert len(texts) == THREADS and len(set(texts)) == THREADS, f"poppers got {texts}"
    assert sorted(texts) == sorted(f"m:{i}" for i in range(20 - THREADS, 20))
    left = repository.find_by_conversation_id("popped")
    assert [m.text for m in left] == [f"m:{i}" for i in range(20 - THREADS)]
    assert [m.text for m in repository.find_by_conversation_id("bystander")] == [
        "m:0",
        "m:1",
        "m:2",
    ]


def test_concurrent_window_adds_lose_nothing(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=THREADS * ADDS + 10)
    workers = [f"w{i}" for i in range(THREADS)]

    def run(w: str) -> None:
        for n in range(ADDS):
            memory.add("shared", UserMessage(f"{w}:{n}"))

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(run, workers))
    _assert_lossless(memory.get("shared"), workers, ADDS)


def test_concurrent_system_and_plain_adds_stay_consistent(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=1000)
    workers = [f"w{i}" for i in range(4)]

    def plain(w: str) -> None:
        for n in range(25):
            memory.add("mixed", [UserMessage(f"{w}:{n}")])

    def system(k: int) -> None:
        for n in range(10):
            memory.add("mixed", [SystemMessage(f"S{k}.{n}")])

    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(plain, w) for w in workers] + [
            pool.submit(system, k) for k in (0, 1)
        ]
        for f in futures:
            f.result()
    got = memory.get("mixed")
    systems = [m for m in got if isinstance(m, SystemMessage)]
    assert len(systems) == 1, [m.text for m in systems]
    _assert_lossless([m for m in got if not isinstance(m, SystemMessage)], workers, 25)


def test_concurrent_small_window_adds_keep_a_valid_window(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=6)

    def run(w: int) -> None:
        for n in range(20):
            memory.add("small", [UserMessage(f"w{w}:{n}"), AssistantMessage(f"w{w}:{n}")])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(run, range(4)))
    got = memory.get("small")
    assert 0 < len(got) <= 6 and isinstance(got[0], UserMessage)
    positions = [m.position for m in got]
    assert positions == sorted(p for p in positions if p is not None)


def test_first_use_is_race_safe(
    harness: Harness, server: ServerInfo, make_repository: Callable[..., Repo]
) -> None:
    options = harness.namespace_options()
    barrier = threading.Barrier(6)

    def create_and_write(i: int) -> None:
        barrier.wait(timeout=60)
        repo = make_repository(**options)
        repo.save_all(f"first-use-{i}", [UserMessage(f"hello {i}")])
        repo.append("first-use-shared", UserMessage(f"w{i}:0"))

    with ThreadPoolExecutor(6) as pool:
        for f in [pool.submit(create_and_write, i) for i in range(6)]:
            f.result()
    repo = make_repository(**options)
    ids = set(repo.find_conversation_ids())
    assert {f"first-use-{i}" for i in range(6)} <= ids
    _assert_lossless(
        repo.find_by_conversation_id("first-use-shared"), [f"w{i}" for i in range(6)], 1
    )


async def _aprocess_worker(
    url: str, options: dict[str, Any], worker: str, adds: int, window: int
) -> None:
    repo = await async_repository_from_url(url, **options)
    memory = AsyncMessageWindowChatMemory(repo, max_messages=window)
    for n in range(adds):
        await memory.add("processes", UserMessage(f"{worker}:{n}"))
    close = getattr(repo, "close", None)
    if close is not None:
        await close()


def _process_worker(
    url: str, options: dict[str, Any], worker: str, adds: int, window: int, twin: str
) -> None:
    if twin == "async":  # each process runs the async twin on its own loop
        asyncio.run(_aprocess_worker(url, options, worker, adds, window))
        return
    repo = repository_from_url(url, **options)
    memory = MessageWindowChatMemory(repo, max_messages=window)
    for n in range(adds):
        memory.add("processes", UserMessage(f"{worker}:{n}"))


def test_concurrent_window_adds_from_processes_lose_nothing(
    harness: Harness, server: ServerInfo, repository: Repo, twin: str
) -> None:
    spec = harness.connect_spec(server, sync_of(repository))
    if spec is None:
        pytest.skip(f"{harness.name} is an in-process store: other processes cannot reach it")
    url, options = spec
    workers = [f"p{i}" for i in range(4)]
    window = 4 * 30 + 10
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_process_worker, args=(url, options, w, 30, window, twin))
        for w in workers
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0, f"worker process failed with exit code {p.exitcode}"
    memory = MessageWindowChatMemory(repository, max_messages=window)
    _assert_lossless(memory.get("processes"), workers, 30)
