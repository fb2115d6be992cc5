"""Probes for async code: how late the event loop runs while work is in flight, and
whether anything did blocking socket I/O on the loop's thread."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` (nearest rank); ``inf`` when empty."""
    if not values:
        return float("inf")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def loop_lags(start: Callable[[], Awaitable[Any]], tick: float = 0.005) -> list[float]:
    """Await ``start()`` (called once the probe runs) while a probe task sleeps ``tick``
    seconds in a loop; how late it woke each time (seconds). A loop that only computes
    between awaits wakes it on time; one that waits on the network in a call delays it.
    On a loaded machine the OS also deschedules the whole process now and then, which shows
    as a few late ticks whatever the code does: judge a run by a percentile, not the worst."""
    done = asyncio.Event()
    lags: list[float] = []

    async def probe() -> None:
        loop = asyncio.get_running_loop()
        while not done.is_set():
            start = loop.time()
            await asyncio.sleep(tick)
            lags.append(loop.time() - start - tick)

    ticker = asyncio.create_task(probe())
    await asyncio.sleep(tick * 2)
    try:
        await start()
    finally:
        done.set()
        await ticker
    return lags


class BlockingSocketProbe:
    """Records socket reads and writes in blocking mode made on the loop's own thread."""

    METHODS = ("recv", "recv_into", "recvfrom", "send", "sendall", "connect")

    def __init__(self) -> None:
        self.loop_thread = threading.get_ident()
        self.calls: list[str] = []
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> BlockingSocketProbe:
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
