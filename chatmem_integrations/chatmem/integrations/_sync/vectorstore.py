# Generated from chatmem_integrations/chatmem/integrations/_async/vectorstore.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""What ``VectorStoreChatMemoryAdvisor`` needs of a vector store (the protocol), the embedding
call every store makes, and the in-memory store (exact search over a list)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from .._vectors import (
    Document,
    Embed,
    check_documents,
    check_embed,
    check_query,
    check_search,
    check_vectors,
    ranked,
)

__all__ = ["InMemoryVectorStore", "VectorStore", "embed_all", "embed_query"]


@runtime_checkable
class VectorStore(Protocol):
    """A vector store: ``add`` documents, ``similarity_search`` them (see ``vectorstore``)."""

    def add(self, documents: Sequence[Document]) -> None: ...

    def similarity_search(
        self,
        query: str,
        *,
        top_k: int,
        similarity_threshold: float = 0.0,
        filter: Mapping[str, str] | None = None,
    ) -> list[Document]: ...


def embed_all(embed: Embed, texts: Sequence[str]) -> list[list[float]]:
    """``embed(texts)``, checked: one vector of finite floats per text, all of one length."""
    vectors = embed(list(texts))
    return check_vectors(vectors, texts)


def embed_query(embed: Embed, query: object) -> list[float]:
    """The vector of a search ``query`` (InvalidArgumentError naming ``query`` unless a str)."""
    (vector,) = embed_all(embed, [check_query(query)])
    return vector


class InMemoryVectorStore:
    """Documents and their vectors in a list (exact search; for tests and small apps)."""

    def __init__(self, embed: Embed) -> None:
        check_embed(embed)
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
        return ranked(rows, q, wanted, similarity_threshold, top_k)
