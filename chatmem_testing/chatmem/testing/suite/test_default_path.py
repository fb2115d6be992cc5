"""The default path: repositories built exactly as the README shows, on a cold store.

Every writer builds its own repository with ``repository_from_url(url)`` and no options, on
a store whose default namespace does not exist yet (``Harness.cold_default_url``), all at
the same moment, then adds through ``MessageWindowChatMemory``. Afterwards nothing is lost,
nothing is duplicated and each writer's order is kept. First-use races are rare events
(one trial in a dozen, or fewer), so each scenario runs for many fresh cold namespaces:
``Harness.default_path_rounds`` gives (thread rounds, process rounds) per backend.

In an async-twin run (``--twin async``) the same scenarios use
``async_repository_from_url(url)`` and ``AsyncMessageWindowChatMemory``: the "threads" are
concurrent tasks on one event loop, each process runs its own loop.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from typing import Any

import pytest

from chatmem.core import (
    AsyncMessageWindowChatMemory,
    MessageWindowChatMemory,
    UserMessage,
    async_repository_from_url,
    repository_from_url,
)
from chatmem.core.backend import BaseChatMemoryRepository

from ..harness import Harness, ServerInfo, Unavailable

THREADS = 8
PROCESSES = 4
ADDS = 6
"""Adds per writer to the shared conversation (plus one to its own conversation)."""
WINDOW = 1000
"""Larger than everything written, so the window shows every message."""
SHARED = "shared"
BARRIER_SECONDS = 120


def _close(repo: BaseChatMemoryRepository) -> None:
    close = getattr(repo, "close", None)
    if close is not None:
        close()


async def _awrite(url: str, worker: str) -> None:
    """The async writer: build the async twin from the URL, add, close."""
    repo = await async_repository_from_url(url)
    try:
        memory = AsyncMessageWindowChatMemory(repo, max_messages=WINDOW)
        for n in range(ADDS):
            await memory.add(SHARED, UserMessage(f"{worker}:{n}"))
        await memory.add(f"own-{worker}", UserMessage(f"{worker}:own"))
    finally:
        close = getattr(repo, "close", None)
        if close is not None:
            await close()


async def _awrite_all(url: str, workers: list[str]) -> list[str]:
    """Every writer as a task on this loop, all started together; their errors."""
    results = await asyncio.gather(*(_awrite(url, w) for w in workers), return_exceptions=True)
    return [
        f"{w}: {r!r}" for w, r in zip(workers, results, strict=True) if isinstance(r, BaseException)
    ]


def _write(url: str, worker: str, barrier: Any, twin: str = "sync") -> None:
    """What one writer does: wait for the others, build from the URL, add, close."""
    barrier.wait(BARRIER_SECONDS)
    if twin == "async":
        asyncio.run(_awrite(url, worker))
        return
    repo = repository_from_url(url)
    try:
        memory = MessageWindowChatMemory(repo, max_messages=WINDOW)
        for n in range(ADDS):
            memory.add(SHARED, UserMessage(f"{worker}:{n}"))
        memory.add(f"own-{worker}", UserMessage(f"{worker}:own"))
    finally:
        _close(repo)


def _thread_writer(url: str, worker: str, barrier: Any, errors: list[str]) -> None:
    try:
        _write(url, worker, barrier)
    except BaseException as exc:  # collected: the test fails with it
        errors.append(f"{worker}: {exc!r}")


def _process_writer(url: str, worker: str, barrier: Any, errors: Any, twin: str) -> None:
    try:
        _write(url, worker, barrier, twin)
    except BaseException as exc:  # reported to the parent, which fails the test with it
        errors.put(f"{worker}: {exc!r}")
        raise


def _check(url: str, workers: list[str], round_no: int) -> None:
    """Nothing lost, nothing duplicated, each writer's order kept, listing exact."""
    repo = repository_from_url(url)
    try:
        shared = repo.find_by_conversation_id(SHARED)
        window = MessageWindowChatMemory(repo, max_messages=WINDOW).get(SHARED)
        ids = repo.find_conversation_ids()
    finally:
        _close(repo)
    where = f"round {round_no}"
    texts = [m.text for m in shared]
    assert len(texts) == len(set(texts)) == len(workers) * ADDS, (
        f"{where}: {len(texts)} messages ({len(set(texts))} distinct) "
        f"for {len(workers) * ADDS} added"
    )
    assert [m.text for m in window] == texts, f"{where}: the window differs from the log"
    for w in workers:
        mine = [t for t in texts if t is not None and t.split(":")[0] == w]
        assert mine == [f"{w}:{n}" for n in range(ADDS)], f"{where}: {w} wrote {mine}"
    positions = [m.position for m in shared]
    assert None not in positions, where
    assert positions == sorted(p for p in positions if p is not None), where
    assert len(set(positions)) == len(positions), where
    expected = {SHARED, *(f"own-{w}" for w in workers)}
    assert sorted(ids) == sorted(expected), f"{where}: listing {sorted(ids)}"


def _cold_url(harness: Harness, server: ServerInfo, made: list[str]) -> str:
    try:
        url = harness.cold_default_url(server)
    except Unavailable as exc:
        pytest.skip(f"{harness.name}: no cold default URL: {exc}")
    made.append(url)
    return url


def test_cold_default_path_from_threads_loses_nothing(
    harness: Harness, server: ServerInfo, cold_urls: list[str], twin: str
) -> None:
    rounds, _ = harness.default_path_rounds
    workers = [f"t{i}" for i in range(THREADS)]
    for round_no in range(rounds):
        url = _cold_url(harness, server, cold_urls)
        if twin == "async":
            errors = asyncio.run(_awrite_all(url, workers))
            assert not errors, f"round {round_no}: {len(errors)} tasks failed, e.g. {errors[0]}"
            _check(url, workers, round_no)
            harness.cleanup_cold_default(server, url)
            cold_urls.remove(url)
            continue
        barrier = threading.Barrier(THREADS)
        errors = []

        threads = [
            threading.Thread(target=_thread_writer, args=(url, w, barrier, errors)) for w in workers
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, f"round {round_no}: {len(errors)} writers failed, e.g. {errors[0]}"
        _check(url, workers, round_no)
        harness.cleanup_cold_default(server, url)
        cold_urls.remove(url)


@pytest.mark.multiprocess
def test_cold_default_path_from_processes_loses_nothing(
    harness: Harness, server: ServerInfo, cold_urls: list[str], twin: str
) -> None:
    _, rounds = harness.default_path_rounds
    workers = [f"p{i}" for i in range(PROCESSES)]
    ctx = multiprocessing.get_context("spawn")
    for round_no in range(rounds):
        url = _cold_url(harness, server, cold_urls)
        barrier = ctx.Barrier(PROCESSES)
        errors = ctx.Queue()
        procs = [
            ctx.Process(target=_process_writer, args=(url, w, barrier, errors, twin))
            for w in workers
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(300)
        failures = []
        while not errors.empty():
            failures.append(errors.get())
        codes = [p.exitcode for p in procs]
        assert codes == [0] * PROCESSES and not failures, f"round {round_no}: {codes} {failures}"
        _check(url, workers, round_no)
        harness.cleanup_cold_default(server, url)
        cold_urls.remove(url)
