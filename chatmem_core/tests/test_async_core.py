"""The async core: window memory, turns and the advisor on async repositories, a loop-lag
probe showing they never block the event loop, and the twin checks."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncInMemoryChatMemoryRepository,
    AsyncMessageWindowChatMemory,
    ChatTurn,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    Message,
    MessageChatMemoryAdvisor,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
    async_repository_from_url,
    window_size,
)
from chatmem.core.backend import async_retry
from chatmem.testing.probes import loop_lags

TASKS = 100
TICK = 0.005
MAX_LAG = 0.25


def texts(messages: list[Message]) -> list[str | None]:
    return [m.text for m in messages]


class SlowStore(AsyncInMemoryChatMemoryRepository):
    """An async store whose every call waits ``delay`` like a network round trip; with
    ``blocking`` it waits with ``time.sleep`` instead (the negative control)."""

    def __init__(self, delay: float = 0.002, blocking: bool = False) -> None:
        super().__init__()
        self.delay, self.blocking = delay, blocking

    async def _wait(self) -> None:
        if self.blocking:
            time.sleep(self.delay)
        else:
            await asyncio.sleep(self.delay)

    async def _find(self, cid: str) -> list[Message]:
        await self._wait()
        return await super()._find(cid)

    async def _save_all(self, cid: str, messages: list[Message]) -> None:
        await self._wait()
        await super()._save_all(cid, messages)

    async def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        await self._wait()
        await super()._append(cid, messages, trim_to)

    async def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        await self._wait()
        return await super()._load_window(cid, non_system_limit)


async def worst_lag(work: Any) -> float:
    """The latest the loop woke a ``TICK`` probe while ``work`` (a coroutine) ran (a probe
    that could not tick three times during the work reports the whole run)."""
    lags = await loop_lags(lambda: work, TICK)
    return max(lags) if len(lags) >= 3 else float("inf")


def test_async_window_memory_follows_the_window_rule() -> None:
    async def main() -> None:
        memory = AsyncMessageWindowChatMemory(max_messages=3)
        await memory.add("c", [SystemMessage("S"), UserMessage("U1"), AssistantMessage("A1")])
        await memory.add("c", [UserMessage("U2"), AssistantMessage("A2")])
        assert texts(await memory.get("c")) == ["S", "U2", "A2"]
        await memory.clear("c")
        assert await memory.get("c") == []

    asyncio.run(main())


def test_keep_history_stores_everything_and_reads_the_window() -> None:
    repo = InMemoryChatMemoryRepository()
    memory = MessageWindowChatMemory(repo, max_messages=4, keep_history=True)
    for i in range(10):
        memory.add("c", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    assert texts(memory.get("c")) == ["u8", "a8", "u9", "a9"]
    assert len(repo.find_by_conversation_id("c")) == 20
    memory.add("c", SystemMessage("S1"))
    memory.add("c", SystemMessage("S2"))  # replaces S1 in the store, history stays
    stored = repo.find_by_conversation_id("c")
    assert [m.text for m in stored if isinstance(m, SystemMessage)] == ["S2"]
    assert len(stored) == 21
    window = texts(memory.get("c"))
    assert window.count("S2") == 1 and "S1" not in window and len(window) <= 5
    with pytest.raises(InvalidArgumentError, match="keep_history"):
        MessageWindowChatMemory(repo, keep_history="yes")  # type: ignore[arg-type]


def test_twins_refuse_the_other_twins_repository() -> None:
    with pytest.raises(InvalidArgumentError, match="async repository"):
        MessageWindowChatMemory(AsyncInMemoryChatMemoryRepository())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="sync repository"):
        AsyncMessageWindowChatMemory(InMemoryChatMemoryRepository())  # type: ignore[arg-type]
    with (
        pytest.raises(InvalidArgumentError, match="async with"),
        ChatTurn(AsyncInMemoryChatMemoryRepository(), "c"),
    ):
        pass


def test_async_chat_turn_stores_only_after_success() -> None:
    async def main() -> None:
        repo = AsyncInMemoryChatMemoryRepository()
        await repo.save_all("c", [UserMessage("before")])
        async with ChatTurn(repo, "c") as turn:
            assert texts(turn.messages) == ["before"]
            turn.append([UserMessage("q"), AssistantMessage("a")])
        assert texts(await repo.find_by_conversation_id("c")) == ["before", "q", "a"]
        with pytest.raises(RuntimeError):
            async with ChatTurn(repo, "c") as turn:
                turn.append(UserMessage("lost"))
                raise RuntimeError("model failed")
        assert texts(await repo.find_by_conversation_id("c")) == ["before", "q", "a"]

        async def cancelled() -> None:
            async with ChatTurn(repo, "c") as turn:
                turn.append(UserMessage("cancelled"))
                await asyncio.sleep(10)

        task = asyncio.create_task(cancelled())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert texts(await repo.find_by_conversation_id("c")) == ["before", "q", "a"]

    asyncio.run(main())


def test_a_turn_that_leaves_the_reading_to_its_caller() -> None:
    """``load=False`` (a framework session reads the history itself): entering reads nothing,
    the turn's messages are appended as given on success, nothing on failure."""
    repo = InMemoryChatMemoryRepository()
    repo.save_all("c", [UserMessage("before")])
    reads: list[str] = []
    real = repo._find
    repo._find = lambda cid: reads.append(cid) or real(cid)  # type: ignore[method-assign]
    with ChatTurn(repo, "c", load=False) as turn:
        assert turn.messages == [] and reads == []
        turn.append([UserMessage("q"), AssistantMessage("a")])
    del repo._find
    assert texts(repo.find_by_conversation_id("c")) == ["before", "q", "a"]

    async def main() -> None:
        arepo = AsyncInMemoryChatMemoryRepository()
        await arepo.save_all("c", [UserMessage("before")])
        with pytest.raises(RuntimeError):
            async with ChatTurn(arepo, "c", load=False) as turn:
                turn.append(UserMessage("lost"))
                raise RuntimeError("model failed")
        async with ChatTurn(arepo, "c", load=False) as turn:
            turn.append(UserMessage("kept"))
        assert turn.stored
        assert texts(await arepo.find_by_conversation_id("c")) == ["before", "kept"]
        with pytest.raises(InvalidArgumentError, match="with ChatTurn"):
            async with ChatTurn(repo, "c", load=False):
                pass

    asyncio.run(main())
    for kwargs, argument in (
        ({"load": False, "last": 2}, "last"),
        ({"load": False, "preprocessors": [window_size(2)]}, "preprocessors"),
        ({"load": "no"}, "load"),
    ):
        with pytest.raises(InvalidArgumentError) as info:
            ChatTurn(repo, "c", **kwargs)  # type: ignore[arg-type]
        assert info.value.argument == argument


