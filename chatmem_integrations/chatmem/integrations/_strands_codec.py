"""Strands sessions, agents and messages as chatmem messages and back (pure functions, no I/O).

Two conversations per Strands session (``_part`` percent-escapes each id segment, so ``/``
cannot forge one):

- ``strands/s/<session>``: records, each a ``SystemMessage`` with empty text: the session
  (``Session.to_dict()``), one per agent (``SessionAgent.to_dict()``) and one per multi-agent
  (its ``serialize_state()``). Records are system messages, so one atomic window edit reads
  them all, whatever its bound;
- ``strands/m/<session>/<agent>``: the agent's messages, one chatmem message each, oldest
  ``message_id`` first, in chatmem's idiom (text a ``UserMessage`` or ``AssistantMessage``,
  ``toolUse`` blocks ``ToolCall``, ``toolResult`` blocks a ``ToolResponseMessage``) so
  ``chatmem show`` and the other integrations read the conversation (a redacted message reads
  as its redaction, as the agent sees it).

The exact ``to_dict()`` of what Strands handed over rides in ``metadata["strands"]`` (as a
JSON string under ``"json"`` when it holds text a store cannot keep as such, such as a NUL)
and is what decoding reads, so every content block of the installed release round-trips.
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

KEY = "strands"
"""The chatmem metadata key of everything this integration stores."""
PREFIX = "strands"
"""The first segment of every conversation id this integration writes."""
RECORD_KINDS = ("session", "agent", "multi_agent")


def _part(value: object, argument: str) -> str:
    return quote(validate_conversation_id(value, argument=argument), safe="")


def records_id(session_id: str) -> str:
    """The conversation holding a session's session, agent and multi-agent records."""
    return f"{PREFIX}/s/{_part(session_id, 'session_id')}"


def messages_id(session_id: str, agent_id: str) -> str:
    """The conversation holding one agent's messages: ``strands/m/<session>/<agent>``."""
    return f"{PREFIX}/m/{_part(session_id, 'session_id')}/{_part(agent_id, 'agent_id')}"


def check_message_id(message_id: object) -> int:
    """A Strands message id: an int >= 0 (``InvalidArgumentError`` naming it otherwise)."""
    if isinstance(message_id, bool) or not isinstance(message_id, int) or message_id < 0:
        raise InvalidArgumentError("message_id", "must be an int >= 0")
    return message_id


# -- records ---------------------------------------------------------------------------------
def record_message(kind: str, key: str, data: Mapping[str, Any]) -> Message:
    """A record (``kind`` one of ``RECORD_KINDS``, ``key`` its id) as a system message."""
    return with_payload(SystemMessage(""), KEY, {kind: {"id": key, "data": dict(data)}}, kind)


def record_of(m: Message) -> tuple[str, str, dict[str, Any]] | None:
    """``(kind, id, data)`` of a record message, None for anything else."""
    payload = _payload_of(m, KEY)
    if payload is None or len(payload) != 1:
        return None
    kind, body = next(iter(payload.items()))
    if kind not in RECORD_KINDS or not isinstance(body, dict):
        return None
    key, data = body.get("id"), body.get("data")
    if not isinstance(key, str) or not isinstance(data, dict):
        return None
    return kind, key, data


# -- messages --------------------------------------------------------------------------------
def _result_text(result: Mapping[str, Any]) -> str:
    content = result.get("content", [])
    parts = content if isinstance(content, list) else []
    if all(isinstance(p, Mapping) and set(p) == {"text"} for p in parts):
        return "\n".join(str(p["text"]) for p in parts)
    return json.dumps(content)


def natural(message: Mapping[str, Any], names: Mapping[str, str]) -> Message:
    """The chatmem equivalent of a Strands ``Message`` (``names``: tool names by use id, for
    results, which do not name their tool)."""
    blocks = [b for b in message.get("content", []) if isinstance(b, Mapping)]
    text = "\n".join(b["text"] for b in blocks if isinstance(b.get("text"), str))
    if message.get("role") == "assistant":
        calls = tuple(
            ToolCall(
                id=str(u.get("toolUseId", "")),
                name=str(u.get("name", "")),
                arguments=json.dumps(u.get("input", {})),
            )
            for b in blocks
            if isinstance(u := b.get("toolUse"), Mapping)
        )
        return AssistantMessage(text or (None if calls else ""), tool_calls=calls)
    results = [r for b in blocks if isinstance(r := b.get("toolResult"), Mapping)]
    if results:
        return ToolResponseMessage(
            tuple(
                ToolResponse(
                    id=(rid := str(r.get("toolUseId", ""))),
                    name=names.get(rid, ""),
                    response_data=_result_text(r),
                )
                for r in results
            )
        )
    return UserMessage(text)


def message_of(session_message: dict[str, Any], names: Mapping[str, str]) -> Message:
    """A ``SessionMessage.to_dict()`` as one chatmem message (the module docstring)."""
    shown = session_message.get("redact_message") or session_message.get("message") or {}
    try:
        base = natural(shown, names)
    except (InvalidArgumentError, TypeError, ValueError):
        base = AssistantMessage(None)
    return with_payload(base, KEY, {"message": session_message}, "session_message")


def session_message_of(m: Message) -> dict[str, Any] | None:
    """The ``SessionMessage.to_dict()`` stored in ``m`` (None for a message we did not write)."""
    payload = _payload_of(m, KEY)
    if payload is None or set(payload) != {"message"} or not isinstance(payload["message"], dict):
        return None
    data: dict[str, Any] = payload["message"]
    return data
