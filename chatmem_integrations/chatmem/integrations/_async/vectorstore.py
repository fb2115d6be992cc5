"""What ``VectorStoreChatMemoryAdvisor`` needs of a vector store (the protocol), the embedding
call every store makes, and the in-memory store (exact search over a list)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from chatmem.core import InvalidArgumentError

from .._vectors import (
    AsyncEmbed,
    Document,
    check_documents,
    check_embed,
    check_query,
    check_search,
    check_vectors,
    ranked,
)

__all__ = ["AsyncInMemoryVectorStore", "AsyncVectorStore", "embed_all", "embed_query"]

ASYNC = True


@runtime_checkable
class AsyncVectorStore(Protocol):
    """A vector store: ``add`` documents, ``similarity_search`` them (see ``vectorstore``)."""

    async def add(self, documents: Sequence[Document]) -> None: ...

    async def similarity_search(
        self,
        query: str,
        *,
        top_k: int,
        similarity_threshold: float = 0.0,
        filter: Mapping[str, str] | None = None,
    ) -> list[Document]: ...


async def embed_all(embed: AsyncEmbed, texts: Sequence[str]) -> list[list[float]]:
    """``embed(texts)``, checked: one vector of finite floats per text, all of one length."""
    if ASYNC:
        pending = embed(list(texts))
        if not inspect.isawaitable(pending):
            raise InvalidArgumentError(
                "embed", "returned vectors, not an awaitable: give this store an async embed"
            )
        vectors = await pending
    else:
        vectors = embed(list(texts))
    return check_vectors(vectors, texts)


async def embed_query(embed: AsyncEmbed, query: object) -> list[float]:
    """The vector of a search ``query`` (InvalidArgumentError naming ``query`` unless a str)."""
    (vector,) = await embed_all(embed, [check_query(query)])
    return vector


class AsyncInMemoryVectorStore:
    """Documents and their vectors in a list (exact search; for tests and small apps)."""

    def __init__(self, embed: AsyncEmbed) -> None:
        check_embed(embed)
        self.embed = embed
        self._rows: list[tuple[Document, list[float]]] = []
        self._lock = asyncio.Lock()

    async def add(self, documents: Sequence[Document]) -> None:
        """Embed and keep ``documents`` (one call to ``embed``)."""
        docs = check_documents(documents)
        if not docs:
            return
        vectors = await embed_all(self.embed, [d.text for d in docs])
        async with self._lock:
            self._rows.extend(zip(docs, vectors, strict=True))

    async def similarity_search(
        self,
        query: str,
        *,
        top_k: int,
        similarity_threshold: float = 0.0,
        filter: Mapping[str, str] | None = None,
    ) -> list[Document]:
        """The ``top_k`` most similar documents passing the filter and the threshold."""
        wanted = check_search(top_k, similarity_threshold, filter)
        q = await embed_query(self.embed, query)
        async with self._lock:
            rows = list(self._rows)
        return ranked(rows, q, wanted, similarity_threshold, top_k)
