"""Shared test data: every message kind with every field, and the id corpus."""

from __future__ import annotations

from datetime import datetime, timezone

from chatmem.core import (
    AssistantMessage,
    Media,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

PNG = bytes(range(256)) + b"\x89PNG\r\n\x1a\n\x00\xff"


def full_corpus() -> list[Message]:
    """One conversation exercising every kind and every field, including edge values."""
    return [
        SystemMessage("You are terse.", metadata={"version": 3, "source": "policy"}),
        UserMessage(
            "What is on this picture? ümlaut 漢字 🙂 'quotes' \"double\" \\ back",
            metadata={
                "int": 42,
                "float": 1.5,
                "whole_float": 2.0,
                "big": 2**53 + 1,
                "neg": -7,
                "bool": True,
                "none": None,
                "str": "x",
                "empty_str": "",
                "list": [1, "two", 3.0, None, [4], {"five": 5}],
                "nested": {"a": {"b": {"c": [1, 2, {"d": False}]}}},
                "empty_list": [],
                "empty_map": {},
            },
            media=(
                Media(mime_type="image/png", data=PNG, id="img-1", name="pic.png"),
                Media(mime_type="image/jpeg", data="https://example.com/a.jpg"),
            ),
        ),
        AssistantMessage(
            None,
            tool_calls=(
                ToolCall(id="call_1", name="lookup", arguments='{"q": "weather", "n": 1}'),
                ToolCall(id="call_2", name="clock", arguments="{}", type="function"),
            ),
            metadata={"finish_reason": "tool_calls"},
        ),
        ToolResponseMessage(
            (
                ToolResponse(id="call_1", name="lookup", response_data='{"temp": 21.5}'),
                ToolResponse(id="call_2", name="clock", response_data="12:00"),
            ),
            metadata={"latency_ms": 12},
        ),
        AssistantMessage(
            "It is 21.5 °C at noon.",
            metadata={"model": "m-1", "usage": {"in": 10, "out": 7}},
            media=(Media(mime_type="audio/wav", data=b"RIFF\x00\x01", name="a.wav"),),
        ),
        AssistantMessage(""),
        UserMessage("line1\nline2\ttab\r\n end   "),
    ]


def turn(i: int) -> list[Message]:
    """A small user/assistant pair, numbered."""
    return [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")]


ID_CORPUS: list[str] = [
    "123e4567-e89b-12d3-a456-426614174000",
    "-_:@#/!&",
    "with space",
    "naïve",
    "naive",
    "A",
    "a",
    "a ",
    "comma,separated",
    "star*",
    "{braces}:and-dashes",
    "x" * 255,
    "Ωμέγα-中文-😀",
    "'; DROP TABLE x; --",
    "$ne",
    "%_like",
]

FIXED_TS = datetime(2024, 2, 29, 12, 34, 56, 789012, tzinfo=timezone.utc)


def parse(spec: str) -> list[Message]:
    """'S1 U1 A1 Q2 R2' -> messages; U/Q user, A/R assistant, S system."""
    out: list[Message] = []
    for token in spec.split():
        kind = token[0]
        if kind in "UQ":
            out.append(UserMessage(token))
        elif kind in "AR":
            out.append(AssistantMessage(token))
        elif kind == "S":
            out.append(SystemMessage(token))
        else:
            raise ValueError(token)
    return out


VECTORS: list[tuple[int, list[str], str]] = [
    # (window, batches added in turn, expected window)
    (2, ["U1 A1 U2 A2 U3"], "U3"),
    (3, ["U1 A1", "U2"], "U1 A1 U2"),
    (2, ["U1 A1", "U2 A2"], "U2 A2"),
    (3, ["S1 U1 A1", "U2 A2"], "S1 U2 A2"),
    (3, ["S1 S2 U1 A1", "U2 A2"], "S1 S2"),
    (3, ["Q1 A1 Q2 A2 Q3 A3"], "Q3 A3"),
    (4, ["Q1 A1 A1b A1c Q2 A2"], "Q2 A2"),
    (4, ["U1 R1 U2 R2 U3 R3"], "U2 R2 U3 R3"),
    (2, ["S1 S2", "U1 A1 U2"], "S1 S2"),
    (2, ["S1 S2", "S3"], "S3"),
    (2, ["S1 S2", "U1 A1"], "S1 S2"),
]
