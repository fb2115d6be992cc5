"""The one JSON wire format for message content, shared by every document-shaped store.

A message's content encodes to a plain JSON-native dict (``message_to_dict``) with a format
version ``v``; bytes media travel as base64. Store-assigned fields (``created_at``,
``position``) are not part of the content: stores keep them beside it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from ._errors import SchemaError
from ._messages import (
    _EMPTY,
    AssistantMessage,
    Media,
    Message,
    MessageType,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    freeze_json,
)

FORMAT_VERSION = 1


def media_to_dict(m: Media) -> dict[str, Any]:
    """A media part as a JSON-native dict (bytes as base64)."""
    d: dict[str, Any] = {"mime_type": m.mime_type}
    if isinstance(m.data, bytes):
        d["data_b64"] = base64.b64encode(m.data).decode("ascii")
    else:
        d["uri"] = m.data
    if m.id is not None:
        d["id"] = m.id
    if m.name is not None:
        d["name"] = m.name
    return d


def media_from_dict(d: Mapping[str, Any]) -> Media:
    """Inverse of ``media_to_dict``."""
    data: bytes | str = base64.b64decode(d["data_b64"]) if "data_b64" in d else d["uri"]
    return Media(mime_type=d["mime_type"], data=data, id=d.get("id"), name=d.get("name"))


def message_to_dict(message: Message) -> dict[str, Any]:
    """Encode a message's content (not its store fields) as a JSON-native dict."""
    d: dict[str, Any] = {"v": FORMAT_VERSION, "type": message.message_type.value}
    if not isinstance(message, ToolResponseMessage):
        d["text"] = message.text
    if message.metadata:
        d["metadata"] = dict(message.metadata)
    if message.media:
        d["media"] = [media_to_dict(m) for m in message.media]
    if isinstance(message, AssistantMessage) and message.tool_calls:
        d["tool_calls"] = [
            {"id": c.id, "type": c.type, "name": c.name, "arguments": c.arguments}
            for c in message.tool_calls
        ]
    if isinstance(message, ToolResponseMessage):
        d["responses"] = [
            {"id": r.id, "name": r.name, "response_data": r.response_data}
            for r in message.responses
        ]
    return d


_FIELDS = {
    MessageType.USER: UserMessage,
    MessageType.SYSTEM: SystemMessage,
    MessageType.ASSISTANT: AssistantMessage,
    MessageType.TOOL: ToolResponseMessage,
}


def _trusted(cls: type, fields: dict[str, Any]) -> Any:
    """Build a message from values our own codec wrote, skipping re-validation (hot path):
    slot descriptors write the frozen fields directly."""
    obj: Any = object.__new__(cls)
    slots = _SLOTS[cls]
    for name, value in fields.items():
        slots[name](obj, value)
    return obj


_SLOTS: dict[type, dict[str, Any]] = {
    cls: {f.name: getattr(cls, f.name).__set__ for f in dataclasses.fields(cls)}
    for cls in _FIELDS.values()
}


def message_from_dict(
    d: Mapping[str, Any],
    *,
    created_at: datetime | None = None,
    position: int | None = None,
    trusted: bool = False,
) -> Message:
    """Decode ``message_to_dict`` output, attaching the store-assigned fields.

    ``trusted=True`` is for stores reading back what this codec wrote (a fresh dict from
    ``json.loads`` and a UTC ``created_at``): it skips re-validating every field.
    """
    if trusted and not d.get("media") and "tool_calls" not in d and "responses" not in d:
        kind = MessageType(d["type"])
        metadata = d.get("metadata")
        fields: dict[str, Any] = {
            "metadata": freeze_json(metadata) if metadata else _EMPTY,
            "media": (),
            "created_at": created_at,
            "position": position,
        }
        if kind is not MessageType.TOOL:
            fields["text"] = d.get("text")
        if kind is MessageType.ASSISTANT:
            fields["tool_calls"] = ()
        elif kind is MessageType.TOOL:
            fields["responses"] = ()
        if d.get("v", FORMAT_VERSION) == FORMAT_VERSION:
            message: Message = _trusted(_FIELDS[kind], fields)
            return message
    version = d.get("v", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise SchemaError(f"unsupported message format version {version!r}")
    kind = MessageType(d["type"])
    metadata = d.get("metadata") or {}
    media = tuple(media_from_dict(m) for m in d.get("media") or ())
    common: dict[str, Any] = {
        "metadata": metadata,
        "media": media,
        "created_at": created_at,
        "position": position,
    }
    if kind is MessageType.USER:
        return UserMessage(d["text"], **common)
    if kind is MessageType.SYSTEM:
        return SystemMessage(d["text"], **common)
    if kind is MessageType.ASSISTANT:
        calls = tuple(ToolCall(**c) for c in d.get("tool_calls") or ())
        return AssistantMessage(d.get("text"), tool_calls=calls, **common)
    responses = tuple(ToolResponse(**r) for r in d.get("responses") or ())
    return ToolResponseMessage(responses, **common)


dump_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""The one wire encoder: compact JSON, non-ASCII text kept as is (``json.dumps`` with
options would build a new encoder on every call). Every store encodes with it."""


def encode_json(message: Message) -> str:
    """The content of ``message`` as a compact JSON string (``dump_json``)."""
    return dump_json(message_to_dict(message))


def decode_json(
    payload: str | bytes, *, created_at: datetime | None = None, position: int | None = None
) -> Message:
    """Inverse of ``encode_json``."""
    return message_from_dict(json.loads(payload), created_at=created_at, position=position)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def to_micros(ts: datetime) -> int:
    """A UTC datetime as integer microseconds since the epoch (exact, for any store)."""
    delta = ts - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    """Inverse of ``to_micros``."""
    return _EPOCH + timedelta(microseconds=micros)
