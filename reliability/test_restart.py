"""Server restart under load: writers keep adding while the server stops and starts again
(same data, same port); the same repository object carries on without an app restart."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

import pytest

from chatmem.core import ChatMemoryError, MessageWindowChatMemory, UserMessage
from chatmem.testing.harness import Harness, ServerInfo

from .profiles import Profile

pytestmark = pytest.mark.column("restart")

WRITER_DEADLINE = 900.0
"""Seconds a writer may run in all (outage included) before the test gives up."""


def test_restart_under_load_loses_nothing(
    harness: Harness, server: ServerInfo, profile: Profile, note: dict[str, Any]
) -> None:
    if server.url is None:
        pytest.skip("in-process: no server to restart")
    if type(harness).restart is Harness.restart:
        pytest.skip(_WHY_NOT.get(harness.name, f"{harness.name}: no restart hook"))
    repo = harness.make_repository(server)
    memory = MessageWindowChatMemory(repo, max_messages=100_000)
    conversations = ["restart-a", "restart-b"]
    writers = [f"w{i}" for i in range(profile.restart_writers)]
    acked: dict[str, list[str]] = defaultdict(list)
    failed: dict[str, list[str]] = defaultdict(list)
    untyped: list[str] = []
    typed: list[str] = []
    back = threading.Event()
    lock = threading.Lock()

    def writer(index: int, name: str) -> None:
        cid = conversations[index % 2]
        n = after = 0
        deadline = time.monotonic() + WRITER_DEADLINE
        while after < profile.restart_adds_after and time.monotonic() < deadline:
            text = f"{name}:{n}"
            n += 1
            try:
                memory.add(cid, UserMessage(text))
                acked[name].append(text)
                after += back.is_set()
            except ChatMemoryError as exc:
                failed[name].append(text)
                with lock:
                    typed.append(type(exc).__name__)
                time.sleep(0.2)
            except Exception as exc:
                failed[name].append(text)
                with lock:
                    untyped.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:200])
                time.sleep(0.2)

    threads = [threading.Thread(target=writer, args=(i, w)) for i, w in enumerate(writers)]
    try:
        for t in threads:
            t.start()
        ramp = time.monotonic() + 120
        while min(len(acked[w]) for w in writers) < 3 and time.monotonic() < ramp:
            time.sleep(0.1)
        started = time.monotonic()
        harness.restart(server)
        outage = time.monotonic() - started
        back.set()
    finally:
        back.set()
        for t in threads:
            t.join(WRITER_DEADLINE + 60)
    total_acked = sum(len(v) for v in acked.values())
    note["summary"] = (
        f"{profile.restart_writers} writers, {total_acked} acked, "
        f"{len(typed)} typed errors in a {outage:.0f} s restart"
    )
    assert not untyped, f"{len(untyped)} untyped errors, e.g. {untyped[0]}"
    for w in writers:
        assert len(acked[w]) >= profile.restart_adds_after, f"{w} never recovered"
    for index, cid in enumerate(conversations):
        texts = [m.text for m in memory.get(cid)]
        for w in writers[index::2]:
            mine = [t for t in texts if t is not None and t.split(":")[0] == w]
            for t in acked[w]:
                assert mine.count(t) == 1, f"acked {t!r} stored {mine.count(t)} times"
            assert [t for t in mine if t in acked[w]] == acked[w], f"{w}: acked writes reordered"
            extra = set(mine) - set(acked[w]) - set(failed[w])
            assert not extra, f"{w}: unexpected {sorted(extra)[:3]}"
            assert len(mine) == len(set(mine)), f"{w}: a failed write landed twice"


_WHY_NOT = {
    "sqlite": "embedded: no server process to restart",
    "mongo": "the nx-27017 stand-in keeps its data in memory: a restart starts empty",
    "neo4j": "the neo4j-harness server deletes its store when it stops",
}
