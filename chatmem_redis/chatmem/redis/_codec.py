"""Messages to Redis log entries and index documents, and back, on core's one wire format.

A log entry is ``<position> <created_at, UTC microseconds> <core wire JSON>``: what history
reads return and decode. The index document holds only what RediSearch queries.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import partial
from typing import Any

from chatmem.core import (
    Message,
    MessageType,
    SchemaError,
    ToolResponseMessage,
    message_from_dict,
    message_to_dict,
)
from chatmem.core.backend import DecodeCache, from_micros, to_micros

from ._config import MetadataField, MetadataFieldType

# One encoder for every call: json.dumps with options builds a new JSONEncoder each time.
# The options are encode_json's, so the wire JSON is byte for byte core's.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_str = json.encoder.encode_basestring  # what _encode does with a str, without the call


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


def document_head(cid: str, tag: str) -> str:
    """What every index document of conversation ``cid`` starts with, after the position
    the store prepends: built once per conversation (see ``_schema.Layout``)."""
    return f'"conversation_id":{_encode_str(cid)},"conversation_key":"{tag}",'


def document_body(head: str, micros: int, message: Message, fields: Sequence[MetadataField]) -> str:
    """The index document as JSON without its opening brace (the store prepends the
    position): ``head`` from ``document_head``, then the queried fields, byte for byte the
    compact JSON of that dict. It carries no payload: the message itself is in the log
    entry."""
    body = (
        f'{head}"message_type":"{message.message_type.value}",'
        f'"content":{_encode_str(search_content(message))},"created_at":{micros}'
    )
    projected: dict[str, Any] = {}
    for f in fields:
        if f.name in message.metadata:
            value = _PROJECT[f.type](message.metadata[f.name])
            if value is not None:
                projected[f.name] = value
    return f'{body},"metadata":{_encode(projected)}}}' if projected else body + "}"


def write_triples(
    head: str, messages: Sequence[Message], fields: Sequence[MetadataField]
) -> list[bytes]:
    """The ``(kind, document body, log entry)`` triples the write scripts take, each message
    encoded once, as the bytes sent (the entries, ``[2::3]``, are also what ``EntryCache``
    keys them by)."""
    out: list[bytes] = []
    for m in messages:
        assert m.created_at is not None  # stamped by the base class
        micros = to_micros(m.created_at)
        out += (
            b"S" if m.message_type is MessageType.SYSTEM else b"M",
            document_body(head, micros, m, fields).encode(),
            f"{micros} {_encode(message_to_dict(m))}".encode(),
        )
    return out


def parse_entry(raw: str | bytes) -> Message:
    """A stored log entry as its message, with created_at and position."""
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    try:
        position, micros, wire = data.split(b" ", 2)
        # written by core's codec (see log_entry): the trusted path skips
        # re-validating every field, as the other stores' readers do
        return message_from_dict(
            json.loads(wire),
            created_at=from_micros(int(micros)),
            position=int(position),
            trusted=True,
        )
    except ValueError as exc:
        raise SchemaError(f"not a chatmem log entry: {data[:60]!r}") from exc


def in_order(messages: list[Message], systems: int, others: int) -> list[Message]:
    """A log tail (the other messages, then the ``systems`` system ones, each run oldest
    first) as every system message plus the newest ``others`` others (-1: all), by
    position."""
    if others >= 0 and len(messages) - systems > others:
        messages = messages[len(messages) - systems - others :]
    if not systems:
        return messages
    return sorted(messages, key=_position)


def _position(message: Message) -> int:
    return message.position or 0


class EntryCache:
    """Decoded log entries by their exact bytes (core's ``DecodeCache``): a window read
    decodes only what is new. An entry's bytes hold its position and timestamp, so a
    replaced or concurrently written message has other bytes, hence another key."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache = DecodeCache()

    def parse(self, raw: bytes) -> Message:
        return self._cache.get(raw, partial(parse_entry, raw))

    def remember(self, first: int, entries: Sequence[bytes], messages: Sequence[Message]) -> None:
        """Cache messages this repository just wrote at positions ``first``, ... under the
        exact bytes the store now holds for them, so the next read need not decode them."""
        for i, (entry, m) in enumerate(zip(entries, messages, strict=True)):
            self.remember_at(first + i, entry, m)

    def remember_at(self, position: int, entry: bytes, message: Message) -> None:
        """``remember`` of one message (its log entry, as sent, without the position)."""
        self._cache.put_written(b"%d %s" % (position, entry), message, position)

    def parse_entries(self, entries: Sequence[str | bytes]) -> list[Message]:
        return self._cache.get_many(entries, parse_entry)


def as_text(value: Any) -> str:
    """A reply value as str (a client without ``decode_responses`` returns bytes)."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
