# Generated from chatmem_integrations/chatmem/integrations/_async/pgvector_vectorstore.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The pgvector store's I/O: one PostgreSQL table (created with the extension on the first
``add``, under an advisory lock), searched by cosine distance in the database (statements in
``_pgvector_sql``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, create_engine

from chatmem.core import InvalidArgumentError
from chatmem.core.backend import OwnedClientMixin, owning

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
from .._vectors import Document, Embed, check_documents, check_embed, check_search
from .vectorstore import embed_all, embed_query

__all__ = ["PgVectorStore"]


class PgVectorStore(OwnedClientMixin):
    """Documents in a PostgreSQL table, searched by pgvector cosine distance;
    ``initialize_schema=False`` leaves the extension and the table to you."""

    def __init__(
        self,
        engine: Engine,
        embed: Embed,
        *,
        table_name: str = DEFAULT_TABLE_NAME,
        initialize_schema: bool = True,
    ) -> None:
        if not isinstance(engine, Engine) or engine.dialect.name != "postgresql":
            raise InvalidArgumentError("engine", "must be a PostgreSQL SQLAlchemy Engine")
        check_embed(embed)
        check_options(table_name, initialize_schema)
        self.engine = engine
        self.embed = embed
        self.table_name = table_name
        self.initialize_schema = initialize_schema
        self._table = engine.dialect.identifier_preparer.quote(table_name)

    @classmethod
    def from_url(cls, url: str, embed: Embed, **options: Any) -> PgVectorStore:
        """A store on the PostgreSQL at ``url`` (``postgresql+psycopg://...``) with an engine
        it owns (``close()`` disposes of it)."""
        engine = create_engine(check_url(url))

        def build() -> PgVectorStore:
            return cls(engine, embed, **options)

        return owning(engine, engine.dispose, build)

    def _create(self, conn: Connection, dim: int) -> None:
        conn.execute(sa.text(LOCK), {"t": self.table_name})
        conn.execute(sa.text(EXTENSION))
        conn.execute(sa.text(create_table(self._table, dim)))

    def add(self, documents: Sequence[Document]) -> None:
        """Embed ``documents`` (one ``embed`` call) and upsert them in one transaction."""
        docs = check_documents(documents)
        if not docs:
            return
        vectors = embed_all(self.embed, [d.text for d in docs])
        with self.engine.begin() as conn:
            if self.initialize_schema:
                self._create(conn, len(vectors[0]))
            conn.execute(sa.text(insert(self._table)), rows_of(docs, vectors))

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
        with self.engine.connect() as conn:
            exists = (conn.execute(sa.text(EXISTS), {"t": self._table})).scalar()
            if exists is None:
                return []  # nothing was ever added
            params = search_params(q, wanted, similarity_threshold, top_k)
            rows = (conn.execute(sa.text(search(self._table)), params)).all()
        return documents_of(rows)
