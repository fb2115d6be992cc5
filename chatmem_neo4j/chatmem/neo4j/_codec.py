"""Message <-> node parameters and result rows.

Neo4j properties hold strings, booleans, 64-bit integers, floats, byte arrays, temporal
values and homogeneous lists of those; they cannot hold maps, nulls, nested or mixed lists,
or a property named ``""``. Metadata entries that fit are stored as properties of the
Metadata node, so they stay queryable in Cypher; the rest are kept, losslessly, as one JSON
object in the ``encoded`` property of the ``HAS_METADATA`` relationship, whose
``key_order`` keeps the caller's key order. Bytes media stay bytes (a byte array), created
times are native ``DATETIME`` values (exact to the microsecond), read back as integer
microseconds.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from chatmem.core import (
    AssistantMessage,
    Media,
    Message,
    SchemaError,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    message_from_dict,
)
from chatmem.core.backend import DecodeCache, from_micros, to_micros

_INT64 = (-(2**63), 2**63 - 1)
_KINDS = frozenset(("USER", "ASSISTANT", "SYSTEM", "TOOL"))
_SCALARS = (str, bool, float)


def _is_int64(value: object) -> bool:
    return type(value) is int and _INT64[0] <= value <= _INT64[1]


def is_property_value(value: object) -> bool:
    """True when Neo4j stores ``value`` as a property and gives it back unchanged."""
    if type(value) in _SCALARS or _is_int64(value):
        return True
    if not isinstance(value, list):  # core hands nested lists over as read-only subclasses
        return False
    if not value:
        return True
    first = type(value[0])
    if first is int:
        return all(_is_int64(v) for v in value)
    # Exact types: [1, 2.5] would come back as floats and [True, 1] is refused.
    return first in _SCALARS and all(type(v) is first for v in value)


def metadata_params(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[]`` for no metadata, else one ``{rel, node}`` entry for the Metadata node."""
    if not metadata:
        return []
    node: dict[str, Any] = {}
    encoded: dict[str, Any] = {}
    for key, value in metadata.items():
        if key and is_property_value(value):
            node[key] = list(value) if isinstance(value, list) else value
        else:
            encoded[key] = value
    rel: dict[str, Any] = {"key_order": list(metadata)}
    if encoded:
        rel["encoded"] = json.dumps(encoded, ensure_ascii=False, separators=(",", ":"))
    return [{"rel": rel, "node": node}]


def message_params(message: Message) -> dict[str, Any]:
    """The ``$messages[i]`` map the create statement expects."""
    assert message.created_at is not None  # core stamps every message before storing it
    # [seconds, microseconds] with floor division (exact, pre-1970 too); Cypher builds the
    # DATETIME. Plain ints pack much faster in the driver than a datetime parameter.
    ts = list(divmod(to_micros(message.created_at), 1_000_000))
    text = None if isinstance(message, ToolResponseMessage) else message.text
    media = []
    for i, m in enumerate(message.media):
        part: dict[str, Any] = {"idx": i, "mime_type": m.mime_type}
        part["data" if isinstance(m.data, bytes) else "uri"] = m.data
        if m.id is not None:
            part["id"] = m.id
        if m.name is not None:
            part["name"] = m.name
        media.append(part)
    calls = []
    if isinstance(message, AssistantMessage):
        calls = [
            {"idx": i, "id": c.id, "type": c.type, "name": c.name, "arguments": c.arguments}
            for i, c in enumerate(message.tool_calls)
        ]
    responses = []
    if isinstance(message, ToolResponseMessage):
        responses = [
            {"idx": i, "id": r.id, "name": r.name, "response_data": r.response_data}
            for i, r in enumerate(message.responses)
        ]
    return {
        "type": message.message_type.value,
        "text": text,
        "ts": ts,
        "metadata": metadata_params(message.metadata),
        "tool_calls": calls,
        "tool_responses": responses,
        "media": media,
    }


def shape_of(params: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """Which optional parts a batch of ``message_params`` has (picks the create statement)."""
    shape = {
        k
        for k in ("metadata", "tool_calls", "tool_responses", "media")
        if any(p[k] for p in params)
    }
    if any(p["type"] == "SYSTEM" for p in params):
        shape.add("system")
    if len(params) == 1:
        shape.add("single")
    return frozenset(shape)


def _metadata_from(parts: Sequence[Any]) -> dict[str, Any]:
    if not parts:
        return {}
    key_order, encoded, node = parts[0]
    extra = json.loads(encoded) if encoded else {}
    return {k: extra[k] if k in extra else node[k] for k in key_order}


def _ordered(parts: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(parts, key=lambda p: int(p["idx"]))


def _created_at(value: Any) -> datetime:
    # Read as integer microseconds (computed in Cypher): exact, and far cheaper for the
    # driver than hydrating a DATETIME into neo4j.time objects.
    if type(value) is not int:
        raise SchemaError(f"created_at is {type(value).__name__}, expected a DATETIME")
    return from_micros(value)


def message_from_row(row: Sequence[Any]) -> Message:
    """Decode one entry of ``Schema._returns``'s ``rows``."""
    position, kind, text, micros, parts = row
    if kind not in _KINDS:
        raise SchemaError(f"unknown message type {kind!r} in the graph")
    created_at = _created_at(micros)
    if parts is None or not (parts[1] or parts[2] or parts[3]):
        # Text and metadata only: core's trusted path (this codec wrote the values).
        d: dict[str, Any] = {"type": kind, "text": text}
        if parts is not None and parts[0]:
            d["metadata"] = _metadata_from(parts[0])
        return message_from_dict(d, created_at=created_at, position=position, trusted=True)
    metadata, tool_calls, tool_responses, media = parts
    common: dict[str, Any] = {
        "metadata": _metadata_from(metadata),
        "media": tuple(
            Media(
                mime_type=p["mime_type"],
                data=bytes(p["data"]) if "data" in p else p["uri"],
                id=p.get("id"),
                name=p.get("name"),
            )
            for p in _ordered(media)
        ),
        "created_at": created_at,
        "position": position,
    }
    if kind == "USER":
        return UserMessage(text, **common)
    if kind == "SYSTEM":
        return SystemMessage(text, **common)
    if kind == "ASSISTANT":
        calls = tuple(
            ToolCall(id=p["id"], type=p["type"], name=p["name"], arguments=p["arguments"])
            for p in _ordered(tool_calls)
        )
        return AssistantMessage(text, tool_calls=calls, **common)
    responses = tuple(
        ToolResponse(id=p["id"], name=p["name"], response_data=p["response_data"])
        for p in _ordered(tool_responses)
    )
    return ToolResponseMessage(responses, **common)


def messages_from_rows(rows: Sequence[Sequence[Any]], cache: DecodeCache) -> list[Message]:
    """Decode ``Schema._returns``'s ``rows``; a row without part nodes (the common case) is
    served from ``cache`` by its exact values, since a window read returns mostly the rows
    of the turn before. Rows with parts hold maps (unhashable) and are decoded each time."""
    out = []
    for row in rows:
        if row[4] is None:
            try:
                key = (row[0], row[1], row[2], row[3])
                out.append(cache.get(key, functools.partial(message_from_row, row)))
                continue
            except TypeError:  # an unhashable value where none belongs: decode reports it
                pass
        out.append(message_from_row(row))
    return out
