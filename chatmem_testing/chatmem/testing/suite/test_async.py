"""What only the async twin can get wrong: cancellation, many tasks on one loop, blocking.

These tests build the backend's async repository on their own event loop (the plugin's
``async_twin`` fixture, through ``Harness.make_async_twin``) and run in an async-twin run
(``--twin async``); the sync run skips them with that reason. Bounds:

- a write cancelled at any point leaves the old history or the new one, never a mix, and the
  repository stays usable;
- ``TASKS`` concurrent tasks adding to one conversation lose nothing and keep each task's
  order;
- while ``TASKS`` tasks read and write, a probe task sleeping ``TICK`` never wakes more than
  ``MAX_LAG`` late, and no socket in blocking mode is read or written on the loop's thread.
"""

from __future__ import annotations

import asyncio
import random
import socket
import threading
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import Any

from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    UserMessage,
)

TASKS = 100
TICK = 0.005
MAX_LAG = 0.25
"""Seconds a probe may wake late while ``TASKS`` tasks work: far above a loop that only
encodes and decodes between awaits, far below one that waits on the network in each call."""
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


class _BlockingSocketProbe:
    """Records socket reads and writes in blocking mode made on the loop's own thread."""

    METHODS = ("recv", "recv_into", "recvfrom", "send", "sendall", "connect")

    def __init__(self) -> None:
        self.loop_thread = threading.get_ident()
        self.calls: list[str] = []
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> _BlockingSocketProbe:
        for name in self.METHODS:
            original = getattr(socket.socket, name)
            self._saved[name] = original

            def patched(sock: socket.socket, *a: Any, _o: Any = original, _n: str = name) -> Any:
                if threading.get_ident() == self.loop_thread and sock.gettimeout() != 0.0:
                    self.calls.append(f"{_n} on {sock!r}")
                return _o(sock, *a)

            setattr(socket.socket, name, patched)
        return self

    def __exit__(self, *exc: object) -> None:
        for name, original in self._saved.items():
            setattr(socket.socket, name, original)


def test_async_calls_never_block_the_loop(async_twin: Callable[[], Any]) -> None:
    rounds = 3

    async def main() -> None:
        async with async_twin() as repo:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=20)
            await memory.add("warm", UserMessage("connections open before the probe"))
            done = asyncio.Event()
            lags: list[float] = []

            async def probe() -> None:
                loop = asyncio.get_running_loop()
                while not done.is_set():
                    start = loop.time()
                    await asyncio.sleep(TICK)
                    lags.append(loop.time() - start - TICK)

            async def worker(w: int) -> None:
                for n in range(rounds):
                    await memory.add(f"c{w}", [UserMessage(f"q{n}"), AssistantMessage(f"a{n}")])
                    assert len(await memory.get(f"c{w}")) == 2 * (n + 1)

            with _BlockingSocketProbe() as sockets:
                ticker = asyncio.create_task(probe())
                await asyncio.sleep(TICK * 2)
                await asyncio.gather(*(worker(w) for w in range(TASKS)))
                done.set()
                await ticker
            assert not sockets.calls, f"blocking socket I/O on the loop: {sockets.calls[:3]}"
            assert len(lags) >= 3, "the probe never ran while the tasks worked"
            worst = max(lags)
            assert worst < MAX_LAG, (
                f"the loop stalled {worst * 1000:.0f} ms (bound {MAX_LAG * 1000:.0f} ms) while "
                f"{TASKS} tasks used the repository"
            )

    _run(main)
