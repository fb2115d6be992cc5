"""MessageWindowChatMemory on a real store, the window test vectors included."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    InvalidArgumentError,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import BaseChatMemoryRepository, add_to_window

from ..corpus import VECTORS, parse
from ..twins import memory_for

Repo = BaseChatMemoryRepository


@pytest.mark.parametrize(
    "window, batches, expected", VECTORS, ids=[f"L{v[0]}:{'+'.join(v[1])}" for v in VECTORS]
)
def test_window_vectors(repository: Repo, window: int, batches: list[str], expected: str) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=window)
    for batch in batches:
        memory.add("v", parse(batch))
    assert [m.text for m in memory.get("v")] == expected.split()


def test_default_window_is_twenty(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository)
    for i in range(30):
        memory.add("d", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    got = memory.get("d")
    assert len(got) == 20 and got[0].text == "u20"


@pytest.mark.parametrize("bad", [0, -3, True, 2.5, "20"])
def test_window_must_be_a_positive_int(repository: Repo, bad: object) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        MessageWindowChatMemory(repository, max_messages=bad)  # type: ignore[arg-type]
    assert info.value.argument == "max_messages"


def test_window_memory_validates_ids_and_messages(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=5)
    for call in (
        lambda: memory.add(None, UserMessage("x")),  # type: ignore[arg-type]
        lambda: memory.add("", UserMessage("x")),
        lambda: memory.get(7),  # type: ignore[arg-type]
        lambda: memory.clear(None),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert info.value.argument == "conversation_id"
    with pytest.raises(InvalidArgumentError):
        memory.add("c", [UserMessage("x"), None])  # type: ignore[list-item]
    assert repository.find_conversation_ids() == []


def test_clear_forgets_the_conversation(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=5)
    memory.add("c", parse("U1 A1"))
    memory.add("other", parse("U9"))
    memory.clear("c")
    assert memory.get("c") == [] and [m.text for m in memory.get("other")] == ["U9"]


def test_equal_system_message_is_not_stored_twice(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=10)
    memory.add("s", parse("S1 U1 A1"))
    memory.add("s", [SystemMessage("S1"), UserMessage("U2")])
    assert [m.text for m in memory.get("s")] == ["S1", "U1", "A1", "U2"]


def test_new_system_message_replaces_stored_ones(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=10)
    memory.add("s", parse("S1 S2 U1 A1"))
    memory.add("s", parse("S3 U2"))
    assert [m.text for m in memory.get("s")] == ["U1", "A1", "S3", "U2"]


def test_system_messages_are_never_evicted(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=3)
    memory.add("s", parse("S1"))
    for i in range(20):
        memory.add("s", [UserMessage(f"U{i}"), AssistantMessage(f"A{i}")])
    got = [m.text for m in memory.get("s")]
    assert got == ["S1", "U19", "A19"]


def test_tool_turns_are_evicted_whole(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=4)
    call = AssistantMessage(None, tool_calls=(ToolCall(id="c1", name="f"),))
    result = ToolResponseMessage((ToolResponse(id="c1", name="f", response_data="1"),))
    memory.add("t", [UserMessage("U1"), call, result, AssistantMessage("A1")])
    memory.add("t", [UserMessage("U2"), call, result])
    got = memory.get("t")
    assert isinstance(got[0], UserMessage) and got[0].text == "U2" and len(got) == 3


def test_window_read_is_the_same_as_applying_the_rule_at_every_add(repository: Repo) -> None:
    rng = random.Random(20261129)
    for trial in range(6):
        window = rng.randint(2, 8)
        memory = MessageWindowChatMemory(repository, max_messages=window)
        cid = f"rand-{trial}"
        reference: list[Message] = []
        for step in range(25):
            batch: list[Message] = [UserMessage(f"U{step}")]
            for j in range(rng.randint(0, 3)):
                batch.append(AssistantMessage(f"A{step}.{j}"))
            if rng.random() < 0.15:
                batch.insert(rng.randint(0, len(batch)), SystemMessage(f"S{rng.randint(0, 2)}"))
            memory.add(cid, batch)
            reference = add_to_window(reference, batch, window)
            assert memory.get(cid) == reference, (trial, step)


@pytest.mark.parametrize("keep_history", [False, True], ids=["trimmed", "keep_history"])
def test_add_and_get_equals_add_then_get(repository: Repo, keep_history: bool) -> None:
    # one conversation driven by add then get, its twin by add_and_get: the same windows and
    # the same stored logs, through system messages, replaced ones, trims and empty adds
    rng = random.Random(20261204)
    window = 5
    memory = memory_for(
        repository,
        MessageWindowChatMemory,
        AsyncMessageWindowChatMemory,
        max_messages=window,
        keep_history=keep_history,
    )
    reference: list[Message] = []
    for step in range(14):
        batch: list[Message] = [UserMessage(f"U{step}")]
        batch += [AssistantMessage(f"A{step}.{j}") for j in range(rng.randint(0, 2))]
        if step in (0, 6) or rng.random() < 0.15:
            batch.insert(rng.randint(0, len(batch)), SystemMessage(f"S{rng.randint(0, 1)}"))
        if step == 9:
            batch = []
        memory.add("two-calls", batch)
        expected = memory.get("two-calls")
        assert memory.add_and_get("one-call", batch) == expected, step
        if not keep_history:
            reference = add_to_window(reference, batch, window)
            assert expected == reference, step
        assert repository.find_by_conversation_id("one-call") == repository.find_by_conversation_id(
            "two-calls"
        ), step


def test_after_everything_was_evicted_the_window_restarts_at_a_user_message(
    repository: Repo,
) -> None:
    # Deliberate difference from re-applying the rule at every add (see chatmem.core._window).
    memory = MessageWindowChatMemory(repository, max_messages=3)
    memory.add("e", parse("U1 A1 A2 A3"))
    assert memory.get("e") == []
    memory.add("e", parse("A4"))
    assert memory.get("e") == []
    memory.add("e", parse("U5 A5"))
    assert [m.text for m in memory.get("e")] == ["U5", "A5"]


def test_long_history_window_reads_only_the_window(repository: Repo) -> None:
    repository.save_all("big", [m for i in range(600) for m in parse(f"U{i} A{i}")])
    memory = MessageWindowChatMemory(repository, max_messages=20)
    memory.add("big", parse("U600 A600"))
    got = memory.get("big")
    assert [m.text for m in got][:2] == ["U591", "A591"] and len(got) == 20


def test_window_memory_with_a_foreign_repository_uses_read_modify_write(repository: Repo) -> None:
    class Plain:
        """Only the four Spring AI operations, delegating to the real store."""

        def find_conversation_ids(self) -> list[str]:
            return repository.find_conversation_ids()

        def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
            return repository.find_by_conversation_id(conversation_id)

        def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
            repository.save_all(conversation_id, messages)

        def delete_by_conversation_id(self, conversation_id: str) -> None:
            repository.delete_by_conversation_id(conversation_id)

    memory = MessageWindowChatMemory(Plain(), max_messages=2)
    memory.add("p", parse("U1 A1"))
    memory.add("p", parse("U2 A2"))
    assert [m.text for m in repository.find_by_conversation_id("p")] == ["U2", "A2"]
