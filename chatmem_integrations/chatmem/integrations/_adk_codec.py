"""Google ADK sessions and events as chatmem messages and back (pure functions, no I/O).

One ADK session is one chatmem conversation (``session_conversation_id``): its events, oldest
first, then one ``SystemMessage`` holding the session record (app, user, id, session-scoped
state, last update time). Every append replaces the record in the same atomic edit, so the
record is always the conversation's last message and ``find_last(cid, n + 1)`` reads the
newest ``n`` events plus the record.

An event becomes one chatmem message in its natural idiom (a user's text a ``UserMessage``,
function responses a ``ToolResponseMessage``, an agent's text and function calls an
``AssistantMessage``), so ``chatmem show`` and the other integrations can read it; the whole
event, as ADK's own JSON, rides in ``metadata["adk"]["event"]`` and is what decoding reads,
so every field of the installed release round-trips exactly.

App-scoped state lives in a conversation per app, user-scoped state in one per app and
user (each a single record message), and the ids of a user's live sessions in an index
conversation per app and user (one ``SystemMessage`` per session, so an atomic edit sees the
whole index); the users of an app have an index of their own.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

from google.adk.events.event import Event
from google.genai import types

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

KEY = "adk"
"""The chatmem metadata key of everything this integration stores."""
PREFIX = "adk"
"""The first segment of every conversation id this integration writes."""


# -- ids -------------------------------------------------------------------------------------
def _part(value: object, argument: str) -> str:
    """One id segment: a non-empty str, percent-escaped so ``/`` cannot forge a segment."""
    return quote(validate_conversation_id(value, argument=argument), safe="")


def session_conversation_id(app_name: str, user_id: str, session_id: str) -> str:
    """The chatmem conversation holding one ADK session: ``adk/s/<app>/<user>/<session>``."""
    parts = (
        _part(app_name, "app_name"),
        _part(user_id, "user_id"),
        _part(session_id, "session_id"),
    )
    return "/".join((PREFIX, "s", *parts))


def app_state_id(app_name: str) -> str:
    """The conversation holding an app's ``app:`` state."""
    return f"{PREFIX}/a/{_part(app_name, 'app_name')}"


def user_state_id(app_name: str, user_id: str) -> str:
    """The conversation holding a user's ``user:`` state within one app."""
    return f"{PREFIX}/u/{_part(app_name, 'app_name')}/{_part(user_id, 'user_id')}"


def session_index_id(app_name: str, user_id: str) -> str:
    """The conversation listing one user's live sessions within one app."""
    return f"{PREFIX}/i/{_part(app_name, 'app_name')}/{_part(user_id, 'user_id')}"


def user_index_id(app_name: str) -> str:
    """The conversation listing the users that have sessions within one app."""
    return f"{PREFIX}/iu/{_part(app_name, 'app_name')}"


# -- plain JSON --------------------------------------------------------------------------------
def plain(value: Any) -> Any:
    """A chatmem metadata value (frozen containers) as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def slot(m: Message) -> dict[str, Any] | None:
    """This integration's metadata of ``m`` (None for a message written by anyone else)."""
    data = m.metadata.get(KEY)
    return plain(data) if isinstance(data, Mapping) else None


# -- events ------------------------------------------------------------------------------------
def event_data(event: Event, state_delta: Mapping[str, Any]) -> dict[str, Any]:
    """``event`` as ADK's JSON, its state delta replaced by ``state_delta`` (temp keys gone)."""
    data: dict[str, Any] = json.loads(event.model_dump_json())
    data["actions"]["state_delta"] = dict(state_delta)
    return data


def event_of(data: Mapping[str, Any]) -> Event:
    """The event stored as ``data`` (ADK's own validation, so bytes and aliases decode)."""
    return Event.model_validate_json(json.dumps(data))


def _natural(event: Event) -> Message:
    """The event in chatmem's idiom (what ``chatmem show`` prints)."""
    parts: list[types.Part] = list(event.content.parts or []) if event.content else []
    texts = [p.text for p in parts if p.text and not p.thought]
    responses = tuple(
        ToolResponse(
            id=p.function_response.id or p.function_response.name or "call",
            name=p.function_response.name or "tool",
            response_data=json.dumps(p.function_response.response, default=str),
        )
        for p in parts
        if p.function_response is not None
    )
    if responses:
        return ToolResponseMessage(responses=responses)
    if event.author == "user":
        return UserMessage(text="".join(texts))
    calls = tuple(
        ToolCall(
            id=p.function_call.id or p.function_call.name or "call",
            name=p.function_call.name or "tool",
            arguments=json.dumps(p.function_call.args or {}, default=str),
        )
        for p in parts
        if p.function_call is not None
    )
    return AssistantMessage(text="".join(texts) if texts else None, tool_calls=calls)


def event_message(data: Mapping[str, Any], event: Event) -> Message:
    """The chatmem message storing ``event`` (``data`` is its stored JSON)."""
    try:
        natural = _natural(event)
    except (InvalidArgumentError, ValueError, TypeError):
        natural = AssistantMessage(text=None)
    return dataclasses.replace(natural, metadata={KEY: {"event": dict(data)}})


def stored_event(m: Message) -> dict[str, Any] | None:
    """The event JSON stored in ``m``, or None when ``m`` is not an event of ours."""
    s = slot(m)
    if s is None or isinstance(m, SystemMessage):
        return None
    event = s.get("event")
    return event if isinstance(event, dict) else None


# -- records -----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SessionRecord:
    """What a session is besides its events."""

    app_name: str
    user_id: str
    id: str
    state: dict[str, Any]
    last_update_time: float

    def message(self, created_at: datetime | None = None) -> SystemMessage:
        """The record as the ``SystemMessage`` that ends the session's conversation."""
        return SystemMessage(
            text=f"ADK session {self.id} of {self.user_id} in {self.app_name}",
            metadata={KEY: {"session": dataclasses.asdict(self)}},
            created_at=created_at,
        )


def session_record(m: Message) -> SessionRecord | None:
    """The session record stored in ``m``, or None."""
    s = slot(m)
    if s is None or not isinstance(m, SystemMessage) or not isinstance(s.get("session"), dict):
        return None
    r = s["session"]
    return SessionRecord(
        r["app_name"], r["user_id"], r["id"], dict(r["state"]), float(r["last_update_time"])
    )


def state_message(scope: str, state: Mapping[str, Any]) -> SystemMessage:
    """An app's or a user's state as the one message of its conversation."""
    return SystemMessage(text=f"ADK {scope} state", metadata={KEY: {"state": dict(state)}})


def stored_state(messages: list[Message]) -> dict[str, Any]:
    """The state held by the last state message of ``messages`` (empty when none)."""
    for m in reversed(messages):
        s = slot(m)
        if s is not None and isinstance(s.get("state"), dict):
            return dict(s["state"])
    return {}


def index_message(entry: str) -> SystemMessage:
    """One entry of an index conversation (a session id, or a user id)."""
    return SystemMessage(text=entry, metadata={KEY: {"entry": entry}})


def index_entry(m: Message) -> str | None:
    """The entry ``m`` holds, or None."""
    s = slot(m)
    entry = None if s is None else s.get("entry")
    return entry if isinstance(entry, str) else None
