"""``AsyncLongTermMemory`` on each backend's async record store: a turn's message queued
durably and analysed by an ``AsyncQueueWorker``, the approved memory injected, a disable
seen within the refresh, and no blocking socket call on the event loop meanwhile (the loop
lag stays low: the chat stores' probe)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from chatmem.core import AsyncInMemoryChatMemoryRepository, UserMessage
from chatmem.core.longterm import (
    QUEUE_NAMESPACE,
    AsyncBaseMemoryRecordRepository,
    AsyncInMemoryMemoryRecordRepository,
    AsyncLongTermMemory,
    AsyncQueueWorker,
    BaseMemoryRecordRepository,
    LongTermChatTurn,
    MemoryStatus,
    RuleBasedExtractor,
    async_put_settings,
)
from chatmem.testing.harness import Harness, ServerInfo
from chatmem.testing.probes import BlockingSocketProbe, loop_lags, percentile
from chatmem.testing.twins import LoopThread

from .conftest import open_async_store, store_options
from .test_records import PREF

MAX_LAG = 0.05
USERS, ROUNDS = 4, 3


async def _scenario(records: AsyncBaseMemoryRecordRepository) -> None:
    for u in range(USERS):
        approved = (await records.add("helper", f"u{u}", PREF)).record
        await records.approve(approved.id)
    memory = AsyncLongTermMemory(
        records, agent_id="helper", durable=True, settings_refresh=timedelta(seconds=0.1)
    )
    chat = AsyncInMemoryChatMemoryRepository()

    async def user(u: int) -> None:
        for n in range(ROUNDS):
            async with LongTermChatTurn(chat, f"c{u}", long_term=memory, user_id=f"u{u}") as turn:
                turn.append(UserMessage(f"I work at Company{u}x{n}."))
                assert turn.memory_block is not None and PREF.content in turn.memory_block

    async def turns_then_work() -> None:
        await asyncio.gather(*(user(u) for u in range(USERS)))
        stats = await AsyncQueueWorker(records, RuleBasedExtractor()).drain()
        assert stats.stored == USERS * ROUNDS

    with BlockingSocketProbe() as sockets:
        lags = await loop_lags(turns_then_work, 0.005)
    assert not sockets.calls, f"blocking socket I/O on the loop: {sockets.calls[:3]}"
    assert lags and percentile(lags, 0.9) < MAX_LAG, f"p90 {percentile(lags, 0.9):.3f} s"
    assert await records.list_state(QUEUE_NAMESPACE) == []
    pending = await records.find(agent_id="helper", status=MemoryStatus.PENDING, limit=100)
    assert len(pending.records) == USERS * ROUNDS
    await async_put_settings(records, "helper", enabled=False)
    for _ in range(250):
        if await memory.system_prompt_block("u0") is None:
            break
        await asyncio.sleep(0.02)
    assert await memory.system_prompt_block("u0") is None
    assert not await memory.observe("u0", "I work at Acme Robotics.")
    await memory.close()


def test_async_memory_on_the_backends_async_record_store(
    make_records: Callable[..., BaseMemoryRecordRepository],
    harness: Harness,
    server: ServerInfo,
    twin_loop: LoopThread,
    async_clients: dict[str, Any],
) -> None:
    if harness.name == "memory":
        twin_loop.run(_scenario(AsyncInMemoryMemoryRecordRepository()))
        return
    made = make_records()  # the schema, dropped at the end through the sync handle
    names = store_options(harness.name, made)

    async def main() -> None:
        records = await open_async_store(
            server, harness.name, async_clients, initialize_schema="never", **names
        )
        await _scenario(records)

    twin_loop.run(main())
