"""The token window rule without a store, and the default tiktoken counter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chatmem.core import (
    AssistantMessage,
    Message,
    MissingDependencyError,
    SystemMessage,
    TokenWindowChatMemory,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core._token_window import message_text
from chatmem.core.backend import token_window_of, window_of
from chatmem.testing.corpus import parse


def words(m: Message) -> int:
    return max(len(message_text(m).split()), 1)


@pytest.mark.parametrize(
    "spec",
    ["U1 A1 U2 A2 U3", "S1 U1 A1 U2 A2", "Q1 A1 A1b Q2 A2", "S1 S2 U1 A1", "A0 U1 A1"],
)
@pytest.mark.parametrize("budget", [1, 2, 3, 4, 6, 10])
def test_one_token_each_equals_the_message_rule(spec: str, budget: int) -> None:
    log = parse(spec)
    assert token_window_of(log, budget, lambda m: 1) == window_of(log, budget)


def test_tool_calls_and_results_are_counted() -> None:
    call = AssistantMessage(None, tool_calls=(ToolCall(id="1", name="f", arguments='{"x": 1}'),))
    result = ToolResponseMessage((ToolResponse(id="1", name="f", response_data="two words"),))
    assert message_text(call) == 'f {"x": 1}' and message_text(result) == "f two words"


def test_budget_keeps_whole_turns() -> None:
    log = [
        SystemMessage("s"),
        UserMessage("a b c"),
        AssistantMessage("d e"),
        UserMessage("f"),
        AssistantMessage("g h"),
    ]
    assert token_window_of(log, 5, words) == [log[0], log[3], log[4]]
    assert token_window_of(log, 9, words) == log


def _tiktoken_cache() -> str:
    pytest.importorskip("tiktoken", reason="tiktoken not installed (extra: tokens)")
    li = pytest.importorskip("llama_index.core", reason="no offline cl100k_base file here")
    cache = Path(li.__file__).parent / "_static" / "tiktoken_cache"
    if not cache.is_dir():
        pytest.skip("no offline cl100k_base file (tiktoken would download it)")
    return str(cache)


def test_default_counter_is_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    # tiktoken downloads encodings; here it reads the copy llama-index ships (no network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", _tiktoken_cache())
    memory = TokenWindowChatMemory(max_tokens=8)
    memory.add("c", [UserMessage("hello world, how are you"), AssistantMessage("fine")])
    assert memory.count(UserMessage("hello world, how are you")) == 6
    assert [m.text for m in memory.get("c")] == ["hello world, how are you", "fine"]  # 6 + 1
    memory.add("c", UserMessage("and you"))  # 6 + 1 + 2 > 8: the first turn goes
    assert [m.text for m in memory.get("c")] == ["and you"]


def test_missing_tiktoken_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(MissingDependencyError) as info:
        TokenWindowChatMemory()
    assert info.value.extra == "tokens"
