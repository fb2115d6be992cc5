"""The async workload: 100 conversations doing turns at once, async against threads.

Async: ``await chatmem.core.async_repository_from_url(url, **options)`` and
``AsyncMessageWindowChatMemory``, all conversations' turns awaited with ``asyncio.gather``.
Sync: the harness's repository and ``MessageWindowChatMemory``, the same conversations on a
thread pool of the same size. Both keep every message (``keep_history``) and run in the same
bench run; reported as turns/s and the async/sync ratio. The async names are imported
lazily: a core without them, or a backend whose twin has not landed, reports "not run".
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks._workload import WINDOW, make_messages, turn_pairs
from chatmem.core import MessageWindowChatMemory
from chatmem.testing.harness import unique_suffix

CONCURRENCY = 100
NOT_AVAILABLE = "async twin not available (chatmem.core has no async_repository_from_url)"


def async_api() -> tuple[Any, Any] | None:
    """``(async_repository_from_url, AsyncMessageWindowChatMemory)``, or None before they land."""
    try:
        from chatmem.core import (
            AsyncMessageWindowChatMemory,
            async_repository_from_url,
        )
    except ImportError:
        return None
    return async_repository_from_url, AsyncMessageWindowChatMemory


def run_async(
    name: str | None, harness: Any, server: Any, *, quick: bool, names: list[str] | None = None
) -> list[dict[str, Any]]:
    """Rows for the results' ``async`` section (measured, or not run with the reason)."""
    api = async_api()
    if name is None:  # called without --async: say why nothing ran
        reason = NOT_AVAILABLE if api is None else "pass --async to run it"
        return [{"backend": n, "not_run": reason} for n in names or []]
    if api is None:
        return [{"backend": name, "not_run": NOT_AVAILABLE}]
    turns = 2 if quick else 10
    repo = harness.make_repository(server)
    try:
        spec = harness.connect_spec(server, repo)
        if spec is None and name == "memory":  # in-process: the async twin has its own dict
            spec = ("memory://", {})
        if spec is None:
            return [{"backend": name, "not_run": "the harness gives no URL for this server"}]
        cids = [f"async-{unique_suffix()}-{i}" for i in range(CONCURRENCY)]
        seed = make_messages(10)
        for cid in cids:
            repo.save_all(cid, seed)
        pairs = turn_pairs()
        try:  # the async twin first: a backend without one is reported, not timed
            async_tps = asyncio.run(_async_round(api, spec, cids, turns))
        except Exception as exc:
            reason = f"async twin not available for {name}: {type(exc).__name__}: {exc}"
            return [{"backend": name, "not_run": reason[:300]}]
        memory = MessageWindowChatMemory(repo, max_messages=WINDOW, keep_history=True)

        def sync_conversation(cid: str) -> None:
            for i in range(turns):
                user, reply = pairs[i % len(pairs)]
                memory.add(cid, user)
                memory.add(cid, reply)
                memory.get(cid)

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
            list(pool.map(sync_conversation, cids))
        sync_tps = CONCURRENCY * turns / (time.perf_counter() - t0)
    finally:
        harness.cleanup(server, repo)
    return [
        {
            "backend": name,
            "conversations": CONCURRENCY,
            "turns_each": turns,
            "sync_threads_turns_per_s": round(sync_tps, 1),
            "async_turns_per_s": round(async_tps, 1),
            "ratio_async_to_sync": round(async_tps / sync_tps, 3),
        }
    ]


async def _async_round(api: tuple[Any, Any], spec: Any, cids: list[str], turns: int) -> float:
    from_url, memory_class = api
    url, options = spec
    repo = from_url(url, **options)
    if asyncio.iscoroutine(repo):  # core's async_repository_from_url is awaited
        repo = await repo
    memory = memory_class(repo, max_messages=WINDOW, keep_history=True)
    pairs = turn_pairs()

    async def conversation(cid: str) -> None:
        for i in range(turns):
            user, reply = pairs[i % len(pairs)]
            await memory.add(cid, user)
            await memory.add(cid, reply)
            await memory.get(cid)

    try:
        # warm like the sync side (whose repository seeded the conversations): the pool's
        # connections open, and statements are prepared, before the clock starts
        await asyncio.gather(*(memory.get(cid) for cid in cids))
        t0 = time.perf_counter()
        await asyncio.gather(*(conversation(cid) for cid in cids))
        return CONCURRENCY * turns / (time.perf_counter() - t0)
    finally:
        close = getattr(repo, "close", None) or getattr(repo, "aclose", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result
