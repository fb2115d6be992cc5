"""``RedisVectorStore``: the advisor's ``VectorStore`` on Redis with RediSearch vector fields.

Each document is one hash (``key_prefix`` + id) holding its text, its metadata as JSON, its
float32 vector and one TAG field per name in ``metadata_fields``. A TAG holds the SHA-256 of
the value, so any value (commas, spaces, quotes, any script) is filtered exactly and nothing
from a caller is ever spliced into a query: the query names only our validated field names
and hex digests, and the vector travels as a bound parameter. The index (FLAT, cosine) is
created on the first ``add``, when the vector length is known; creating it is idempotent.
Needs ``pip install "chatmem[redis]"`` and a Redis with RediSearch (Redis 8, Redis Stack).
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
from chatmem.core.backend import require

require("redis", "redis")

import redis  # noqa: E402
from redis.exceptions import ResponseError  # noqa: E402

from .vectorstore import (  # noqa: E402
    Document,
    Embed,
    check_documents,
    check_search,
    embed_all,
)

__all__ = ["DEFAULT_INDEX_NAME", "DEFAULT_KEY_PREFIX", "RedisVectorStore"]

DEFAULT_INDEX_NAME = "chatmem-vectors"
DEFAULT_KEY_PREFIX = "chatmem:vector:"
DEFAULT_METADATA_FIELDS = ("conversationId", "messageType")
_FIELD = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\Z")
_RESERVED = {"text", "metadata", "embedding", "vector_score"}


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


class RedisVectorStore:
    """Documents in Redis hashes, searched by vector similarity with RediSearch."""

    def __init__(
        self,
        client: redis.Redis,
        embed: Embed,
        *,
        index_name: str = DEFAULT_INDEX_NAME,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        metadata_fields: Sequence[str] = DEFAULT_METADATA_FIELDS,
    ) -> None:
        if not isinstance(client, redis.Redis):
            raise InvalidArgumentError("client", "must be a redis.Redis")
        if not callable(embed):
            raise InvalidArgumentError("embed", "must be a callable texts -> vectors")
        if not isinstance(index_name, str) or not _NAME.match(index_name):
            raise InvalidArgumentError("index_name", f"{index_name!r} is not a valid index name")
        if not isinstance(key_prefix, str) or not _NAME.match(key_prefix):
            raise InvalidArgumentError("key_prefix", f"{key_prefix!r} is not a valid key prefix")
        fields = tuple(metadata_fields) if not isinstance(metadata_fields, str) else ()
        for name in fields or [metadata_fields]:
            if not isinstance(name, str) or not _FIELD.match(name) or name in _RESERVED:
                raise InvalidArgumentError("metadata_fields", f"{name!r} is not a field name")
        self.client = client
        self.embed = embed
        self.index_name = index_name
        self.key_prefix = key_prefix
        self.metadata_fields = fields

    @classmethod
    def from_url(cls, url: str, embed: Embed, **options: Any) -> RedisVectorStore:
        """A store on the Redis at ``url`` (``redis://host:port/db``)."""
        if not isinstance(url, str) or not url.startswith(("redis://", "rediss://")):
            raise InvalidArgumentError("url", f"{url!r} is not a redis:// URL")
        return cls(redis.Redis.from_url(url), embed, **options)

    def _command(self, *args: Any) -> Any:
        client: Any = self.client  # redis-py leaves execute_command untyped
        return client.execute_command(*args)

    def _create_index(self, dim: int) -> None:
        schema: list[Any] = ["text", "TEXT", "metadata", "TEXT", "NOINDEX"]
        schema += [a for name in self.metadata_fields for a in (name, "TAG")]
        schema += ["embedding", "VECTOR", "FLAT", "6", "TYPE", "FLOAT32", "DIM", str(dim)]
        schema += ["DISTANCE_METRIC", "COSINE"]
        try:
            self._command(
                "FT.CREATE", self.index_name, "ON", "HASH", "PREFIX", "1", self.key_prefix,
                "SCHEMA", *schema,
            )  # fmt: skip
        except ResponseError as exc:
            if "already exists" not in str(exc).lower():
                raise

    def add(self, documents: Sequence[Document]) -> None:
        """Embed ``documents`` (one ``embed`` call) and write them in one transaction."""
        docs = check_documents(documents)
        if not docs:
            return
        vectors = embed_all(self.embed, [d.text for d in docs])
        self._create_index(len(vectors[0]))
        pipe: Any = self.client.pipeline(transaction=True)
        for d, v in zip(docs, vectors, strict=True):
            mapping: dict[str, str | bytes] = {
                "text": d.text,
                "metadata": json.dumps(dict(d.metadata), ensure_ascii=False),
                "embedding": _pack(v),
            }
            for name in self.metadata_fields:
                value = d.metadata.get(name)
                if isinstance(value, str):
                    mapping[name] = _digest(value)
            pipe.hset(self.key_prefix + d.id, mapping=mapping)
        pipe.execute()

    def similarity_search(
        self,
        query: str,
        *,
        top_k: int,
        similarity_threshold: float = 0.0,
        filter: Mapping[str, str] | None = None,
    ) -> list[Document]:
        """The ``top_k`` most similar documents passing the filter and the threshold."""
        wanted = check_search(top_k, similarity_threshold, filter)
        if not isinstance(query, str):
            raise InvalidArgumentError("query", "must be a str")
        unknown = [k for k in wanted if k not in self.metadata_fields]
        if unknown:
            raise InvalidArgumentError("filter", f"{unknown[0]!r} is not in metadata_fields")
        (q,) = embed_all(self.embed, [query])
        where = " ".join(f"@{k}:{{{_digest(v)}}}" for k, v in wanted.items()) or "*"
        try:
            raw = self._command(
                "FT.SEARCH", self.index_name,
                f"({where})=>[KNN {top_k} @embedding $vec AS vector_score]",
                "PARAMS", "2", "vec", _pack(q),
                "SORTBY", "vector_score", "ASC",
                "RETURN", "3", "text", "metadata", "vector_score",
                "LIMIT", "0", str(top_k), "DIALECT", "2",
            )  # fmt: skip
        except ResponseError as exc:
            if "no such index" in str(exc).lower() or "unknown index" in str(exc).lower():
                return []  # nothing was ever added
            raise
        out: list[Document] = []
        for key, row in _rows(raw):
            distance = float(row["vector_score"])
            score = max(1.0 - distance, 0.0) if math.isfinite(distance) else 0.0
            if score < similarity_threshold:
                continue
            meta = json.loads(row["metadata"])
            out.append(Document(row["text"], meta, key[len(self.key_prefix) :], score=score))
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
