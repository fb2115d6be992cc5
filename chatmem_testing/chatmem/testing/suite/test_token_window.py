"""TokenWindowChatMemory on a real store: the message-window vectors with one token a
message, token budgets, counts taken once at write time, bounded reads, kept history.

Every test builds its memory with ``token_memory``: ``TokenWindowChatMemory`` in a sync run,
``AsyncTokenWindowChatMemory`` on the backend's async repository in an async-twin run
(``--twin async``), so the suite checks both twins of the memory."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import pytest

from chatmem.core import (
    TOKENS_KEY,
    AssistantMessage,
    AsyncTokenWindowChatMemory,
    InvalidArgumentError,
    Message,
    SystemMessage,
    TokenWindowChatMemory,
    UserMessage,
)
from chatmem.core.backend import BaseChatMemoryRepository

from ..corpus import VECTORS, parse
from ..twins import memory_for

Repo = BaseChatMemoryRepository


def token_memory(repository: Repo, **options: Any) -> TokenWindowChatMemory:
    """The token window memory of this run's twin on ``repository``."""
    return memory_for(repository, TokenWindowChatMemory, AsyncTokenWindowChatMemory, **options)


def one_each(text: str) -> int:
    return 1


def words(text: str) -> int:
    return len(text.split())


def texts(messages: list[Message]) -> list[str | None]:
    return [m.text for m in messages]


def test_the_token_memory_is_this_runs_twin(repository: Repo, twin: str) -> None:
    memory: Any = token_memory(repository, count_tokens=words)
    if twin == "async":
        assert isinstance(memory.twin, AsyncTokenWindowChatMemory)
        assert memory.twin.repository is repository.twin  # type: ignore[attr-defined]
    else:
        assert isinstance(memory, TokenWindowChatMemory) and memory.repository is repository


@pytest.mark.parametrize("keep_history", [False, True], ids=["trim", "keep"])
@pytest.mark.parametrize(
    "window, batches, expected", VECTORS, ids=[f"L{v[0]}:{'+'.join(v[1])}" for v in VECTORS]
)
def test_one_token_a_message_is_the_message_window(
    repository: Repo, window: int, batches: list[str], expected: str, keep_history: bool
) -> None:
    memory = token_memory(
        repository, max_tokens=window, count_tokens=one_each, keep_history=keep_history
    )
    for batch in batches:
        memory.add("v", parse(batch))
    assert texts(memory.get("v")) == expected.split()


def test_budget_cuts_at_a_user_message_and_keeps_systems(repository: Repo) -> None:
    memory = token_memory(repository, max_tokens=10, count_tokens=words)
    memory.add("t", SystemMessage("be brief"))  # 2 tokens
    memory.add("t", [UserMessage("one two three"), AssistantMessage("four five")])  # 5
    memory.add("t", [UserMessage("six"), AssistantMessage("seven eight nine")])  # 4
    # 2 + 5 + 4 = 11 > 10: the first turn goes whole
    assert texts(memory.get("t")) == ["be brief", "six", "seven eight nine"]
    memory.add("t", UserMessage("ten"))
    assert texts(memory.get("t")) == ["be brief", "six", "seven eight nine", "ten"]


def test_a_turn_larger_than_the_budget_leaves_only_systems(repository: Repo) -> None:
    memory = token_memory(repository, max_tokens=5, count_tokens=words)
    memory.add("big", [SystemMessage("s"), UserMessage("a b c d e f g")])
    assert texts(memory.get("big")) == ["s"]


def test_counts_are_taken_once_at_write_time(repository: Repo) -> None:
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return len(text.split())

    memory = token_memory(repository, max_tokens=50, count_tokens=counting)
    sent = [UserMessage(f"q {i}") if i % 2 == 0 else AssistantMessage(f"a {i}") for i in range(20)]
    for m in sent:
        memory.add("c", m)
    assert len(calls) == 20
    for _ in range(3):
        memory.get("c")
    assert len(calls) == 20  # reads never re-tokenise
    again = token_memory(repository, max_tokens=50, count_tokens=counting)
    again.get("c")
    assert len(calls) == 20  # nor does a fresh memory on the same store