def test_async_with_on_a_sync_repository_is_refused_before_any_io() -> None:
    """One async strategy: ``async with`` awaits an async repository; a sync one is never
    run in a worker thread (it is an error naming ``repository`` and what to pass)."""
    repo = InMemoryChatMemoryRepository()
    repo.save_all("c", [UserMessage("before")])
    calls: list[str] = []
    repo._find = lambda cid: calls.append("read") or []  # type: ignore[method-assign]

    async def main() -> None:
        async with ChatTurn(repo, "c") as turn:
            turn.append(UserMessage("q"))

    with pytest.raises(InvalidArgumentError) as info:
        asyncio.run(main())
    assert info.value.argument == "repository"
    assert "with ChatTurn" in str(info.value) and "Async*ChatMemoryRepository" in str(info.value)
    assert calls == []
    del repo._find
    assert texts(repo.find_by_conversation_id("c")) == ["before"]


def test_chat_turns_and_the_advisor_never_block_the_loop() -> None:
    async def turns(store: SlowStore) -> None:
        async def one(i: int) -> None:
            async with ChatTurn(store, f"c{i}") as turn:
                turn.append([UserMessage("q"), AssistantMessage("a")])

        await asyncio.gather(*(one(i) for i in range(TASKS)))

    async def advised(store: SlowStore) -> None:
        advisor = MessageChatMemoryAdvisor(AsyncMessageWindowChatMemory(store))

        @advisor.wrap
        async def model(messages: list[Message]) -> AssistantMessage:
            await asyncio.sleep(0.001)
            return AssistantMessage(f"{len(messages)} in")

        await asyncio.gather(
            *(model([UserMessage("hi")], context={advisor_key(): f"a{i}"}) for i in range(TASKS))
        )
        assert texts(await store.find_by_conversation_id("a0")) == ["hi", "1 in"]

    async def main() -> tuple[float, float, float]:
        fine = await worst_lag(turns(SlowStore()))
        fine_advisor = await worst_lag(advised(SlowStore()))
        blocked = await worst_lag(turns(SlowStore(delay=0.003, blocking=True)))
        return fine, fine_advisor, blocked

    fine, fine_advisor, blocked = asyncio.run(main())
    assert fine < MAX_LAG and fine_advisor < MAX_LAG, (fine, fine_advisor)
    # the probe is not blind: a store that blocks 3 ms per call stalls 100 turns for > 0.25 s
    assert blocked > MAX_LAG, blocked


