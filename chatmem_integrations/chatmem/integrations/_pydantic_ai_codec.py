"""Pydantic AI messages to chatmem messages and back, and the bounded view (pure functions).

One ``ModelMessage`` becomes a *group* of chatmem messages, its parts in their chatmem idiom:
``SystemPromptPart`` a ``SystemMessage``, ``UserPromptPart`` a ``UserMessage`` (its text),
a run of ``ToolReturnPart`` one ``ToolResponseMessage``, and a response's ``TextPart`` and
``ToolCallPart`` one ``AssistantMessage`` (text and tool calls). So ``chatmem show``, export and
the other integrations see the same conversation. A message with no such part (only thinking,
deltas, a newer kind) becomes one empty user or assistant message.

The group's head carries the whole original, as Pydantic AI's own JSON
(``ModelMessagesTypeAdapter``), in ``metadata["pydantic_ai"] = {"message": ..., "span": k}``;
the ``k - 1`` messages after it carry ``{"span": 0}``. Decoding reads the original back, so
every part kind of the installed release round-trips exactly, whether or not chatmem has a
word for it. A chatmem message written by anyone else (no such key) is decoded naturally.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pydantic
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from chatmem.core import (
    AssistantMessage,
    InvalidArgumentError,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import message_text, token_window_of

KEY = "pydantic_ai"
"""The chatmem metadata key holding a group's original Pydantic AI message."""

TokenCounter = Callable[[str], int]


# -- encoding ----------------------------------------------------------------------------------
def _dump(m: ModelMessage) -> Any:
    """``m`` as JSON-native data, exactly as Pydantic AI serializes it (bytes as base64)."""
    return json.loads(ModelMessagesTypeAdapter.dump_json([m]))[0]


def _load(data: Any) -> ModelMessage:
    return ModelMessagesTypeAdapter.validate_json(json.dumps([data]))[0]


def _user_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return "\n".join(c for c in part.content if isinstance(c, str))


def _request_natural(parts: Sequence[ModelRequestPart]) -> list[Message]:
    out: list[Message] = []
    returns: list[ToolResponse] = []

    def flush() -> None:
        if returns:
            out.append(ToolResponseMessage(responses=tuple(returns)))
            returns.clear()

    for p in parts:
        if isinstance(p, ToolReturnPart):
            returns.append(
                ToolResponse(
                    id=p.tool_call_id, name=p.tool_name, response_data=p.model_response_str()
                )
            )
            continue
        if isinstance(p, SystemPromptPart):
            flush()
            out.append(SystemMessage(text=p.content))
        elif isinstance(p, UserPromptPart):
            flush()
            out.append(UserMessage(text=_user_text(p)))
    flush()
    return out


def _response_natural(parts: Sequence[ModelResponsePart]) -> list[Message]:
    texts = [p.content for p in parts if isinstance(p, TextPart)]
    calls = tuple(
        ToolCall(id=p.tool_call_id, name=p.tool_name, arguments=p.args_as_json_str())
        for p in parts
        if isinstance(p, ToolCallPart)
    )
    if not texts and not calls:
        return []
    return [AssistantMessage(text="".join(texts) if texts else None, tool_calls=calls)]


def _natural(m: ModelMessage) -> list[Message]:
    if isinstance(m, ModelRequest):
        return _request_natural(m.parts) or [UserMessage(text="")]
    return _response_natural(m.parts) or [AssistantMessage(text=None)]


def _with(m: Message, slot: dict[str, Any]) -> Message:
    return dataclasses.replace(m, metadata={KEY: slot})


def from_pydantic_ai(messages: Sequence[ModelMessage]) -> list[Message]:
    """Pydantic AI messages to chatmem messages: one group per message (module docstring)."""
    out: list[Message] = []
    for i, m in enumerate(messages):
        if not isinstance(m, ModelRequest | ModelResponse):
            raise InvalidArgumentError(
                f"messages[{i}]", f"is a {type(m).__name__}, not a ModelRequest or ModelResponse"
            )
        group = _natural(m)
        out.append(_with(group[0], {"message": _dump(m), "span": len(group)}))
        out.extend(_with(x, {"span": 0}) for x in group[1:])
    return out


# -- decoding ----------------------------------------------------------------------------------
def _foreign(m: Message) -> ModelMessage:
    """A chatmem message no Pydantic AI run wrote, in Pydantic AI's idiom."""
    if isinstance(m, SystemMessage):
        return ModelRequest(parts=[SystemPromptPart(m.text)])
    if isinstance(m, AssistantMessage):
        parts: list[ModelResponsePart] = [TextPart(m.text)] if m.text else []
        parts.extend(ToolCallPart(c.name, c.arguments, tool_call_id=c.id) for c in m.tool_calls)
        return ModelResponse(parts=parts)
    if isinstance(m, ToolResponseMessage):
        return ModelRequest(
            parts=[ToolReturnPart(r.name, r.response_data, tool_call_id=r.id) for r in m.responses]
        )
    return ModelRequest(parts=[UserPromptPart(m.text or "")])


