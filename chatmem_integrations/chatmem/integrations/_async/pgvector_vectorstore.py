"""The pgvector store's I/O: one PostgreSQL table (created with the extension on the first
``add``, under an advisory lock), searched by cosine distance in the database (statements in
``_pgvector_sql``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from chatmem.core import InvalidArgumentError
from chatmem.core.backend import AsyncOwnedClientMixin, async_owning

from .._pgvector_sql import (
    DEFAULT_TABLE_NAME,
    EXISTS,
    EXTENSION,
    LOCK,
    check_options,
    check_url,
    create_table,
    documents_of,
    insert,
    rows_of,
    search,
    search_params,
)
from .._vectors import AsyncEmbed, Document, check_documents, check_embed, check_search
from .vectorstore import embed_all, embed_query

__all__ = ["AsyncPgVectorStore"]


class AsyncPgVectorStore(AsyncOwnedClientMixin):
    """Documents in a PostgreSQL table, searched by pgvector cosine distance;
    ``initialize_schema=False`` leaves the extension and the table to you."""

    def __init__(
        self,
        engine: AsyncEngine,
        embed: AsyncEmbed,
        *,
        table_name: str = DEFAULT_TABLE_NAME,
        initialize_schema: bool = True,
    ) -> None:
        if not isinstance(engine, AsyncEngine) or engine.dialect.name != "postgresql":
            raise InvalidArgumentError("engine", "must be a PostgreSQL SQLAlchemy AsyncEngine")
        check_embed(embed)
        check_options(table_name, initialize_schema)
        self.engine = engine
        self.embed = embed
        self.table_name = table_name
        self.initialize_schema = initialize_schema
        self._table = engine.dialect.identifier_preparer.quote(table_name)

    @classmethod
    async def from_url(cls, url: str, embed: AsyncEmbed, **options: Any) -> AsyncPgVectorStore:
        """A store on the PostgreSQL at ``url`` (``postgresql+psycopg://...``) with an engine
        it owns (``close()`` disposes of it)."""
        engine = create_async_engine(check_url(url))

        async def build() -> AsyncPgVectorStore:
            return cls(engine, embed, **options)

        return await async_owning(engine, engine.dispose, build)

    async def _create(self, conn: AsyncConnection, dim: int) -> None:
        await conn.execute(sa.text(LOCK), {"t": self.table_name})
        await conn.execute(sa.text(EXTENSION))
        await conn.execute(sa.text(create_table(self._table, dim)))

    async def add(self, documents: Sequence[Document]) -> None:
        """Embed ``documents`` (one ``embed`` call) and upsert them in one transaction."""
        docs = check_documents(documents)
        if not docs:
            return
        vectors = await embed_all(self.embed, [d.text for d in docs])
        async with self.engine.begin() as conn:
            if self.initialize_schema:
                await self._create(conn, len(vectors[0]))
            await conn.execute(sa.text(insert(self._table)), rows_of(docs, vectors))

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
        async with self.engine.connect() as conn:
            exists = (await conn.execute(sa.text(EXISTS), {"t": self._table})).scalar()
            if exists is None:
                return []  # nothing was ever added
            params = search_params(q, wanted, similarity_threshold, top_k)
            rows = (await conn.execute(sa.text(search(self._table)), params)).all()
        return documents_of(rows)
