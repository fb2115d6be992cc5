"""Turn sessions and preprocessors on a real store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    ChatTurn,
    InvalidArgumentError,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    drop_system_messages,
    filter_messages,
    window_size,
)
from chatmem.core.backend import BaseChatMemoryRepository

Repo = BaseChatMemoryRepository


def texts(messages: list[Message]) -> list[str | None]:
    return [m.text for m in messages]


def test_turn_loads_history_and_stores_on_success(repository: Repo) -> None:
    repository.save_all("t", [UserMessage("u1"), AssistantMessage("a1")])
    with ChatTurn(repository, "t") as turn:
        assert texts(turn.messages) == ["u1", "a1"]
        turn.append(UserMessage("u2"))
        turn.append([AssistantMessage("a2")])
    assert turn.stored
    assert texts(repository.find_by_conversation_id("t")) == ["u1", "a1", "u2", "a2"]


def test_failed_turn_leaves_history_untouched(repository: Repo) -> None:
    repository.save_all("t", [UserMessage("u1")])
    before = repository.find_by_conversation_id("t")
    with pytest.raises(RuntimeError), ChatTurn(repository, "t") as turn:
        turn.append(UserMessage("u2"))
        raise RuntimeError("model call failed")
    assert repository.find_by_conversation_id("t") == before
    assert [m.created_at for m in repository.find_by_conversation_id("t")] == [
        m.created_at for m in before
    ]


def test_an_async_turn_refuses_a_sync_repository(repository: Repo) -> None:
    repository.save_all("t", [UserMessage("u1")])

    async def agent() -> None:
        async with ChatTurn(repository, "t") as turn:
            turn.append(UserMessage("u2"))

    with pytest.raises(InvalidArgumentError) as info:
        asyncio.run(agent())
    assert info.value.argument == "repository" and "with ChatTurn" in str(info.value)
    assert texts(repository.find_by_conversation_id("t")) == ["u1"]


def test_async_turn_loads_and_stores_through_the_async_twin(async_twin: Callable[[], Any]) -> None:
    async def main() -> None:
        async with async_twin() as repo:
            await repo.save_all("t", [UserMessage("u1"), AssistantMessage("a1")])
            async with ChatTurn(repo, "t", last=1) as turn:
                assert texts(turn.messages) == ["a1"]
                turn.append([UserMessage("u2"), AssistantMessage("a2")])
            assert turn.stored
            assert texts(await repo.find_by_conversation_id("t")) == ["u1", "a1", "u2", "a2"]
            with pytest.raises(InvalidArgumentError, match="async with"), ChatTurn(repo, "t"):
                pass  # a sync turn on an async repository

    asyncio.run(main())


def test_cancelled_async_turn_leaves_history_untouched(async_twin: Callable[[], Any]) -> None:
    async def main() -> None:
        async with async_twin() as repo:
            await repo.save_all("t", [UserMessage("u1")])

            async def agent() -> None:
                async with ChatTurn(repo, "t") as turn:
                    turn.append(UserMessage("u2"))
                    await asyncio.sleep(10)

            task = asyncio.create_task(agent())
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert texts(await repo.find_by_conversation_id("t")) == ["u1"]

    asyncio.run(main())


def test_turn_on_a_new_conversation_starts_empty(repository: Repo) -> None:
    with ChatTurn(repository, "fresh") as turn:
        assert turn.messages == []
        turn.append(UserMessage("hi"))
    assert texts(repository.find_by_conversation_id("fresh")) == ["hi"]


def test_load_errors_propagate_instead_of_reading_empty(repository: Repo) -> None:
    class Failing:
        def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
            raise ConnectionError("store down")

        def find_conversation_ids(self) -> list[str]:
            return []

        def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
            raise AssertionError("must not store")

        def delete_by_conversation_id(self, conversation_id: str) -> None:
            raise AssertionError("must not delete")

    with pytest.raises(ConnectionError), ChatTurn(Failing(), "x"):
        pass


def _tool_history() -> list[Message]:
    return [
        SystemMessage("sys"),
        UserMessage("u1"),
        AssistantMessage(None, tool_calls=(ToolCall(id="c1", name="f"),)),
        ToolResponseMessage((ToolResponse(id="c1", name="f", response_data="r"),)),
        AssistantMessage("a1"),
        UserMessage("u2"),
        AssistantMessage("a2"),
    ]


def test_window_preprocessor_never_leaves_an_orphan_tool_result(repository: Repo) -> None:
    repository.save_all("w", _tool_history())
    with ChatTurn(repository, "w", preprocessors=[window_size(4)]) as turn:
        kept = turn.messages
    assert texts(kept) == ["a1", "u2", "a2"]
    assert not any(isinstance(m, ToolResponseMessage) for m in kept)


def test_preprocessors_apply_in_order_at_load_and_at_store(repository: Repo) -> None:
    history: list[Message] = [UserMessage("u1"), SystemMessage("s"), UserMessage("u2")]
    repository.save_all("wf", history)
    repository.save_all("fw", history)
    with ChatTurn(repository, "wf", preprocessors=[window_size(2), drop_system_messages()]) as t1:
        assert texts(t1.messages) == ["u2"]
        t1.append([SystemMessage("s2"), UserMessage("u3"), UserMessage("u4")])
    with ChatTurn(repository, "fw", preprocessors=[drop_system_messages(), window_size(2)]) as t2:
        assert texts(t2.messages) == ["u1", "u2"]
        t2.append([UserMessage("u3"), SystemMessage("s2")])
    assert texts(repository.find_by_conversation_id("wf")) == ["u3", "u4"]
    assert texts(repository.find_by_conversation_id("fw")) == ["u2", "u3"]


def test_filter_preprocessor_and_plain_callables(repository: Repo) -> None:
    repository.save_all("f", _tool_history())
    only_users = filter_messages(lambda m: isinstance(m, UserMessage))
    with ChatTurn(repository, "f", preprocessors=[only_users, lambda ms: ms[::-1]]) as turn:
        assert texts(turn.messages) == ["u2", "u1"]
        turn.append(UserMessage("u3"))
    assert texts(repository.find_by_conversation_id("f")) == ["u3", "u1", "u2"]


def test_concurrent_turns_on_one_conversation_lose_nothing(repository: Repo) -> None:
    """A turn whose preprocessors leave the history as stored appends only its new
    messages, so turns that overlap keep each other's messages."""
    repository.save_all("c", [UserMessage("start")])
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def run(w: int) -> None:
        try:
            with ChatTurn(repository, "c") as turn:
                barrier.wait(30)  # every turn has loaded before any stores
                turn.append([UserMessage(f"q{w}"), AssistantMessage(f"a{w}")])
        except BaseException as exc:  # collected: the test fails with it
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    got = texts(repository.find_by_conversation_id("c"))
    assert got[0] == "start" and len(got) == 13
    for w in range(6):
        assert got.index(f"q{w}") + 1 == got.index(f"a{w}")


def test_a_turn_with_last_reads_only_the_newest_messages(repository: Repo) -> None:
    repository.save_all("c", [UserMessage(f"m{i}") for i in range(40)])
    with ChatTurn(repository, "c", last=5) as turn:
        assert texts(turn.messages) == [f"m{i}" for i in range(35, 40)]
        turn.append(AssistantMessage("reply"))
    got = texts(repository.find_by_conversation_id("c"))
    assert len(got) == 41 and got[-1] == "reply" and got[0] == "m0"
    with pytest.raises(InvalidArgumentError, match="last"):
        ChatTurn(repository, "c", last=0)