def test_the_reserved_key_never_comes_back(repository: Repo) -> None:
    memory = token_memory(repository, max_tokens=100, count_tokens=words)
    sent: list[Message] = [
        SystemMessage("sys", metadata={"a": 1}),
        UserMessage("hi there", metadata={"user": "x"}),
        AssistantMessage("hello"),
    ]
    memory.add("r", sent)
    got = memory.get("r")
    assert got == sent and all(TOKENS_KEY not in m.metadata for m in got)
    stored = repository.find_by_conversation_id("r")
    assert [m.metadata[TOKENS_KEY]["tokens"] for m in stored] == [1, 2, 1]
    with pytest.raises(InvalidArgumentError):
        memory.add("r", UserMessage("x", metadata={TOKENS_KEY: {"tokens": 0}}))


def test_keep_history_keeps_the_whole_transcript(repository: Repo) -> None:
    memory = token_memory(repository, max_tokens=4, count_tokens=one_each, keep_history=True)
    memory.add("h", SystemMessage("s1"))
    for i in range(5):
        memory.add("h", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    memory.add("h", SystemMessage("s1"))  # already shown: not stored twice
    assert texts(memory.get("h")) == ["s1", "u4", "a4"]
    memory.add("h", SystemMessage("s2"))  # supersedes s1 in the window only
    assert texts(memory.get("h")) == ["u4", "a4", "s2"]
    log = repository.find_by_conversation_id("h")
    assert len(log) == 12 and texts(log)[:3] == ["s1", "u0", "a0"]


def test_without_keep_history_the_log_stays_bounded(repository: Repo) -> None:
    memory = token_memory(repository, max_tokens=6, count_tokens=one_each)
    for i in range(100):
        memory.add("b", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    assert texts(memory.get("b")) == ["u97", "a97", "u98", "a98", "u99", "a99"]
    # The contract lets a store trim in amortised steps (Neo4j trims each time the log
    # crosses a multiple of 4 x the kept size), so the log is bounded by a constant multiple
    # of (max_tokens + 1), never the 200 messages added.
    assert len(repository.find_by_conversation_id("b")) <= 5 * (6 + 1) + 2


def test_reads_are_bounded(repository: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = token_memory(repository, max_tokens=40, count_tokens=one_each, keep_history=True)
    for i in range(150):
        memory.add("big", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    loaded: list[int] = []
    target = memory.repository  # the repository the memory reads (the async twin's own)
    original = target._load_window  # type: ignore[attr-defined]

    def spy(cid: str, n: int) -> list[Message]:
        got = original(cid, n)
        loaded.append(len(got))
        return got  # type: ignore[no-any-return]

    async def async_spy(cid: str, n: int) -> list[Message]:
        got = await original(cid, n)
        loaded.append(len(got))
        return got  # type: ignore[no-any-return]

    use = async_spy if inspect.iscoroutinefunction(original) else spy
    monkeypatch.setattr(target, "_load_window", use)
    got = memory.get("big")
    assert texts(got)[0] == "u130" and len(got) == 40
    assert loaded and max(loaded) <= 2 * 40  # never the 300-message log


def test_concurrent_adds_lose_nothing(make_repository: Callable[..., Repo]) -> None:
    repo = make_repository()
    memory = token_memory(repo, max_tokens=1000, count_tokens=words, keep_history=True)
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(10):
                memory.add("c", [UserMessage(f"w{w} q{i}"), AssistantMessage(f"w{w} a{i}")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors
    got = memory.get("c")
    assert len(got) == 80 and len(set(texts(got))) == 80


@pytest.mark.parametrize(
    "options, argument",
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"max_tokens": 2.5}, "max_tokens"),
        ({"count_tokens": "words"}, "count_tokens"),
        ({"keep_history": "yes"}, "keep_history"),
    ],
)
def test_bad_options_are_rejected(repository: Repo, options: dict[str, Any], argument: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        token_memory(repository, **{"count_tokens": words, **options})
    assert info.value.argument == argument


def test_a_bad_count_is_rejected_before_any_write(repository: Repo) -> None:
    memory = token_memory(repository, max_tokens=10, count_tokens=lambda t: -1)
    with pytest.raises(InvalidArgumentError) as info:
        memory.add("x", UserMessage("hi"))
    assert info.value.argument == "count_tokens"
    assert repository.find_by_conversation_id("x") == []
    with pytest.raises(InvalidArgumentError):
        memory.add("", UserMessage("hi"))
