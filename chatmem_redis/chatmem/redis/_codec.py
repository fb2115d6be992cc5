"""Messages to Redis JSON documents and back, on core's one wire format."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from typing import Any

from chatmem.core import (
    Message,
    ToolResponseMessage,
    decode_json,
    encode_json,
    from_micros,
    to_micros,
)

from ._config import MetadataField, MetadataFieldType

_COMPACT = {"ensure_ascii": False, "separators": (",", ":")}


def tag_value(value: object) -> str | None:
    """The TAG form of a metadata value: str as is, bool as true/false, int as digits."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value or None  # RediSearch does not index empty tags
    if isinstance(value, int):
        return str(value)
    return None


def numeric_value(value: object) -> int | float | None:
    """The NUMERIC form of a metadata value: finite int or float, never a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def text_value(value: object) -> str | None:
    return value if isinstance(value, str) else None


_PROJECT = {
    MetadataFieldType.TAG: tag_value,
    MetadataFieldType.NUMERIC: numeric_value,
    MetadataFieldType.TEXT: text_value,
}


def search_content(message: Message) -> str:
    """What full-text search sees: the text, or a tool message's response data."""
    if isinstance(message, ToolResponseMessage):
        return "\n".join(r.response_data for r in message.responses)
    return message.text or ""


def document_body(cid: str, tag: str, message: Message, fields: Sequence[MetadataField]) -> str:
    """The document as JSON without its opening brace: the store prepends the position."""
    assert message.created_at is not None  # stamped by the base class
    doc: dict[str, Any] = {
        "conversation_id": cid,
        "conversation_key": tag,
        "message_type": message.message_type.value,
        "content": search_content(message),
        "created_at": to_micros(message.created_at),
        "message": encode_json(message),
    }
    projected: dict[str, Any] = {}
    for f in fields:
        if f.name in message.metadata:
            value = _PROJECT[f.type](message.metadata[f.name])
            if value is not None:
                projected[f.name] = value
    if projected:
        doc["metadata"] = projected
    return json.dumps(doc, **_COMPACT)[1:]  # type: ignore[arg-type]


def parse_document(raw: str | bytes) -> tuple[str, Message]:
    """A stored document as (conversation id, message with created_at and position)."""
    doc = json.loads(raw)
    message = decode_json(
        doc["message"], created_at=from_micros(doc["created_at"]), position=doc["position"]
    )
    return doc["conversation_id"], message


class DocumentCache:
    """Decoded documents by their exact bytes: a window read decodes only what is new.

    Safe because a document's bytes fully determine the decoded message and messages are
    immutable all the way down: metadata, nested lists and dicts included, is read-only
    (core freezes it), so no caller can alter what another one reads.
    """

    def __init__(self, size: int = 2048) -> None:
        self._size = size
        self._data: dict[str | bytes, tuple[str, Message]] = {}
        self._lock = threading.Lock()

    def parse(self, raw: str | bytes) -> tuple[str, Message]:
        hit = self._data.get(raw)
        if hit is not None:
            return hit
        value = parse_document(raw)
        with self._lock:
            if len(self._data) >= self._size:
                del self._data[next(iter(self._data))]  # oldest first
            self._data[raw] = value
        return value
