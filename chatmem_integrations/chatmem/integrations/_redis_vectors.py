"""The pure half of the Redis vector stores: option checks, the hash a document becomes, and
the ``FT.CREATE`` / ``FT.SEARCH`` arguments and replies. No I/O (``_async/redis_vectorstore.py``
and its generated sync twin send them); ``redis_vectorstore`` is the public module.

A TAG field holds the SHA-256 of a metadata value, so any value (commas, spaces, quotes, any
script) is filtered exactly and nothing from a caller is ever spliced into a query: a query
names only our validated field names and hex digests, and the vector is a bound parameter.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.core import InvalidArgumentError

from ._vectors import Document

DEFAULT_INDEX_NAME = "chatmem-vectors"
DEFAULT_KEY_PREFIX = "chatmem:vector:"
DEFAULT_METADATA_FIELDS = ("conversationId", "messageType")
_FIELD = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\Z")
_RESERVED = {"text", "metadata", "embedding", "vector_score"}


def check_options(
    index_name: object, key_prefix: object, metadata_fields: Sequence[str]
) -> tuple[str, ...]:
    """Validate the constructor's names; the metadata fields as a tuple."""
    if not isinstance(index_name, str) or not _NAME.match(index_name):
        raise InvalidArgumentError("index_name", f"{index_name!r} is not a valid index name")
    if not isinstance(key_prefix, str) or not _NAME.match(key_prefix):
        raise InvalidArgumentError("key_prefix", f"{key_prefix!r} is not a valid key prefix")
    fields = tuple(metadata_fields) if not isinstance(metadata_fields, str) else ()
    for name in fields or [metadata_fields]:
        if not isinstance(name, str) or not _FIELD.match(name) or name in _RESERVED:
            raise InvalidArgumentError("metadata_fields", f"{name!r} is not a field name")
    return fields


def check_url(url: object) -> str:
    """A ``redis://`` or ``rediss://`` URL (InvalidArgumentError naming ``url`` otherwise)."""
    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://")):
        raise InvalidArgumentError("url", f"{url!r} is not a redis:// URL")
    return url


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def pack(vector: Sequence[float]) -> bytes:
    """A vector as RediSearch's FLOAT32 blob."""
    return struct.pack(f"<{len(vector)}f", *vector)


def create_args(index_name: str, key_prefix: str, fields: Sequence[str], dim: int) -> list[Any]:
    """``FT.CREATE`` of the index (FLAT, cosine) over the store's hashes."""
    schema: list[Any] = ["text", "TEXT", "metadata", "TEXT", "NOINDEX"]
    schema += [a for name in fields for a in (name, "TAG")]
    schema += ["embedding", "VECTOR", "FLAT", "6", "TYPE", "FLOAT32", "DIM", str(dim)]
    schema += ["DISTANCE_METRIC", "COSINE"]
    return ["FT.CREATE", index_name, "ON", "HASH", "PREFIX", "1", key_prefix, "SCHEMA", *schema]


def is_existing_index(exc: BaseException) -> bool:
    """Whether ``FT.CREATE`` failed only because the index is there already."""
    return "already exists" in str(exc).lower()


def is_missing_index(exc: BaseException) -> bool:
    """Whether ``FT.SEARCH`` failed only because nothing was ever added (no index yet)."""
    text = str(exc).lower()
    return "no such index" in text or "unknown index" in text


def hash_of(d: Document, vector: Sequence[float], fields: Sequence[str]) -> dict[str, str | bytes]:
    """The hash a document is stored as: text, metadata JSON, vector, one digest a TAG field."""
    mapping: dict[str, str | bytes] = {
        "text": d.text,
        "metadata": json.dumps(dict(d.metadata), ensure_ascii=False),
        "embedding": pack(vector),
    }
    for name in fields:
        value = d.metadata.get(name)
        if isinstance(value, str):
            mapping[name] = _digest(value)
    return mapping


def check_filter(wanted: Mapping[str, str], fields: Sequence[str]) -> None:
    """InvalidArgumentError naming ``filter`` when it uses a key that is not indexed."""
    unknown = [k for k in wanted if k not in fields]
    if unknown:
        raise InvalidArgumentError("filter", f"{unknown[0]!r} is not in metadata_fields")


def search_args(
    index_name: str, wanted: Mapping[str, str], top_k: int, q: Sequence[float]
) -> list[Any]:
    """``FT.SEARCH``: the ``top_k`` nearest hashes passing the TAG filter, nearest first."""
    where = " ".join(f"@{k}:{{{_digest(v)}}}" for k, v in wanted.items()) or "*"
    return [
        "FT.SEARCH", index_name,
        f"({where})=>[KNN {top_k} @embedding $vec AS vector_score]",
        "PARAMS", "2", "vec", pack(q),
        "SORTBY", "vector_score", "ASC",
        "RETURN", "3", "text", "metadata", "vector_score",
        "LIMIT", "0", str(top_k), "DIALECT", "2",
    ]  # fmt: skip


def documents_of(raw: Any, key_prefix: str, threshold: float) -> list[Document]:
    """The documents of an ``FT.SEARCH`` reply whose score reaches ``threshold``."""
    out: list[Document] = []
    for key, row in _rows(raw):
        distance = float(row["vector_score"])
        score = max(1.0 - distance, 0.0) if math.isfinite(distance) else 0.0
        if score < threshold:
            continue
        meta = json.loads(row["metadata"])
        out.append(Document(row["text"], meta, key[len(key_prefix) :], score=score))
    return out


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _rows(raw: Any) -> list[tuple[str, dict[str, str]]]:
    """``(key, fields)`` of an FT.SEARCH reply, in RESP3 (a map) or RESP2 (a flat list)."""
    if isinstance(raw, dict):
        results: list[Any] = raw.get(b"results", raw.get("results")) or []
        out = []
        for r in results:
            attrs = r.get(b"extra_attributes", r.get("extra_attributes", {}))
            fields = {_text(k): _text(v) for k, v in attrs.items()}
            out.append((_text(r.get(b"id", r.get("id"))), fields))
        return out
    rows = []
    for i in range(1, len(raw), 2):
        values = raw[i + 1]
        fields = {_text(values[j]): _text(values[j + 1]) for j in range(0, len(values), 2)}
        rows.append((_text(raw[i]), fields))
    return rows
