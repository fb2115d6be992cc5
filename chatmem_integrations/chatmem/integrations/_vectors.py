"""The pure half of the vector stores: documents, embedding and search-argument checks, and
exact ranking (the in-memory stores' search). No I/O: the stores are in ``_async/`` (sync
twins generated); ``vectorstore`` is the public module."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatmem.core import InvalidArgumentError

Vectors = Sequence[Sequence[float]]
Embed = Callable[[Sequence[str]], Vectors]
"""What a sync vector store embeds with: ``embed(texts) -> one vector per text``."""
AsyncEmbed = Callable[[Sequence[str]], Awaitable[Vectors]]
"""What an async vector store embeds with: ``async def embed(texts) -> vectors``."""


@dataclass(frozen=True)
class Document:
    """A text with metadata (and, in results, its similarity ``score``)."""

    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    score: float | None = field(default=None, compare=False)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def check_vectors(vectors: Vectors, texts: Sequence[str]) -> list[list[float]]:
    """What ``embed(texts)`` returned, checked: one vector of finite floats per text, all of
    one length (InvalidArgumentError naming ``embed`` otherwise)."""
    out = [[float(x) for x in v] for v in vectors]
    if len(out) != len(texts):
        raise InvalidArgumentError("embed", f"returned {len(out)} vectors for {len(texts)}")
    if len({len(v) for v in out}) > 1 or any(not v for v in out):
        raise InvalidArgumentError("embed", "returned vectors of different or zero lengths")
    if any(not math.isfinite(x) for v in out for x in v):
        raise InvalidArgumentError("embed", "returned a non-finite number")
    return out


def check_query(query: object) -> str:
    """A search ``query`` (InvalidArgumentError naming ``query`` unless a str)."""
    if not isinstance(query, str):
        raise InvalidArgumentError("query", "must be a str")
    return query


def check_embed(embed: object) -> None:
    """InvalidArgumentError naming ``embed`` unless it can be called."""
    if not callable(embed):
        raise InvalidArgumentError("embed", "must be a callable texts -> vectors")


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


def ranked(
    rows: Sequence[tuple[Document, Sequence[float]]],
    q: Sequence[float],
    wanted: Mapping[str, str],
    threshold: float,
    top_k: int,
) -> list[Document]:
    """The exact search of the in-memory stores: the ``top_k`` rows most similar to ``q``
    (cosine, negative counted as 0) whose metadata holds ``wanted`` and whose score reaches
    ``threshold``, each with its ``score``."""
    scored = [
        (max(cosine(q, v), 0.0), d)
        for d, v in rows
        if all(d.metadata.get(k) == val for k, val in wanted.items())
    ]
    scored = [(s, d) for s, d in scored if s >= threshold]
    scored.sort(key=lambda sd: -sd[0])
    return [Document(d.text, d.metadata, d.id, score=s) for s, d in scored[:top_k]]
