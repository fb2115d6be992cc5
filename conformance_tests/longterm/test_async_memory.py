"""``AsyncLongTermMemory``, its advisor and ``async with LongTermChatTurn`` over the async
record store: the same behaviour as the sync twin (analysis, injection, settings, the durable
queue), the loop never blocked while turns run (the chat stores' loop-lag probe), and each
twin refusing the other's store or memory before any I/O."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from chatmem.core import (
    CONVERSATION_ID,
    AsyncInMemoryChatMemoryRepository,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    SystemMessage,
    UserMessage,
)
from chatmem.core.longterm import (
    QUEUE_NAMESPACE,
    USER_ID,
    AsyncInMemoryMemoryRecordRepository,
    AsyncLongTermMemory,
    AsyncLongTermMemoryAdvisor,
    AsyncQueueWorker,
    InMemoryMemoryRecordRepository,
    LongTermChatTurn,
    LongTermMemory,
    MemoryStatus,
    RuleBasedExtractor,
    async_put_settings,
)
from chatmem.testing.probes import BlockingSocketProbe, loop_lags, percentile

from .conftest import TestClock
from .test_records import PREF

pytestmark = pytest.mark.backend("memory")
MAX_LAG = 0.05


def run(main: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(main())  # type: ignore[arg-type]


def test_observe_analyses_on_a_task_and_injects_only_approved(clock: TestClock) -> None:
    async def main() -> None:
        records = AsyncInMemoryMemoryRecordRepository(clock=clock)
        memory = AsyncLongTermMemory(records, agent_id="helper", extractor=RuleBasedExtractor())
        assert await memory.observe("ana", "I prefer Python code examples over pseudocode.")
        assert await memory.flush(10)
        (pending,) = (await records.find(user_id="ana")).records
        assert pending.status is MemoryStatus.PENDING
        assert await memory.system_prompt_block("ana") is None
        await records.approve(pending.id)
        prompt = await memory.inject([SystemMessage("Be brief."), UserMessage("hi")], "ana")
        assert pending.content in (prompt[0].text or "")
        assert memory.analyser is not None and memory.analyser.stats.stored == 1
        await memory.close()
        assert not await memory.observe("ana", "I work at Acme."), "closed: dropped"

    run(main)


def test_the_advisor_wraps_a_coroutine_and_refuses_a_plain_function(clock: TestClock) -> None:
    async def main() -> None:
        records = AsyncInMemoryMemoryRecordRepository(clock=clock)
        approved = (await records.add("helper", "ana", PREF)).record
        await records.approve(approved.id)
        memory = AsyncLongTermMemory(records, agent_id="helper", extractor=RuleBasedExtractor())
        advisor = AsyncLongTermMemoryAdvisor(memory)
        seen: list[Any] = []

        @advisor
        async def model(messages: list[Any]) -> str:
            seen.append(messages)
            return "ok"

        context = {USER_ID: "ana", CONVERSATION_ID: "c1"}
        assert await model([UserMessage("I work at Acme Robotics.")], context=context) == "ok"
        assert PREF.content in (seen[0][0].text or "")
        assert await memory.flush(10)
        stored = (await records.find(user_id="ana", status=MemoryStatus.PENDING)).records
        assert [r.conversation_id for r in stored] == ["c1"]
        with pytest.raises(InvalidArgumentError, match="fn"):
            advisor(lambda messages: "sync")
        with pytest.raises(InvalidArgumentError, match="memory"):
            AsyncLongTermMemoryAdvisor(
                LongTermMemory(InMemoryMemoryRecordRepository(), agent_id="a")
            )  # type: ignore[arg-type]
        await memory.close()

    run(main)


def test_async_with_turn_injects_and_observes_once_the_transcript_is_stored(
    clock: TestClock,
) -> None:
    async def main() -> None:
        records = AsyncInMemoryMemoryRecordRepository(clock=clock)
        approved = (await records.add("helper", "ana", PREF)).record
        await records.approve(approved.id)
        memory = AsyncLongTermMemory(records, agent_id="helper", durable=True)
        chat = AsyncInMemoryChatMemoryRepository()
        async with LongTermChatTurn(chat, "c1", long_term=memory, user_id="ana") as turn:
            turn.append(UserMessage("I work at Acme Robotics."))
            assert PREF.content in (turn.prompt[0].text or "")
            assert await records.list_state(QUEUE_NAMESPACE) == [], "observed at commit"
        (entry,) = await records.list_state(QUEUE_NAMESPACE)
        assert '"message_position": 0' in entry.value
        assert [m.text for m in await chat.find_by_conversation_id("c1")] == [
            "I work at Acme Robotics."
        ]
        worker = AsyncQueueWorker(records, RuleBasedExtractor())
        assert (await worker.drain()).stored == 1

    run(main)


def test_each_turn_refuses_the_other_twins_memory_before_any_io() -> None:
    sync_memory = LongTermMemory(InMemoryMemoryRecordRepository(), agent_id="a")
    async_memory = AsyncLongTermMemory(AsyncInMemoryMemoryRecordRepository(), agent_id="a")
    with pytest.raises(InvalidArgumentError, match="long_term"):
        LongTermChatTurn(
            AsyncInMemoryChatMemoryRepository(), "c", long_term=sync_memory, user_id="u"
        )
    with pytest.raises(InvalidArgumentError, match="long_term"):
        LongTermChatTurn(InMemoryChatMemoryRepository(), "c", long_term=async_memory, user_id="u")
    with pytest.raises(InvalidArgumentError, match="repository"):
        AsyncLongTermMemory(InMemoryMemoryRecordRepository(), agent_id="a")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="repository"):
        LongTermMemory(AsyncInMemoryMemoryRecordRepository(), agent_id="a")  # type: ignore[arg-type]


def test_a_disable_reaches_a_running_async_memory_within_the_refresh(clock: TestClock) -> None:
    async def main() -> None:
        records = AsyncInMemoryMemoryRecordRepository(clock=clock)
        approved = (await records.add("helper", "ana", PREF)).record
        await records.approve(approved.id)
        memory = AsyncLongTermMemory(
            records,
            agent_id="helper",
            extractor=RuleBasedExtractor(),
            settings_refresh=timedelta(seconds=0.1),
        )
        assert await memory.system_prompt_block("ana") is not None
        await async_put_settings(records, "helper", enabled=False)
        start = time.monotonic()
        while await memory.system_prompt_block("ana") is not None:
            assert time.monotonic() - start < 5
            await asyncio.sleep(0.02)
        assert not await memory.observe("ana", "I work at Acme Robotics.")
        await memory.close()

    run(main)


def test_turns_with_long_term_memory_never_block_the_loop(clock: TestClock) -> None:
    tasks, rounds = 8, 5

    async def main() -> None:
        records = AsyncInMemoryMemoryRecordRepository()
        for user in range(tasks):
            approved = (await records.add("helper", f"u{user}", PREF)).record
            await records.approve(approved.id)
        memory = AsyncLongTermMemory(
            records, agent_id="helper", extractor=RuleBasedExtractor(), durable=True
        )
        chat = AsyncInMemoryChatMemoryRepository()

        async def user(u: int) -> None:
            for n in range(rounds):
                async with LongTermChatTurn(
                    chat, f"c{u}", long_term=memory, user_id=f"u{u}"
                ) as turn:
                    turn.append(UserMessage(f"I work at Company{u}x{n}."))
                    assert turn.memory_block is not None

        async def work() -> None:
            await asyncio.gather(*(user(u) for u in range(tasks)))
            assert await memory.flush(30)

        with BlockingSocketProbe() as sockets:
            lags = await loop_lags(work, 0.005)
        assert not sockets.calls, sockets.calls[:3]
        assert lags and percentile(lags, 0.9) < MAX_LAG, max(lags)
        assert len((await records.find(status=MemoryStatus.PENDING, limit=1000)).records) == (
            tasks * rounds
        )
        assert await records.list_state(QUEUE_NAMESPACE) == []
        await memory.close()

    run(main)


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        ({"durable": "yes"}, "durable"),
        ({"settings_refresh": timedelta(seconds=-1)}, "settings_refresh"),
        ({"settings_refresh": 5}, "settings_refresh"),
        ({"lease": timedelta(0)}, "lease"),
        ({"agent_id": ""}, "agent_id"),
    ],
)
def test_both_twins_check_their_options_before_any_io(
    options: dict[str, Any], argument: str
) -> None:
    for memory_class, records in (
        (LongTermMemory, InMemoryMemoryRecordRepository()),
        (AsyncLongTermMemory, AsyncInMemoryMemoryRecordRepository()),
    ):
        kwargs: dict[str, Any] = {"agent_id": "a", **options}
        with pytest.raises(InvalidArgumentError) as info:
            memory_class(records, **kwargs)
        assert info.value.argument == argument


def test_the_analyser_stays_on_its_loop_and_starts_over_after_it_closed() -> None:
    """A submit from a second loop while the first runs is refused (typed); once the first
    loop closed, the next submit runs on its own loop, and what the closed loop left queued
    is counted as dropped, never silently kept."""
    import threading

    from chatmem.core import ConcurrencyError
    from chatmem.core.longterm import AsyncBackgroundAnalyser

    class Stalling(AsyncInMemoryMemoryRecordRepository):
        stall = False

        async def _add(self, *args: Any, **kwargs: Any) -> Any:
            if self.stall:
                await asyncio.sleep(3600)
            return await super()._add(*args, **kwargs)

    records = Stalling()
    analyser = AsyncBackgroundAnalyser(records, RuleBasedExtractor())

    async def analysed(text: str) -> None:
        assert analyser.submit("agent", "ana", text)
        assert await analyser.flush(timeout=10)

    run(lambda: analysed("I prefer tables."))

    async def left_queued() -> None:  # the worker stalls on the first; the loop then closes
        records.stall = True
        assert analyser.submit("agent", "ana", "I am a CTO.")
        assert analyser.submit("agent", "ana", "I work at Acme.")
        assert not await analyser.flush(timeout=0.2)

    run(left_queued)
    records.stall = False
    assert analyser.stats.dropped == 1  # the one cancelled mid-analysis
    run(lambda: analysed("I live in Seoul."))
    assert (analyser.stats.submitted, analyser.stats.processed) == (4, 2)
    assert analyser.stats.dropped == 2 and analyser.stats.failed == 0  # and the one queued

    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(analysed("I prefer dark mode."), other).result(10)

        async def from_here() -> None:
            with pytest.raises(ConcurrencyError, match="another event loop"):
                analyser.submit("agent", "ana", "I like tea.")

        run(from_here)
        asyncio.run_coroutine_threadsafe(analyser.close(timeout=10), other).result(20)
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(10)
        other.close()
    assert analyser.stats.processed == 3 and analyser.stats.failed == 0

    async def contents() -> list[str]:
        page = await records.find(user_id="ana", limit=50)
        return sorted(r.content for r in page.records)

    assert len(run(contents)) == 3  # one memory from each message that was processed
