"""Round trips of every conversion, both directions, over the full corpus and each format's
own shapes. The guarantee: ``from_x(to_x(ms)) == ms`` and ``to_x(from_x(xs)) == xs``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    InvalidArgumentError,
    Media,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.integrations.openai import from_openai, to_openai
from chatmem.testing.corpus import PNG, full_corpus

GROUPINGS = [True, False]


def edge_messages() -> list[Message]:
    """Shapes the natural mappings must not lose: ambiguous texts, odd arguments, tool
    groups next to each other, empty groups, URIs, names that differ from their call."""
    tr = ToolResponseMessage
    return [
        AssistantMessage("", tool_calls=(ToolCall(id="c1", name="f", arguments='{"a":1}'),)),
        tr((ToolResponse(id="c1", name="other-name", response_data="1"),)),
        tr((ToolResponse(id="c1", name="", response_data=""),)),
        tr(()),
        tr((), metadata={"k": "v"}),
        AssistantMessage(None),
        AssistantMessage(
            None,
            tool_calls=(
                ToolCall(id="c2", name="g", arguments="not json"),
                ToolCall(id="c3", name="h", arguments="[1, 2]"),
                ToolCall(id="c4", name="i", arguments='{"ü": "é"}', type="custom"),
                ToolCall(id="c5", name="j", arguments='{"b": 1.0, "a": 2}'),
            ),
        ),
        tr((ToolResponse(id="c2", name="g", response_data="x"),)),
        tr(
            (
                ToolResponse(id="c3", name="h", response_data="y"),
                ToolResponse(id="c4", name="i", response_data="z"),
            )
        ),
        tr((ToolResponse(id="c5", name="j", response_data="w"),)),
        UserMessage("", media=(Media(mime_type="image/png", data="data:image/png;base64,AAAA"),)),
        UserMessage(
            "uri",
            media=(
                Media(mime_type="image/webp", data="https://example.com/noext", name="n"),
                Media(mime_type="application/pdf", data=b"%PDF-1.4", name="doc.pdf", id="f1"),
                Media(mime_type="application/pdf", data=b"%PDF"),
                Media(mime_type="audio/mpeg", data=b"ID3"),
                Media(mime_type="audio/ogg", data=b"Ogg"),
                Media(mime_type="video/mp4", data="https://example.com/v.mp4"),
                Media(mime_type="text/plain", data="file:///tmp/a.txt"),
                Media(mime_type="image/gif", data=b""),
            ),
        ),
        SystemMessage("with media", media=(Media(mime_type="image/png", data=PNG),)),
        UserMessage(
            "x", metadata={"openai": 3, "langchain": [1], "llamaindex": None, "chatmem": {}}
        ),
        UserMessage("y", metadata={"openai": {"raw": [1]}, "langchain": {"raw": "no"}}),
        UserMessage(
            "z",
            metadata={
                "openai": {"name": "alice"},
                "langchain": {"id": "m-1"},
                "llamaindex": {"role": "developer"},
            },
        ),
        tr(
            (ToolResponse(id="c9", name="late", response_data="r"),),
            media=(Media(mime_type="image/png", data=b"\x89P"),),
        ),
    ]


def corpora() -> list[tuple[str, list[Message]]]:
    corpus = full_corpus()
    return [
        ("full", corpus),
        ("edges", edge_messages()),
        *[(f"one-{i}", [m]) for i, m in enumerate(corpus)],
    ]


CORPORA = corpora()
IDS = [name for name, _ in CORPORA]


def check_both_ways(
    to_x: Callable[..., list[Any]], from_x: Callable[..., list[Message]], messages: list[Message]
) -> list[Any]:
    for group in GROUPINGS:
        xs = to_x(messages, group_tool_responses=group)
        back = from_x(xs, group_tool_responses=group)
        assert back == messages
        assert to_x(back, group_tool_responses=group) == xs
    return to_x(messages)


def carried_whole(xs: list[Any], envelope: Callable[[Any], Any]) -> list[Any]:
    return [x for x in xs if isinstance(envelope(x), dict) and "message" in envelope(x)]


# -- OpenAI --------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "messages"), CORPORA, ids=IDS)
def test_openai_round_trip_both_ways(name: str, messages: list[Message]) -> None:
    check_both_ways(to_openai, from_openai, messages)


def test_openai_corpus_takes_the_natural_path() -> None:
    xs = to_openai(full_corpus())
    assert carried_whole(xs, lambda x: x.get("chatmem")) == []
    assert [x["role"] for x in xs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "assistant",
        "user",
    ]
    assert xs[2]["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "weather", "n": 1}'},
    }
    assert xs[3]["tool_call_id"] == "call_1" and xs[3]["content"] == '{"temp": 21.5}'
    assert xs[1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert xs[1]["content"][2] == {
        "type": "image_url",
        "image_url": {"url": "https://example.com/a.jpg"},
    }
    assert all("chatmem" not in x for x in to_openai(full_corpus(), for_api=True))


def openai_native() -> list[dict[str, Any]]:
    """What apps hold: SDK dumps (with None fields), names, developer role, parallel calls."""
    return [
        {"role": "developer", "content": "Be brief."},
        {
            "role": "system",
            "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}],
        },
        {
            "role": "user",
            "name": "alice",
            "content": [
                {"type": "text", "text": "look"},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://x.test/a.png", "detail": "high"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "https://x.test/b.jpeg"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {
                    "type": "file",
                    "file": {
                        "file_data": "data:application/pdf;base64,JVBERg==",
                        "filename": "a.pdf",
                    },
                },
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "annotations": [],
            "audio": None,
            "function_call": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"x":1}'},
                },
                {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "A"},
        {"role": "tool", "tool_call_id": "call_b", "content": "B"},
        {"role": "assistant", "content": "done", "refusal": None, "tool_calls": None},
        {"role": "assistant", "content": "", "tool_calls": []},
        {"role": "tool", "tool_call_id": "orphan", "content": [{"type": "text", "text": "t"}]},
        {"role": "function", "name": "legacy", "content": "r"},
        {"role": "user", "content": "x", "chatmem": "not an envelope"},
    ]


def test_openai_native_messages_round_trip_exactly() -> None:
    native = openai_native()
    for group in GROUPINGS:
        ms = from_openai(native, group_tool_responses=group)
        assert to_openai(ms, group_tool_responses=group) == native
        assert (
            from_openai(to_openai(ms, group_tool_responses=group), group_tool_responses=group) == ms
        )


def test_openai_parallel_tool_results_become_one_tool_response_message() -> None:
    ms = from_openai(openai_native())
    grouped = [m for m in ms if isinstance(m, ToolResponseMessage)]
    assert [(r.id, r.name, r.response_data) for r in grouped[0].responses] == [
        ("call_a", "f", "A"),
        ("call_b", "g", "B"),
    ]
    assert ms[0] == SystemMessage("Be brief.", metadata={"openai": {"role": "developer"}})
    assert ms[2].metadata == {"openai": {"name": "alice"}} or "raw" in ms[2].metadata["openai"]
    assert ms[6] == AssistantMessage(
        "done", metadata={"openai": {"refusal": None, "tool_calls": None}}
    )
    singles = from_openai(openai_native(), group_tool_responses=False)
    assert len([m for m in singles if isinstance(m, ToolResponseMessage)]) == len(grouped) + 1


def test_openai_accepts_sdk_objects_and_rejects_non_messages() -> None:
    class Dumpable:
        def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
            return {"role": "assistant", "content": "hi"} if exclude_none else {}

    assert from_openai([Dumpable()]) == [AssistantMessage("hi")]
    with pytest.raises(InvalidArgumentError, match=r"messages\[0\]"):
        from_openai(["hello"])
    with pytest.raises(InvalidArgumentError):
        from_openai([{"role": "user", "content": float("nan")}])


def test_openai_separately_decoded_tool_runs_stay_apart_when_encoded_together() -> None:
    a = from_openai(
        [{"role": "tool", "tool_call_id": "1", "content": [{"type": "text", "text": "x"}]}]
    )
    b = from_openai([{"role": "tool", "tool_call_id": "2", "content": "y"}])
    both = a + b
    xs = to_openai(both)
    assert from_openai(xs) == both


# -- LangChain -----------------------------------------------------------------------------
def _lc() -> Any:
    pytest.importorskip("langchain_core", reason="langchain-core not installed (extra: langchain)")
    from langchain_core import messages

    return messages


def from_langchain(*args: Any, **kwargs: Any) -> list[Message]:
    _lc()
    from chatmem.integrations.langchain import from_langchain as convert

    return convert(*args, **kwargs)


def to_langchain(*args: Any, **kwargs: Any) -> list[Any]:
    _lc()
    from chatmem.integrations.langchain import to_langchain as convert

    return convert(*args, **kwargs)


@pytest.mark.parametrize(("name", "messages"), CORPORA, ids=IDS)
def test_langchain_round_trip_both_ways(name: str, messages: list[Message]) -> None:
    check_both_ways(to_langchain, from_langchain, messages)


def test_langchain_corpus_takes_the_natural_path() -> None:
    xs = to_langchain(full_corpus())
    assert carried_whole(xs, lambda x: x.additional_kwargs.get("chatmem")) == []
    assert [type(x).__name__ for x in xs] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "AIMessage",
        "AIMessage",
        "HumanMessage",
    ]
    assert xs[2].tool_calls[0] == {
        "name": "lookup",
        "args": {"q": "weather", "n": 1},
        "id": "call_1",
        "type": "tool_call",
    }
    assert xs[1].content[1]["type"] == "image" and xs[1].content[1]["mime_type"] == "image/png"
    assert xs[4] == _lc().ToolMessage(content="12:00", tool_call_id="call_2", name="clock")


def langchain_native() -> list[Any]:
    lcm = _lc()
    return [
        lcm.SystemMessage("sys", id="s1"),
        lcm.HumanMessage("hi", name="alice", id="h1", additional_kwargs={"x": 1}),
        lcm.HumanMessage(
            content=[
                {"type": "text", "text": "see"},
                {"type": "image", "url": "https://x.test/a.png"},
            ]
        ),
        lcm.HumanMessage(
            content=[
                {"type": "image_url", "image_url": {"url": "https://x.test/b"}},
                "plain str",
                {"type": "text", "text": "t"},
            ]
        ),
        lcm.AIMessage(
            "",
            tool_calls=[
                {"name": "f", "args": {"q": 1}, "id": "t1"},
                {"name": "g", "args": {}, "id": "t2"},
            ],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
            response_metadata={"model_name": "m"},
            id="run-1",
        ),
        lcm.ToolMessage("r1", tool_call_id="t1", name="f"),
        lcm.ToolMessage("r2", tool_call_id="t2", artifact={"rows": [1]}, status="error"),
        lcm.AIMessage(
            "ok",
            invalid_tool_calls=[
                {
                    "type": "invalid_tool_call",
                    "name": "h",
                    "args": "{bad",
                    "id": "t3",
                    "error": "bad",
                }
            ],
        ),
        lcm.AIMessage(
            content=[{"type": "reasoning", "reasoning": "hmm"}, {"type": "text", "text": "x"}]
        ),
        lcm.AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None}]),
        lcm.ChatMessage(content="critique", role="critic"),
        lcm.FunctionMessage(content="fr", name="fn"),
        lcm.AIMessageChunk(content="chunk"),
        lcm.ToolMessage(content=[{"type": "text", "text": "list"}], tool_call_id="t9"),
        lcm.ToolMessage("empty name", tool_call_id="t10", name=""),
    ]


def test_langchain_native_messages_round_trip_exactly() -> None:
    native = langchain_native()
    for group in GROUPINGS:
        ms = from_langchain(native, group_tool_responses=group)
        assert to_langchain(ms, group_tool_responses=group) == native
        assert [type(x) for x in to_langchain(ms, group_tool_responses=group)] == [
            type(x) for x in native
        ]


def test_langchain_fields_without_a_chatmem_slot_ride_in_metadata() -> None:
    ms = from_langchain(langchain_native())
    assert ms[1] == UserMessage(
        "hi", metadata={"langchain": {"id": "h1", "name": "alice", "additional_kwargs": {"x": 1}}}
    )
    assert ms[2].media[0].data == "https://x.test/a.png" and ms[2].media[0].mime_type == "image/png"
    ai = ms[4]
    assert isinstance(ai, AssistantMessage) and ai.text is None
    assert [c.arguments for c in ai.tool_calls] == ['{"q": 1}', "{}"]
    assert ai.metadata["langchain"]["usage_metadata"]["total_tokens"] == 3
    tools = ms[5]
    assert isinstance(tools, ToolResponseMessage)
    assert [(r.id, r.name) for r in tools.responses] == [("t1", "f"), ("t2", "")]
    assert tools.metadata["langchain"]["tool_messages"][1] == {
        "artifact": {"rows": [1]},
        "status": "error",
    }
    assert ms[9] == UserMessage("critique", metadata=ms[9].metadata)
    assert "raw" in ms[9].metadata["langchain"]


def test_langchain_rejects_non_messages() -> None:
    with pytest.raises(InvalidArgumentError, match=r"messages\[0\]"):
        from_langchain([{"role": "user"}])


# -- LlamaIndex ----------------------------------------------------------------------------
def _llama() -> Any:
    return pytest.importorskip(
        "llama_index.core", reason="llama-index-core not installed (extra: llamaindex)"
    )


@pytest.mark.parametrize(("name", "messages"), CORPORA, ids=IDS)
def test_llamaindex_round_trip_both_ways(name: str, messages: list[Message]) -> None:
    _llama()
    from chatmem.integrations.llamaindex import from_llamaindex, to_llamaindex

    check_both_ways(to_llamaindex, from_llamaindex, messages)


def test_llamaindex_corpus_takes_the_natural_path() -> None:
    _llama()
    from llama_index.core.base.llms.types import ImageBlock, ToolCallBlock

    from chatmem.integrations.llamaindex import to_llamaindex

    xs = to_llamaindex(full_corpus())
    assert carried_whole(xs, lambda x: x.additional_kwargs.get("chatmem")) == []
    assert [x.role.value for x in xs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "assistant",
        "user",
    ]
    assert isinstance(xs[1].blocks[1], ImageBlock) and xs[1].blocks[1].image_mimetype == "image/png"
    assert isinstance(xs[2].blocks[0], ToolCallBlock) and xs[2].blocks[0].tool_kwargs == {
        "q": "weather",
        "n": 1,
    }
    assert xs[3].additional_kwargs["tool_call_id"] == "call_1" and xs[3].content == '{"temp": 21.5}'


def llamaindex_native() -> list[Any]:
    from llama_index.core.base.llms.types import (
        ChatMessage,
        DocumentBlock,
        ImageBlock,
        MessageRole,
        TextBlock,
        ThinkingBlock,
        ToolCallBlock,
    )

    return [
        ChatMessage(role=MessageRole.DEVELOPER, content="dev"),
        ChatMessage(role="user", content="hi", additional_kwargs={"user_id": 7}),
        ChatMessage(
            role="user",
            blocks=[
                TextBlock(text="pic"),
                ImageBlock(url="https://x.test/a.png"),
                ImageBlock(image=PNG, image_mimetype="image/png"),
                DocumentBlock(data=b"%PDF", title="t.pdf"),
            ],
        ),
        ChatMessage(
            role="assistant",
            blocks=[
                TextBlock(text=""),
                ToolCallBlock(tool_call_id="t1", tool_name="f", tool_kwargs={"a": 1}),
                ToolCallBlock(tool_call_id="t2", tool_name="g", tool_kwargs='{"b":2}'),
            ],
        ),
        ChatMessage(
            role="tool", content="A", additional_kwargs={"tool_call_id": "t1", "name": "f"}
        ),
        ChatMessage(role="tool", content="B", additional_kwargs={"tool_call_id": "t2"}),
        ChatMessage(role="assistant", content=None),
        ChatMessage(role="assistant", blocks=[ThinkingBlock(content="hmm"), TextBlock(text="x")]),
        ChatMessage(role=MessageRole.CHATBOT, content="bot"),
        ChatMessage(role="tool", content="no id"),
        ChatMessage(role="user", blocks=[TextBlock(text="a"), TextBlock(text="b")]),
        ChatMessage(
            role="user", blocks=[TextBlock(text="unknown kind"), ImageBlock(image=b"\x00\x01")]
        ),
    ]


def test_llamaindex_native_messages_round_trip_exactly() -> None:
    _llama()
    from chatmem.integrations.llamaindex import from_llamaindex, to_llamaindex

    native = llamaindex_native()
    for group in GROUPINGS:
        ms = from_llamaindex(native, group_tool_responses=group)
        assert to_llamaindex(ms, group_tool_responses=group) == native
    ms = from_llamaindex(native)
    assert ms[0] == SystemMessage("dev", metadata={"llamaindex": {"role": "developer"}})
    assert ms[2].media[1].data == PNG and ms[2].media[2].name == "t.pdf"
    tools = ms[4]
    assert isinstance(tools, ToolResponseMessage)
    assert [(r.id, r.name, r.response_data) for r in tools.responses] == [
        ("t1", "f", "A"),
        ("t2", "", "B"),
    ]
    assert ms[3].tool_calls[1].arguments == '{"b":2}'  # type: ignore[union-attr]


def test_json_arguments_keep_their_exact_text() -> None:
    m = AssistantMessage(None, tool_calls=(ToolCall(id="1", name="f", arguments='{ "a" :1 }'),))
    assert from_openai(to_openai([m])) == [m]
    assert json.loads(to_openai([m])[0]["tool_calls"][0]["function"]["arguments"]) == {"a": 1}
