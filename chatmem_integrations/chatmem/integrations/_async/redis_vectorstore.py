"""The Redis vector store's I/O: one hash a document, searched with RediSearch vector fields
(the commands and replies are built and read in ``_redis_vectors``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import redis.asyncio
from redis.exceptions import ResponseError

from chatmem.core import InvalidArgumentError
from chatmem.core.backend import AsyncOwnedClientMixin, async_owning

from .._redis_vectors import (
    DEFAULT_INDEX_NAME,
    DEFAULT_KEY_PREFIX,
    DEFAULT_METADATA_FIELDS,
    check_filter,
    check_options,
    check_url,
    create_args,
    documents_of,
    hash_of,
    is_existing_index,
    is_missing_index,
    search_args,
)
from .._vectors import AsyncEmbed, Document, check_documents, check_embed, check_search
from .vectorstore import embed_all, embed_query

__all__ = ["AsyncRedisVectorStore"]


class AsyncRedisVectorStore(AsyncOwnedClientMixin):
    """Documents in Redis hashes, searched by vector similarity with RediSearch; the index is
    created on the first ``add`` (when the vector length is known), idempotently."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        embed: AsyncEmbed,
        *,
        index_name: str = DEFAULT_INDEX_NAME,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        metadata_fields: Sequence[str] = DEFAULT_METADATA_FIELDS,
    ) -> None:
        if not isinstance(client, redis.asyncio.Redis):
            raise InvalidArgumentError("client", "must be a redis.asyncio.Redis")
        check_embed(embed)
        self.metadata_fields = check_options(index_name, key_prefix, metadata_fields)
        self.client = client
        self.embed = embed
        self.index_name = index_name
        self.key_prefix = key_prefix

    @classmethod
    async def from_url(cls, url: str, embed: AsyncEmbed, **options: Any) -> AsyncRedisVectorStore:
        """A store on the Redis at ``url`` (``redis://host:port/db``) with a client it owns
        (``close()`` closes it)."""
        client = redis.asyncio.Redis.from_url(check_url(url))

        async def build() -> AsyncRedisVectorStore:
            return cls(client, embed, **options)

        return await async_owning(client, client.aclose, build)

    async def _command(self, *args: Any) -> Any:
        client: Any = self.client  # redis-py leaves execute_command untyped
        return await client.execute_command(*args)

    async def add(self, documents: Sequence[Document]) -> None:
        """Embed ``documents`` (one ``embed`` call) and write them in one transaction."""
        docs = check_documents(documents)
        if not docs:
            return
        vectors = await embed_all(self.embed, [d.text for d in docs])
        dim = len(vectors[0])
        try:
            await self._command(
                *create_args(self.index_name, self.key_prefix, self.metadata_fields, dim)
            )
        except ResponseError as exc:
            if not is_existing_index(exc):
                raise
        pipe: Any = self.client.pipeline(transaction=True)
        for d, v in zip(docs, vectors, strict=True):
            pipe.hset(self.key_prefix + d.id, mapping=hash_of(d, v, self.metadata_fields))
        await pipe.execute()

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
        check_filter(wanted, self.metadata_fields)
        q = await embed_query(self.embed, query)
        try:
            raw = await self._command(*search_args(self.index_name, wanted, top_k, q))
        except ResponseError as exc:
            if is_missing_index(exc):
                return []  # nothing was ever added
            raise
        return documents_of(raw, self.key_prefix, similarity_threshold)