def advisor_key() -> str:
    from chatmem.core import CONVERSATION_ID

    return CONVERSATION_ID


def test_the_advisor_refuses_a_memory_of_the_other_kind_before_any_io() -> None:
    """``before``/``after`` need a sync memory, ``abefore``/``aafter`` (and an ``async def``
    wrapped function) an async one; a sync memory is never run in a worker thread."""
    advisor = MessageChatMemoryAdvisor(AsyncMessageWindowChatMemory())
    with pytest.raises(InvalidArgumentError, match="abefore"):
        advisor.before([UserMessage("hi")], {advisor_key(): "c"})
    sync_memory = MessageWindowChatMemory()
    sync_advisor = MessageChatMemoryAdvisor(sync_memory)

    @sync_advisor.wrap
    async def model(messages: list[Message]) -> str:
        raise AssertionError("the model must not run")

    for call in (
        lambda: sync_advisor.abefore([UserMessage("hi")], {advisor_key(): "c"}),
        lambda: sync_advisor.aafter("hello", {advisor_key(): "c"}),
        lambda: model([UserMessage("hi")], context={advisor_key(): "c"}),
    ):
        with pytest.raises(InvalidArgumentError) as info:
            asyncio.run(call())
        assert info.value.argument == "memory"
        assert "AsyncMessageWindowChatMemory" in str(info.value)
    assert sync_memory.get("c") == []


def test_async_retry_retries_lost_races_then_gives_up() -> None:
    from chatmem.core import ConcurrencyError

    calls: list[int] = []

    async def flaky() -> str | None:
        calls.append(1)
        return "won" if len(calls) == 3 else None

    async def never() -> None:
        return None

    async def main() -> None:
        assert await async_retry(flaky) == "won"
        with pytest.raises(ConcurrencyError, match="5 tries"):
            await async_retry(never, attempts=5, max_sleep=0.001)

    asyncio.run(main())
    assert len(calls) == 3


def test_async_repository_from_url_memory_and_unknown_schemes() -> None:
    async def main() -> None:
        repo = await async_repository_from_url("memory:")
        await repo.append("c", UserMessage("x"))
        assert await repo.find_conversation_ids() == ["c"]
        with pytest.raises(InvalidArgumentError, match="unknown scheme"):
            await async_repository_from_url("nosuch://x")

    asyncio.run(main())
