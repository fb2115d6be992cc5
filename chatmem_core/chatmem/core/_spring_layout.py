"""What a Spring AI storage layout cannot hold, shared by every store that offers one: Spring
AI's JDBC and Cassandra repositories keep a message's type, text and timestamp only, so a
write that would lose more is refused by name unless the caller opts into the loss."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._errors import InvalidArgumentError
from ._messages import AssistantMessage, Message, ToolResponseMessage

SPRING_AI_LOSSY = ("tool_calls", "tool_responses", "media", "metadata")
"""What a write may drop when named in ``lossy`` (each is refused otherwise)."""
SPRING_AI_LAYOUTS = ("chatmem", "spring-ai")


def split_layout(url: str, options: dict[str, Any]) -> tuple[str, str]:
    """``url`` without a ``layout`` query parameter, and the layout asked for: the
    ``layout`` option (removed from ``options``), else the URL's, else ``"chatmem"``."""
    if not isinstance(url, str):
        raise InvalidArgumentError("url", f"must be a str, got {type(url).__name__}")
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    layout = options.pop("layout", None)
    if layout is None:
        layout = next((v for k, v in query if k == "layout"), "chatmem")
    if layout not in SPRING_AI_LAYOUTS:
        known = ", ".join(SPRING_AI_LAYOUTS)
        raise InvalidArgumentError("layout", f"must be one of {known}, not {layout!r}")
    rest = urlencode([(k, v) for k, v in query if k != "layout"])
    return urlunsplit(parts._replace(query=rest)), str(layout)


def spring_ai_lossy(lossy: Iterable[str]) -> frozenset[str]:
    """The validated ``lossy`` option (a name or several of ``SPRING_AI_LOSSY``)."""
    if isinstance(lossy, str):
        lossy = (lossy,)
    names = frozenset(lossy)
    unknown = sorted(names - set(SPRING_AI_LOSSY))
    if unknown:
        raise InvalidArgumentError(
            "lossy", f"unknown {', '.join(unknown)} (known: {', '.join(SPRING_AI_LOSSY)})"
        )
    return names


def would_lose(m: Message) -> list[str]:
    """What of ``m`` a Spring AI layout cannot store, by ``lossy`` name."""
    lost = []
    if isinstance(m, AssistantMessage) and m.tool_calls:
        lost.append("tool_calls")
    if isinstance(m, ToolResponseMessage):
        lost.append("tool_responses")
    if m.media:
        lost.append("media")
    if m.metadata:
        lost.append("metadata")
    return lost


def spring_ai_storable(
    messages: Sequence[Message] | Message,
    lossy: frozenset[str],
    argument: str = "messages",
    holds: frozenset[str] = frozenset(),
) -> list[Message]:
    """``messages`` as a Spring AI layout stores them, before any I/O: refused
    (``InvalidArgumentError`` naming the element and what it would lose) unless every loss
    is named in ``lossy``; tool calls and tool responses are then dropped whole (as Spring's
    JDBC and Cassandra ``saveAll`` drop them), media and metadata stripped. ``holds`` names
    what the layout keeps (Neo4j's keeps tool calls and responses). A message without text
    is refused unless it is held for its tool parts (Spring's content is required).
    Non-messages pass through for the caller's validation."""
    listed = [messages] if isinstance(messages, Message) else list(messages)
    out: list[Message] = []
    for i, m in enumerate(listed):
        if not isinstance(m, Message):
            out.append(m)  # the base class names the bad element
            continue
        lost = [what for what in would_lose(m) if what not in holds]
        refused = [what for what in lost if what not in lossy]
        if refused:
            raise InvalidArgumentError(
                f"{argument}[{i}]",
                f"the spring-ai layout would lose its {', '.join(refused)}"
                f" (pass lossy=({', '.join(repr(r) for r in refused)},) to accept that)",
            )
        if "tool_calls" in lost or "tool_responses" in lost:
            continue
        if lost:
            m = dataclasses.replace(m, media=(), metadata={})
        tools = isinstance(m, ToolResponseMessage) or (
            isinstance(m, AssistantMessage) and bool(m.tool_calls)
        )
        if not tools and m.text is None:
            raise InvalidArgumentError(f"{argument}[{i}]", "has no text (content is NOT NULL)")
        out.append(m)
    return out
