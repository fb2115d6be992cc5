"""Microsoft Agent Framework messages as chatmem messages and back (pure functions on the
framework's JSON, no framework import).

One framework ``Message`` is one chatmem message in chatmem's idiom, so ``chatmem show``,
export and the other integrations read the conversation: ``system`` a ``SystemMessage``,
``user`` a ``UserMessage``, ``assistant`` an ``AssistantMessage`` (its text contents, its
``function_call`` contents as ``ToolCall``), ``tool`` (or any message of ``function_result``
contents) a ``ToolResponseMessage``; another role an empty ``AssistantMessage``. The exact
``Message.to_dict()`` rides in ``metadata["agent_framework"]["message"]`` (as a JSON string
under ``"json"`` when it holds text a store cannot keep as such, such as a NUL) and is what
decoding reads, so every content type of the installed release round-trips. A chatmem message
no provider wrote is read as the framework's message of the same role and text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

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
from chatmem.core.backend import validate_conversation_id

from ._payload import payload_of as _payload_of
from ._payload import with_payload

KEY = "agent_framework"
"""The chatmem metadata key of everything this integration stores."""


def session_record_id(session_id: str) -> str:
    """The conversation holding one ``AgentSession`` snapshot: ``agent_framework/s/<id>``."""
    return f"{KEY}/s/{quote(validate_conversation_id(session_id, argument='session_id'), safe='')}"


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def natural(message: Mapping[str, Any], names: Mapping[str, str]) -> Message:
    """The chatmem equivalent of a ``Message.to_dict()`` (``names``: tool names by call id,
    for results, which do not name their tool)."""
    contents = [c for c in message.get("contents") or [] if isinstance(c, Mapping)]
    text = "".join(c["text"] for c in contents if c.get("type") == "text" and "text" in c)
    role = message.get("role")
    results = [c for c in contents if c.get("type") == "function_result"]
    if role == "tool" or results:
        return ToolResponseMessage(
            tuple(
                ToolResponse(
                    id=(cid := str(c.get("call_id", ""))),
                    name=names.get(cid, ""),
                    response_data=_as_text(c.get("result", "")),
                )
                for c in results
            )
        )
    if role == "system":
        return SystemMessage(text)
    if role == "user":
        return UserMessage(text)
    if role == "assistant":
        calls = tuple(
            ToolCall(
                id=str(c.get("call_id", "")),
                name=str(c.get("name", "")),
                arguments=_as_text(c.get("arguments") or {}),
            )
            for c in contents
            if c.get("type") == "function_call"
        )
        return AssistantMessage(text or (None if calls else ""), tool_calls=calls)
    return AssistantMessage(None)


def message_of(data: dict[str, Any], names: Mapping[str, str]) -> Message:
    """A ``Message.to_dict()`` as one chatmem message (the module docstring)."""
    try:
        base = natural(data, names)
    except (InvalidArgumentError, TypeError, ValueError):
        base = AssistantMessage(None)
    return with_payload(base, KEY, {"message": data}, "messages")


def _foreign(m: Message) -> dict[str, Any]:
    """A chatmem message no provider wrote, as a ``Message.to_dict()``."""
    contents: list[dict[str, Any]] = []
    if isinstance(m, ToolResponseMessage):
        contents = [
            {"type": "function_result", "call_id": r.id, "result": r.response_data}
            for r in m.responses
        ]
        return {"type": "message", "role": "tool", "contents": contents}
    if m.text:
        contents.append({"type": "text", "text": m.text})
    role = (
        "system"
        if isinstance(m, SystemMessage)
        else "user"
        if isinstance(m, UserMessage)
        else "assistant"
    )
    if isinstance(m, AssistantMessage):
        contents.extend(
            {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
            for c in m.tool_calls
        )
    return {"type": "message", "role": role, "contents": contents}


def dict_of(m: Message) -> dict[str, Any]:
    """The ``Message.to_dict()`` of a chatmem message: its stored original, else its reading."""
    payload = _payload_of(m, KEY)
    if payload is not None and isinstance(payload.get("message"), dict):
        data: dict[str, Any] = payload["message"]
        return data
    return _foreign(m)


def session_message(data: dict[str, Any]) -> Message:
    """An ``AgentSession.to_dict()`` as the one message of its record conversation."""
    return with_payload(SystemMessage(""), KEY, {"session": data}, "session")


def session_of(messages: list[Message]) -> dict[str, Any] | None:
    """The ``AgentSession.to_dict()`` stored in a record conversation, None when empty."""
    for m in messages:
        payload = _payload_of(m, KEY)
        if payload is not None and isinstance(payload.get("session"), dict):
            data: dict[str, Any] = payload["session"]
            return data
    return None
