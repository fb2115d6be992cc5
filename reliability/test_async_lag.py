"""The async twin never blocks the event loop, shown where blocking would be unmistakable:
every round trip through the proxy gets ``LATENCY_MS`` of added latency.

``TASKS`` tasks each add a turn and read the window (at least two round trips each) through
the async twin while a probe task sleeping ``TICK`` measures how late the loop wakes it. Two
checks, both robust to the OS descheduling the process on a busy machine:

- overlap: a call that waited on the network inside the loop would serialise the tasks, so
  the batch would take at least ``TASKS * 2`` round trips; it must take under a third of
  that (physics, not a tuned timing);
- responsiveness: the median probe lag stays under ``MAX_LAG``, half a round trip.

The sync twin driven the same way from coroutines is the negative control: it serialises
the batch (the overlap check fails for it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    MessageWindowChatMemory,
    UserMessage,
    async_repository_from_url,
    repository_from_url,
)
from chatmem.testing.harness import Harness, ServerInfo
from chatmem.testing.probes import loop_lags, percentile

from .endpoints import TIMEOUTS, through, upstream_port
from .toxiproxy import Toxiproxy

LATENCY_MS = 100
TASKS = 40
CONTROL_TASKS = 8
TICK = 0.005
MAX_LAG = LATENCY_MS / 2000
"""Seconds: half a round trip's added latency (the bound on the median probe lag)."""


def serial_seconds(tasks: int) -> float:
    """The least time ``tasks`` turns of two round trips each take one after another."""
    return tasks * 2 * LATENCY_MS / 1000


@pytest.fixture
def latent(
    harness: Harness, server: ServerInfo, toxiproxy: Toxiproxy, request: pytest.FixtureRequest
) -> Iterator[tuple[str, dict[str, Any]]]:
    if harness.name not in TIMEOUTS:
        pytest.skip("embedded: no network round trip to delay")
    direct = harness.make_repository(server)
    spec = harness.connect_spec(server, direct)
    assert spec is not None
    url, options = spec
    proxy = toxiproxy.proxy(f"{request.node.name[:40]}-{id(direct)}", upstream_port(url))
    try:
        with proxy.toxic("latency", "downstream", latency=LATENCY_MS):
            yield through(url, proxy.listen_port), options
    finally:
        proxy.clear()
        toxiproxy.request("DELETE", f"/proxies/{proxy.name}")
        harness.cleanup(server, direct)


@pytest.mark.column("async loop lag")
def test_async_twin_overlaps_round_trips_and_keeps_the_loop_responsive(
    latent: tuple[str, dict[str, Any]], note: dict[str, Any]
) -> None:
    url, options = latent

    async def main() -> tuple[list[float], float]:
        repo = await async_repository_from_url(url, **options)
        try:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=20)
            await memory.add("warm", UserMessage("connections open before the probe"))

            async def turn(w: int) -> None:
                await memory.add(f"c{w}", [UserMessage("q"), AssistantMessage("a")])
                assert len(await memory.get(f"c{w}")) == 2

            async def batch() -> None:
                await asyncio.gather(*(turn(w) for w in range(TASKS)))

            started = time.monotonic()
            lags = await loop_lags(batch, TICK)
            return lags, time.monotonic() - started
        finally:
            await repo.close()  # type: ignore[attr-defined]

    lags, took = asyncio.run(main())
    median = percentile(lags, 0.5)
    serial = serial_seconds(TASKS)
    note["summary"] = (
        f"{TASKS} tasks at +{LATENCY_MS} ms: {took:.2f} s (serial would be >= {serial:.0f} s), "
        f"median loop lag {median * 1000:.1f} ms (bound {MAX_LAG * 1000:.0f} ms)"
    )
    assert took < serial / 3, note["summary"]
    assert median < MAX_LAG, note["summary"]


@pytest.mark.column("async loop lag")
def test_the_overlap_check_catches_a_blocking_repository(
    latent: tuple[str, dict[str, Any]], note: dict[str, Any]
) -> None:
    """Negative control: the sync twin called from coroutines holds the loop per call."""
    url, options = latent
    repo = repository_from_url(url, **options)
    try:
        memory = MessageWindowChatMemory(repo, max_messages=20)
        memory.add("warm", UserMessage("connections open before the probe"))

        async def turn(w: int) -> None:
            memory.add(f"c{w}", [UserMessage("q"), AssistantMessage("a")])  # blocks the loop
            await asyncio.sleep(0)
            assert len(memory.get(f"c{w}")) == 2

        async def main() -> float:
            started = time.monotonic()
            await asyncio.gather(*(turn(w) for w in range(CONTROL_TASKS)))
            return time.monotonic() - started

        took = asyncio.run(main())
    finally:
        repo.close()  # type: ignore[attr-defined]
    serial = serial_seconds(CONTROL_TASKS)
    note["control"] = f"sync twin on the loop: {CONTROL_TASKS} tasks took {took:.2f} s"
    assert took >= serial / 3, note["control"]  # what the async check would have flagged
