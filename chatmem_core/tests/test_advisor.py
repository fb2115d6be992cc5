"""The memory advisor: Spring AI's before/after semantics, as an object and as a wrapper."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncInMemoryChatMemoryRepository,
    AsyncMessageWindowChatMemory,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core._advisor import CONVERSATION_ID, MessageChatMemoryAdvisor, advise, find_run
from chatmem.integrations.openai import from_openai, to_openai

SYS = SystemMessage("Be terse.")
CTX = {CONVERSATION_ID: "c1"}


@pytest.fixture
def memory() -> MessageWindowChatMemory:
    return MessageWindowChatMemory(InMemoryChatMemoryRepository(), max_messages=50)


@pytest.fixture
def advisor(memory: MessageWindowChatMemory) -> MessageChatMemoryAdvisor:
    return MessageChatMemoryAdvisor(memory)


@pytest.mark.parametrize("context", [None, {}, {CONVERSATION_ID: None}, {"conversation_id": "c1"}])
def test_missing_conversation_id_is_an_error_there_is_no_default(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory, context: Any
) -> None:
    with pytest.raises(InvalidArgumentError, match="context"):
        advisor.before([UserMessage("hi")], context)
    with pytest.raises(InvalidArgumentError, match="context"):
        advisor.after(AssistantMessage("x"), context)
    assert memory.repository.find_conversation_ids() == []


def test_invalid_conversation_id_in_context_is_rejected(advisor: MessageChatMemoryAdvisor) -> None:
    with pytest.raises(InvalidArgumentError):
        advisor.before([UserMessage("hi")], {CONVERSATION_ID: ""})
    with pytest.raises(InvalidArgumentError):
        advisor.before([UserMessage("hi")], {CONVERSATION_ID: 42})


def test_first_call_stores_the_user_message_and_after_stores_the_reply(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    prompt: list[Message] = [SYS, UserMessage("hi")]
    assert advisor.before(prompt, CTX) == prompt
    assert memory.get("c1") == [UserMessage("hi")]
    advisor.after(AssistantMessage("hello"), CTX)
    assert memory.get("c1") == [UserMessage("hi"), AssistantMessage("hello")]


def test_memory_goes_in_front_and_the_system_message_moves_first(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    memory.add("c1", [UserMessage("u1"), AssistantMessage("a1")])
    advised = advisor.before([SYS, UserMessage("u2")], CTX)
    assert advised == [SYS, UserMessage("u1"), AssistantMessage("a1"), UserMessage("u2")]
    assert memory.get("c1")[-1] == UserMessage("u2")


def test_only_the_first_system_message_moves(advisor: MessageChatMemoryAdvisor) -> None:
    other = SystemMessage("second")
    advised = advisor.before([UserMessage("u"), SYS, other], CTX)
    assert advised == [SYS, UserMessage("u"), other]


def test_memory_already_in_the_prompt_as_a_run_is_not_added_again(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    """The tool loop: the app resends the whole exchange; only the new tool result is stored."""
    call = AssistantMessage(None, tool_calls=(ToolCall(id="t1", name="f"),))
    result = ToolResponseMessage((ToolResponse(id="t1", name="f", response_data="42"),))
    advisor.before([SYS, UserMessage("q")], CTX)
    advisor.after(call, CTX)
    advised = advisor.before([SYS, UserMessage("q"), call, result], CTX)
    assert advised == [SYS, UserMessage("q"), call, result]
    advisor.after(AssistantMessage("42."), CTX)
    assert memory.get("c1") == [UserMessage("q"), call, result, AssistantMessage("42.")]


def test_a_broken_run_counts_as_absent(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    memory.add("c1", [UserMessage("u1"), AssistantMessage("a1")])
    prompt: list[Message] = [UserMessage("u1"), UserMessage("between"), AssistantMessage("a1")]
    advised = advisor.before(prompt, CTX)
    assert advised == [UserMessage("u1"), AssistantMessage("a1"), *prompt]


def test_nothing_new_outside_memory_stores_nothing(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    memory.add("c1", [UserMessage("u1"), AssistantMessage("a1")])
    advisor.before([UserMessage("u1"), AssistantMessage("a1")], CTX)
    advisor.before([SYS], CTX)
    assert memory.get("c1") == [UserMessage("u1"), AssistantMessage("a1")]


def test_the_last_user_or_tool_message_is_stored_not_earlier_ones(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    advisor.before([UserMessage("a"), UserMessage("b"), AssistantMessage("c")], CTX)
    assert memory.get("c1") == [UserMessage("b")]


def test_advise_is_pure_and_tracks_the_run_across_the_system_move() -> None:
    mem = [UserMessage("u1")]
    advised, store = advise(mem, [UserMessage("u1"), SYS])
    assert advised == [SYS, UserMessage("u1")] and store is None
    assert find_run([UserMessage("a"), UserMessage("b")], [UserMessage("b")]) == 1
    assert find_run([UserMessage("a")], [UserMessage("a"), UserMessage("b")]) == -1


def test_wrap_sync_function_forwards_arguments_and_stores_both_sides(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    seen: list[list[Message]] = []

    @advisor.wrap
    def chat(messages: list[Message], temperature: float, *, model: str) -> AssistantMessage:
        seen.append(messages)
        return AssistantMessage(f"{model}@{temperature}: {messages[-1].text}")

    reply = chat([SYS, UserMessage("one")], 0.5, model="m", context=CTX)
    assert reply == AssistantMessage("m@0.5: one")
    chat([SYS, UserMessage("two")], 0.5, model="m", context=CTX)
    assert seen[1] == [SYS, UserMessage("one"), AssistantMessage("m@0.5: one"), UserMessage("two")]
    assert chat.__name__ == "chat"
    assert len(memory.get("c1")) == 4


def test_wrap_async_function_awaits_an_async_memory() -> None:
    memory = AsyncMessageWindowChatMemory(AsyncInMemoryChatMemoryRepository(), max_messages=50)
    advisor = MessageChatMemoryAdvisor(memory)

    @advisor.wrap
    async def chat(messages: list[Message]) -> str:
        await asyncio.sleep(0)
        return f"echo {len(messages)}"

    async def main() -> list[Message]:
        assert await chat([UserMessage("x")], context=CTX) == "echo 1"
        assert await chat([UserMessage("y")], context=CTX) == "echo 3"
        return await memory.get("c1")

    assert asyncio.run(main()) == [
        UserMessage("x"),
        AssistantMessage("echo 1"),
        UserMessage("y"),
        AssistantMessage("echo 3"),
    ]


def test_wrap_async_function_refuses_a_sync_memory(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    @advisor.wrap
    async def chat(messages: list[Message]) -> str:
        raise AssertionError("the model must not run")

    with pytest.raises(InvalidArgumentError) as info:
        asyncio.run(chat([UserMessage("x")], context=CTX))
    assert info.value.argument == "memory" and "AsyncMessageWindowChatMemory" in str(info.value)
    assert memory.get("c1") == []  # refused before any I/O


def test_wrap_plain_function_returning_an_awaitable_is_refused(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    """A plain function is advised with sync calls; its reply cannot be awaited there (that
    would need a worker thread or a hidden loop), so an awaitable reply is an error naming
    ``fn``. The coroutine is closed unrun and the user message stays, as for a failed call."""
    ran: list[int] = []

    async def model(messages: Sequence[Message]) -> list[Message]:
        ran.append(1)
        return [AssistantMessage("a")]

    wrapped = advisor.wrap(lambda messages: model(messages))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        with pytest.raises(InvalidArgumentError) as info:
            wrapped([UserMessage("x")], context=CTX)
    assert info.value.argument == "fn" and "async def" in str(info.value)
    assert ran == [] and memory.get("c1") == [UserMessage("x")]


def test_wrapped_call_requires_context(advisor: MessageChatMemoryAdvisor) -> None:
    wrapped = advisor.wrap(lambda messages: "x")
    with pytest.raises(TypeError):
        wrapped([UserMessage("x")])
    with pytest.raises(InvalidArgumentError):
        wrapped([UserMessage("x")], context={})


def test_failed_call_keeps_the_user_message_and_stores_no_reply(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    @advisor.wrap
    def chat(messages: list[Message]) -> str:
        raise RuntimeError("model down")

    with pytest.raises(RuntimeError):
        chat([UserMessage("x")], context=CTX)
    assert memory.get("c1") == [UserMessage("x")]


def test_invalid_reply_is_rejected(advisor: MessageChatMemoryAdvisor) -> None:
    with pytest.raises(InvalidArgumentError, match="reply"):
        advisor.after(42, CTX)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="memory"):
        MessageChatMemoryAdvisor(object())  # type: ignore[arg-type]


def test_conversations_are_kept_apart(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    advisor.before([UserMessage("to c1")], {CONVERSATION_ID: "c1"})
    advisor.before([UserMessage("to c2")], {CONVERSATION_ID: "c2"})
    assert memory.get("c1") == [UserMessage("to c1")]
    assert memory.get("c2") == [UserMessage("to c2")]


def test_openai_tool_loop_end_to_end(
    advisor: MessageChatMemoryAdvisor, memory: MessageWindowChatMemory
) -> None:
    """A fake chat-completions model with parallel tool calls; the app keeps OpenAI dicts and
    the tool results of one round are stored as one ToolResponseMessage."""
    sent: list[list[dict[str, Any]]] = []

    def fake_completion(messages: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(messages)
        if messages[-1]["role"] == "user":
            return {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {"name": "temp", "arguments": "{}"},
                    },
                    {
                        "id": "b",
                        "type": "function",
                        "function": {"name": "wind", "arguments": "{}"},
                    },
                ],
            }
        return {"role": "assistant", "content": "21 °C, calm.", "refusal": None}

    @advisor.wrap
    def chat(messages: list[Message]) -> Message:
        return from_openai([fake_completion(to_openai(messages, for_api=True))])[0]

    history = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Weather?"}]
    reply = chat(from_openai(history), context=CTX)
    history += to_openai([reply], for_api=True)
    history += [
        {"role": "tool", "tool_call_id": "a", "content": "21"},
        {"role": "tool", "tool_call_id": "b", "content": "calm"},
    ]
    final = chat(from_openai(history), context=CTX)
    assert final.text == "21 °C, calm."
    assert all("chatmem" not in d for batch in sent for d in batch)
    stored = memory.get("c1")
    assert [type(m).__name__ for m in stored] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
    ]
    assert [(r.id, r.name) for r in stored[2].responses] == [("a", "temp"), ("b", "wind")]  # type: ignore[union-attr]
    assert sent[1][0] == {"role": "system", "content": "Be terse."} and len(sent[1]) == 5