def _slot(m: Message) -> Mapping[str, Any] | None:
    slot = m.metadata.get(KEY)
    return slot if isinstance(slot, Mapping) else None


def _is_follower(m: Message) -> bool:
    slot = _slot(m)
    return slot is not None and "message" not in slot and slot.get("span") == 0


def _original(slot: Mapping[str, Any], group: list[Message]) -> ModelMessage:
    """The stored original; when this release cannot read it (written by a newer one, with a
    part kind it does not know), the group's chatmem messages in their natural reading. The
    stored original is never rewritten (runs only append), so a newer reader still gets it."""
    try:
        return _load(slot["message"])
    except pydantic.ValidationError:
        if isinstance(group[0], AssistantMessage):  # a response is one chatmem message
            return _foreign(group[0])
        parts: list[Any] = [p for m in group for p in _foreign(m).parts]
        return ModelRequest(parts=parts)


def groups_of(messages: Sequence[Message]) -> list[tuple[ModelMessage, list[Message]]]:
    """Chatmem messages cut into groups, each with its Pydantic AI message. A follower whose
    head is missing (a bounded read began inside its group) is dropped; a head keeps the
    followers that are there."""
    out: list[tuple[ModelMessage, list[Message]]] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        slot = _slot(m)
        if _is_follower(m):
            i += 1
            continue
        if slot is None or "message" not in slot:
            out.append((_foreign(m), [m]))
            i += 1
            continue
        span = slot.get("span")
        j = i + 1
        while (
            j < n and j < i + (span if isinstance(span, int) else 1) and _is_follower(messages[j])
        ):
            j += 1
        group = list(messages[i:j])
        out.append((_original(slot, group), group))
        i = j
    return out


def to_pydantic_ai(messages: Sequence[Message]) -> list[ModelMessage]:
    """Chatmem messages to Pydantic AI messages (inverse of ``from_pydantic_ai``)."""
    return [mm for mm, _ in groups_of(messages)]


# -- the bounded view ----------------------------------------------------------------------------
def _ids(m: ModelMessage) -> set[str]:
    """The tool call ids of ``m``'s parts (any kind that has one: calls, returns, retries)."""
    ids = (getattr(p, "tool_call_id", None) for p in m.parts)
    return {i for i in ids if isinstance(i, str)}


def _call_ids(m: ModelMessage) -> set[str]:
    return _ids(m) if isinstance(m, ModelResponse) else set()


def _answer_ids(m: ModelMessage) -> set[str]:
    return _ids(m) if isinstance(m, ModelRequest) else set()


def turn_starts(history: Sequence[ModelMessage]) -> list[int]:
    """Indexes where a history may begin: a request with a user prompt answering no tool call,
    with no tool call before it answered at or after it (so a cut there never splits a call
    from its return)."""
    starts: list[int] = []
    answered_later: list[set[str]] = [set() for _ in range(len(history) + 1)]
    for i in range(len(history) - 1, -1, -1):
        answered_later[i] = answered_later[i + 1] | _answer_ids(history[i])
    called: set[str] = set()
    for i, m in enumerate(history):
        is_prompt = (
            isinstance(m, ModelRequest)
            and any(isinstance(p, UserPromptPart) for p in m.parts)
            and not _answer_ids(m)  # its calls may lie before a bounded read
        )
        if is_prompt and not (called & answered_later[i]):
            starts.append(i)
        called |= _call_ids(m)
    return starts


def from_turn_start(
    groups: Sequence[tuple[ModelMessage, list[Message]]], first: int = 0
) -> list[ModelMessage]:
    """The messages of ``groups`` from the first turn start at or after ``first`` (none when
    there is none), the system prompt parts of the groups cut off put in front."""
    history = [mm for mm, _ in groups]
    start = next((i for i in turn_starts(history) if i >= first), len(history))
    kept = history[start:]
    systems = [
        p
        for mm in history[:start]
        if isinstance(mm, ModelRequest)
        for p in mm.parts
        if isinstance(p, SystemPromptPart)
    ]
    if systems and kept and isinstance(kept[0], ModelRequest):
        head = kept[0]
        kept[0] = dataclasses.replace(head, parts=[*systems, *head.parts])
    return kept


def token_view(
    messages: Sequence[Message], max_tokens: int, count_tokens: TokenCounter
) -> list[ModelMessage]:
    """The newest whole turns within ``max_tokens`` (chatmem's token window rule: system
    messages stay, the cut moves on to a turn start)."""
    groups = groups_of(messages)
    kept = token_window_of(
        [m for _, g in groups for m in g],
        max_tokens,
        lambda m: max(count_tokens(message_text(m)), 1),
    )
    kept_ids = {id(m) for m in kept}
    first = len(groups)  # the oldest group from which on every non-system message is kept
    while first > 0 and all(
        id(m) in kept_ids for m in groups[first - 1][1] if not isinstance(m, SystemMessage)
    ):
        first -= 1
    return from_turn_start(groups, first)


def approximate_tokens(text: str) -> int:
    """The default token counter: about four characters a token (no tokenizer needed)."""
    return max(1, (len(text) + 3) // 4)
