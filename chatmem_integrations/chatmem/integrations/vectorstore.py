"""A small vector store interface for ``VectorStoreChatMemoryAdvisor`` and its in-memory
implementation (Redis: ``redis_vectorstore``). Any ``embed(texts) -> vectors`` callable
makes the vectors.

``similarity_search`` returns at most ``top_k`` documents, most similar first, whose
metadata equals ``filter`` on every key given and whose ``score`` (cosine similarity,
negative values counted as 0) is at least ``similarity_threshold``.
"""

from __future__ import annotations

import json
import math
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from chatmem.core import InvalidArgumentError

__all__ = ["Document", "Embed", "InMemoryVectorStore", "VectorStore", "cosine"]

Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


@dataclass(frozen=True)
class Document:
    """A text with metadata (and, in results, its similarity ``score``)."""

    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    score: float | None = field(default=None, compare=False)


@runtime_checkable
class VectorStore(Protocol):
    """What the advisor needs of a vector store."""

    def add(self, documents: Sequence[Document]) -> None: ...

    def similarity_search(
        self,
        query: str,
        *,
        top_k: int,
        similarity_threshold: float = 0.0,
        filter: Mapping[str, str] | None = None,
    ) -> list[Document]: ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def embed_all(embed: Embed, texts: Sequence[str]) -> list[list[float]]:
    """``embed(texts)`` checked: one vector of finite floats per text, all one length."""
    vectors = [[float(x) for x in v] for v in embed(list(texts))]
    if len(vectors) != len(texts):
        raise InvalidArgumentError("embed", f"returned {len(vectors)} vectors for {len(texts)}")
    if len({len(v) for v in vectors}) > 1 or any(not v for v in vectors):
        raise InvalidArgumentError("embed", "returned vectors of different or zero lengths")
    if any(not math.isfinite(x) for v in vectors for x in v):
        raise InvalidArgumentError("embed", "returned a non-finite number")
    return vectors


def embed_query(embed: Embed, query: object) -> list[float]:
    """The vector of a search ``query`` (InvalidArgumentError naming ``query`` unless a str)."""
    if not isinstance(query, str):
        raise InvalidArgumentError("query", "must be a str")
    (vector,) = embed_all(embed, [query])
    return vector


def check_search(top_k: object, threshold: object, filter: object) -> dict[str, str]:
    """Validate ``similarity_search`` arguments; the filter as a plain dict."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0:
        raise InvalidArgumentError("top_k", f"must be a positive int, got {top_k!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise InvalidArgumentError("similarity_threshold", "must be a number")
    if not 0.0 <= threshold <= 1.0:
        raise InvalidArgumentError("similarity_threshold", f"must be in [0, 1], got {threshold}")
    if filter is None:
        return {}
    if not isinstance(filter, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in filter.items()
    ):
        raise InvalidArgumentError("filter", "must map str keys to str values")
    return dict(filter)


def check_documents(documents: object) -> list[Document]:
    """``documents`` as a list of Document (InvalidArgumentError otherwise)."""
    if isinstance(documents, Document):
        return [documents]
    if not isinstance(documents, Sequence) or isinstance(documents, (str, bytes)):
        raise InvalidArgumentError("documents", "must be a sequence of Document")
    for i, d in enumerate(documents):
        if not isinstance(d, Document):
            raise InvalidArgumentError(f"documents[{i}]", f"is a {type(d).__name__}")
        json.dumps(dict(d.metadata))  # metadata must be JSON (a TypeError names the value)
    return list(documents)


class InMemoryVectorStore:
    """Documents and their vectors in a list (exact search; for tests and small apps)."""

    def __init__(self, embed: Embed) -> None:
        if not callable(embed):
            raise InvalidArgumentError("embed", "must be a callable texts -> vectors")
        self.embed = embed
        self._rows: list[tuple[Document, list[float]]] = []
        self._lock = threading.Lock()

    def add(self, documents: Sequence[Document]) -> None:
        """Embed and keep ``documents`` (one call to ``embed``)."""
        docs = check_documents(documents)
        if not docs:
            return
        vectors = embed_all(self.embed, [d.text for d in docs])
        with self._lock:
            self._rows.extend(zip(docs, vectors, strict=True))

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
        q = embed_query(self.embed, query)
        with self._lock:
            rows = list(self._rows)
        scored = [
            (max(cosine(q, v), 0.0), d)
            for d, v in rows
            if all(d.metadata.get(k) == val for k, val in wanted.items())
        ]
        scored = [(s, d) for s, d in scored if s >= similarity_threshold]
        scored.sort(key=lambda sd: -sd[0])
        return [Document(d.text, d.metadata, d.id, score=s) for s, d in scored[:top_k]]
