"""Message <-> BSON sub-document, built on core's one wire format (``message_to_dict``).

Every field is stored as plain BSON so it can be queried: text and tool fields as strings,
metadata as an embedded document, media bytes as BSON binary, ``created_at`` as a Date (for
queries; milliseconds) plus ``created_at_us`` (exact microseconds, read back).

Two things BSON cannot hold verbatim are encoded reversibly: metadata keys that start with
``$``, contain ``.`` or ``%``, or are empty (escaped as ``%24``, ``%2E``, ``%25``; ``""`` as
``%``), and ints outside int64 (as ``{"%int": "<digits>"}``; an escaped user key can never
be ``%int``). Ordinary keys and values are stored as they are.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from chatmem.core import Message, message_from_dict, message_to_dict
from chatmem.core.backend import from_micros, to_micros

from ._schema import CREATED_AT, CREATED_AT_US, POSITION

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_BIG_INT = "%int"
_ESCAPES = (("%", "%25"), ("$", "%24"), (".", "%2E"))  # "%" first: escapes are not re-escaped
_UNESCAPE = {"25": "%", "24": "$", "2E": "."}
_ESCAPED = re.compile(r"%(25|24|2E)")


def escape_key(key: str) -> str:
    """A metadata key as a BSON field name MongoDB accepts in updates."""
    if not key:
        return "%"
    if "%" in key or "." in key or key.startswith("$"):
        for raw, esc in _ESCAPES:
            key = key.replace(raw, esc)
    return key


def unescape_key(key: str) -> str:
    """Inverse of ``escape_key`` (every ``%`` in a stored key starts one escape)."""
    if key == "%":
        return ""
    return _ESCAPED.sub(lambda m: _UNESCAPE[m.group(1)], key) if "%" in key else key


def _to_bson(value: Any) -> Any:
    if isinstance(value, dict):
        return {escape_key(k): _to_bson(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_bson(v) for v in value]
    if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
        return {_BIG_INT: str(value)}
    return value


def _from_bson(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and _BIG_INT in value:
            return int(value[_BIG_INT])
        return {unescape_key(k): _from_bson(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_bson(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)  # bson.Int64 -> int: numbers come back as the type they went in
    return value


def to_document(message: Message, position: int) -> dict[str, Any]:
    """The stored sub-document of ``message`` (which must carry ``created_at``)."""
    created_at = message.created_at
    assert created_at is not None, "messages are stamped before they are stored"
    d = message_to_dict(message)
    del d["v"]  # the layout version lives on the conversation document
    doc: dict[str, Any] = {
        POSITION: position,
        CREATED_AT: created_at,
        CREATED_AT_US: to_micros(created_at),
        **d,
    }
    if "metadata" in d:
        doc["metadata"] = _to_bson(d["metadata"])
    if "media" in d:
        doc["media"] = [_media_to_bson(m) for m in d["media"]]
    return doc


def _media_to_bson(m: dict[str, Any]) -> dict[str, Any]:
    if "data_b64" not in m:
        return m
    out = {k: v for k, v in m.items() if k != "data_b64"}
    out["data"] = base64.b64decode(m["data_b64"])  # stored as BSON binary
    return out


def _media_from_bson(m: Mapping[str, Any]) -> dict[str, Any]:
    if "data" not in m:
        return dict(m)
    out = {k: v for k, v in m.items() if k != "data"}
    out["data_b64"] = base64.b64encode(bytes(m["data"])).decode("ascii")
    return out


def from_document(doc: Mapping[str, Any]) -> Message:
    """Inverse of ``to_document``: the message with its ``created_at`` and ``position``."""
    d = {k: v for k, v in doc.items() if k not in (POSITION, CREATED_AT, CREATED_AT_US)}
    if "metadata" in d:
        d["metadata"] = _from_bson(d["metadata"])
    if "media" in d:
        d["media"] = [_media_from_bson(m) for m in d["media"]]
    created_at: datetime = from_micros(int(doc[CREATED_AT_US]))
    return message_from_dict(d, created_at=created_at, position=int(doc[POSITION]))
