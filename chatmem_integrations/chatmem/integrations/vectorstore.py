"""The vector store interface of ``VectorStoreChatMemoryAdvisor`` and the in-memory stores
(Redis: ``redis_vectorstore``, PostgreSQL with pgvector: ``pgvector_vectorstore``).

Each store comes as a sync class and its async twin (``InMemoryVectorStore`` /
``AsyncInMemoryVectorStore``...): a sync store takes ``embed(texts) -> vectors``, an async one
``async def embed(texts) -> vectors`` and awaits it (a sync embedding function becomes one
with ``async def embed(texts): return model(texts)``). ``VectorStore`` and ``AsyncVectorStore``
are the two protocols, so any object with ``add`` and ``similarity_search`` plugs in.

``similarity_search`` returns at most ``top_k`` documents, most similar first, whose
metadata equals ``filter`` on every key given and whose ``score`` (cosine similarity,
negative values counted as 0) is at least ``similarity_threshold``.
"""

from __future__ import annotations

from ._async.vectorstore import AsyncInMemoryVectorStore, AsyncVectorStore
from ._sync.vectorstore import InMemoryVectorStore, VectorStore
from ._vectors import AsyncEmbed, Document, Embed, cosine

__all__ = [
    "AsyncEmbed",
    "AsyncInMemoryVectorStore",
    "AsyncVectorStore",
    "Document",
    "Embed",
    "InMemoryVectorStore",
    "VectorStore",
    "cosine",
]
