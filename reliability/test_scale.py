"""Scale: 16 writers adding to one conversation through the window memory, as threads of one
process and spread over 4 processes; every message lands once, in each writer's order."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from chatmem.core import MessageWindowChatMemory, UserMessage, repository_from_url
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import Harness, ServerInfo

from .profiles import Profile

CID = "scale"


def _assert_lossless(texts: list[str | None], writers: list[str], adds: int) -> None:
    seen: dict[str, list[int]] = {w: [] for w in writers}
    for t in texts:
        assert t is not None
        w, n = t.split(":")
        seen[w].append(int(n))
    for w in writers:
        assert seen[w] == list(range(adds)), (
            f"{w}: {len(seen[w])} of {adds} stored, in order: {seen[w] == sorted(seen[w])}"
        )


def _run_writers(memory: MessageWindowChatMemory, writers: list[str], adds: int) -> None:
    def run(w: str) -> None:
        for n in range(adds):
            memory.add(CID, UserMessage(f"{w}:{n}"))

    with ThreadPoolExecutor(len(writers)) as pool:
        list(pool.map(run, writers))


@pytest.mark.column("scale_threads")
def test_threads_window_adds_lose_nothing(
    repository: BaseChatMemoryRepository, profile: Profile, note: dict[str, Any]
) -> None:
    writers = [f"t{i}" for i in range(profile.scale_threads)]
    window = len(writers) * profile.scale_adds + 10
    memory = MessageWindowChatMemory(repository, max_messages=window)
    _run_writers(memory, writers, profile.scale_adds)
    got = [m.text for m in memory.get(CID)]
    _assert_lossless(got, writers, profile.scale_adds)
    note["summary"] = f"{len(writers)}x{profile.scale_adds}: {len(got)}/{len(got)} kept"


def _process(url: str, options: dict[str, Any], writers: list[str], adds: int, window: int) -> None:
    repo = repository_from_url(url, **options)
    _run_writers(MessageWindowChatMemory(repo, max_messages=window), writers, adds)


@pytest.mark.column("scale_processes")
def test_processes_window_adds_lose_nothing(
    harness: Harness,
    server: ServerInfo,
    repository: BaseChatMemoryRepository,
    profile: Profile,
    note: dict[str, Any],
) -> None:
    spec = harness.connect_spec(server, repository)
    if spec is None:
        pytest.skip("in-process: other processes cannot reach it")
    url, options = spec
    per = profile.scale_threads // profile.scale_processes
    groups = [[f"p{p}t{t}" for t in range(per)] for p in range(profile.scale_processes)]
    window = per * profile.scale_processes * profile.scale_adds + 10
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_process, args=(url, options, g, profile.scale_adds, window))
        for g in groups
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(3600)
        assert p.exitcode == 0, f"writer process failed with exit code {p.exitcode}"
    got = [m.text for m in MessageWindowChatMemory(repository, max_messages=window).get(CID)]
    _assert_lossless(got, [w for g in groups for w in g], profile.scale_adds)
    note["summary"] = (
        f"{profile.scale_processes} processes x {per} threads x {profile.scale_adds}: "
        f"{len(got)}/{len(got)} kept"
    )
