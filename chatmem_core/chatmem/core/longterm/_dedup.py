"""Duplicate detection before a candidate is stored.

Normalised-text equality always applies (and the store enforces it with a unique key, so
concurrent writers cannot both store one memory). With an ``embed(texts) -> vectors``
callable, a candidate whose cosine similarity to an existing memory of the same user reaches
``threshold`` is a duplicate too ("prefers Python examples" vs "likes examples in Python").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from chatmem.core._errors import InvalidArgumentError

from . import _rules as rules
from ._model import MemoryCandidate, MemoryRecord

Embed = Callable[[list[str]], Sequence[Sequence[float]]]
DEFAULT_SIMILARITY_THRESHOLD = 0.9


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors of the same length (0.0 when either is zero)."""
    if len(a) != len(b):
        raise InvalidArgumentError("embed", f"returned vectors of lengths {len(a)} and {len(b)}")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 0.0 if norm == 0 else dot / norm


class Deduplicator:
    """Finds the existing record a candidate duplicates, if any."""

    def __init__(
        self, *, embed: Embed | None = None, threshold: float = DEFAULT_SIMILARITY_THRESHOLD
    ) -> None:
        if embed is not None and not callable(embed):
            raise InvalidArgumentError("embed", "must be callable: embed(texts) -> vectors")
        self.embed = embed
        self.threshold = rules.validate_confidence(threshold, "threshold")

    def duplicate_of(
        self, candidate: MemoryCandidate, existing: Sequence[MemoryRecord]
    ) -> MemoryRecord | None:
        """The first record with the same normalised text, else (with ``embed``) the most
        similar one at or above the threshold, else None."""
        key = rules.normalise(candidate.content)
        for record in existing:
            if rules.normalise(record.content) == key:
                return record
        if self.embed is None or not existing:
            return None
        vectors = list(self.embed([candidate.content, *(r.content for r in existing)]))
        if len(vectors) != len(existing) + 1:
            raise InvalidArgumentError("embed", "must return one vector per text")
        best, best_score = None, self.threshold
        for record, vector in zip(existing, vectors[1:], strict=True):
            score = cosine(vectors[0], vector)
            if score >= best_score:
                best, best_score = record, score
        return best
