"""Message <-> SQL row. The text goes in ``content`` (queryable); everything else in the
JSON ``payload`` through core's wire format, which also keeps ``None`` and ``""`` text apart
(Oracle stores ``""`` as NULL, so those two values live in the payload)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from chatmem.core import Message, MessageType, message_from_dict, message_to_dict

_PLAIN = '{"v":1}'  # the payload of a message with text only: decoded without json.loads

# One encoder for every row: json.dumps with options builds a new JSONEncoder per call.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def to_row(cid: str, position: int, message: Message) -> dict[str, Any]:
    """The column values for one message (``created_at`` must be set)."""
    d = message_to_dict(message)
    text = d.pop("text", None)
    kind = d.pop("type")
    if text:
        content: str | None = text
    else:
        content = None
        if message.message_type is not MessageType.TOOL:
            d["text"] = text
    assert message.created_at is not None
    return {
        "conversation_id": cid,
        "position": position,
        "is_system": 1 if kind == "SYSTEM" else 0,
        "message_type": kind,
        "content": content,
        "payload": _encode(d),
        "created_at": message.created_at.astimezone(timezone.utc).replace(tzinfo=None),
    }


def from_row(row: Mapping[Any, Any]) -> Message:
    """The message stored in ``row``, with its position and creation time."""
    return from_values(
        row["position"], row["message_type"], row["content"], row["payload"], row["created_at"]
    )


def from_values(
    position: int, message_type: str, content: str | None, payload: Any, created_at: Any
) -> Message:
    """Decode one stored message from its column values (``payload`` a JSON str or a dict
    the driver already parsed; ``created_at`` a datetime or SQLite's text form)."""
    if payload == _PLAIN:
        d: dict[str, Any] = {}
    elif type(payload) is str or isinstance(payload, bytes):
        d = json.loads(payload)
    else:
        d = dict(payload)
    d["type"] = message_type
    if "text" not in d and message_type != "TOOL":
        d["text"] = content
    ts = datetime.fromisoformat(created_at) if type(created_at) is str else created_at
    ts = ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)
    return message_from_dict(d, created_at=ts, position=int(position), trusted=True)
