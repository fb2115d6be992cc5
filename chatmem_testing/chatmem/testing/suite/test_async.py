"""What only the async twin can get wrong: cancellation, many tasks on one loop, blocking.

These tests build the backend's async repository on their own event loop (the plugin's
``async_twin`` fixture, through ``Harness.make_async_twin``) and run in an async-twin run
(``--twin async``); the sync run skips them with that reason. Bounds:

- a write cancelled at any point leaves the old history or the new one, never a mix, and the
  repository stays usable;
- ``TASKS`` concurrent tasks adding to one conversation lose nothing and keep each task's
  order;
- while ``TASKS`` tasks read and write, a probe task sleeping ``TICK`` wakes at most
  ``MAX_LAG`` late in 9 of 10 ticks (the rest may be the OS descheduling the process on a
  busy machine), and no socket in blocking mode is read or written on the loop's thread.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import Any

from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    UserMessage,
)

from ..probes import BlockingSocketProbe, loop_lags, percentile

TASKS = 100
TICK = 0.005
MAX_LAG = 1.0
"""Seconds a probe may wake late (90th percentile) while ``TASKS`` tasks work: above a loop
that only encodes and decodes between awaits, also on a two-core machine running two test
sessions and JVMs (measured there: up to 0.33 s on Neo4j's driver, 0.76 s for a framework
adapter); a blocking socket call on the loop fails the test by itself, through the probe."""
CANCEL_TRIALS = 12


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(main())


def test_async_cancelled_write_leaves_old_or_new(async_twin: Callable[[], Any]) -> None:
    old = [UserMessage(f"old {i}") for i in range(10)]
    new = [AssistantMessage(f"new {i}") for i in range(60)]
    rng = random.Random(7)

    async def main() -> None:
        async with async_twin() as repo:
            outcomes = set()
            for trial in range(CANCEL_TRIALS):
                await repo.save_all("c", old)
                task = asyncio.create_task(repo.save_all("c", new))
                await asyncio.sleep(rng.uniform(0, 0.004) if trial else 0)
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
                texts = [m.text for m in await repo.find_by_conversation_id("c")]
                assert texts in ([m.text for m in old], [m.text for m in new]), (
                    f"trial {trial}: a cancelled replace left {len(texts)} messages"
                )
                outcomes.add(len(texts))
                # a cancelled append is all or nothing, and the repository still works
                await repo.save_all("a", old)
                task = asyncio.create_task(repo.append("a", new[:5]))
                await asyncio.sleep(0)
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
                got = len(await repo.find_by_conversation_id("a"))
                assert got in (10, 15), f"trial {trial}: a cancelled append left {got}"
            await repo.append("a", UserMessage("after"))
            assert (await repo.find_by_conversation_id("a"))[-1].text == "after"

    _run(main)


def test_async_many_tasks_on_one_conversation_lose_nothing(
    async_twin: Callable[[], Any],
) -> None:
    adds = 2

    async def main() -> None:
        async with async_twin() as repo:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=TASKS * adds + 10)

            async def writer(w: int) -> None:
                for n in range(adds):
                    await memory.add("shared", UserMessage(f"w{w}:{n}"))

            await asyncio.gather(*(writer(w) for w in range(TASKS)))
            texts = [m.text or "" for m in await memory.get("shared")]
            assert len(texts) == len(set(texts)) == TASKS * adds
            for w in range(TASKS):
                mine = [t for t in texts if t.split(":")[0] == f"w{w}"]
                assert mine == [f"w{w}:{n}" for n in range(adds)]

    _run(main)


def test_async_calls_never_block_the_loop(async_twin: Callable[[], Any]) -> None:
    rounds = 3

    async def main() -> None:
        async with async_twin() as repo:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=20)
            await memory.add("warm", UserMessage("connections open before the probe"))

            async def worker(w: int) -> None:
                for n in range(rounds):
                    await memory.add(f"c{w}", [UserMessage(f"q{n}"), AssistantMessage(f"a{n}")])
                    assert len(await memory.get(f"c{w}")) == 2 * (n + 1)

            with BlockingSocketProbe() as sockets:
                lags = await loop_lags(
                    lambda: asyncio.gather(*(worker(w) for w in range(TASKS))), TICK
                )
            assert not sockets.calls, f"blocking socket I/O on the loop: {sockets.calls[:3]}"
            assert lags, "the probe never ran while the tasks worked"
            p90 = percentile(lags, 0.9)
            assert p90 < MAX_LAG, (
                f"the loop stalled {p90 * 1000:.0f} ms in 1 of 10 ticks (bound "
                f"{MAX_LAG * 1000:.0f} ms; worst {max(lags) * 1000:.0f} ms) while {TASKS} "
                "tasks used the repository"
            )

    _run(main)
