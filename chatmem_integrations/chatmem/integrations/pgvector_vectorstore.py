"""``PgVectorStore``: the advisor's ``VectorStore`` in PostgreSQL with the pgvector extension.

One table (``table_name``): ``id`` text key, ``text``, ``metadata`` jsonb and an
``embedding vector(n)``, created with the extension on the first ``add`` when the vector
length is known (``initialize_schema=False`` leaves both to you). Search orders by cosine
distance (``<=>``) in the database; the filter is JSON containment (``metadata @> filter``)
and every value, vector and filter is a bound parameter; the table name is validated and
quoted. Needs ``pip install "chatmem[postgres]"`` and a PostgreSQL with pgvector.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.core import InvalidArgumentError
from chatmem.core.backend import require

require("sqlalchemy", "postgres")

import sqlalchemy as sa  # noqa: E402

from .vectorstore import (  # noqa: E402
    Document,
    Embed,
    check_documents,
    check_search,
    embed_all,
    embed_query,
)

__all__ = ["DEFAULT_TABLE_NAME", "PgVectorStore"]

DEFAULT_TABLE_NAME = "chatmem_vectors"
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")


_INSERT = (
    "INSERT INTO {table} (id, text, metadata, embedding)"
    " VALUES (:id, :text, CAST(:m AS jsonb), CAST(:v AS vector))"
    " ON CONFLICT (id) DO UPDATE SET text = EXCLUDED.text,"
    " metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding"
)
_SEARCH = (
    "SELECT id, text, metadata, 1 - (embedding <=> CAST(:q AS vector)) AS score"
    " FROM {table} WHERE metadata @> CAST(:f AS jsonb)"
    " AND 1 - (embedding <=> CAST(:q AS vector)) >= :min"
    " ORDER BY embedding <=> CAST(:q AS vector), id LIMIT :k"
)


def _vector(v: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


class PgVectorStore:
    """Documents in a PostgreSQL table, searched by pgvector cosine distance."""

    def __init__(
        self,
        engine: sa.engine.Engine,
        embed: Embed,
        *,
        table_name: str = DEFAULT_TABLE_NAME,
        initialize_schema: bool = True,
    ) -> None:
        if not isinstance(engine, sa.engine.Engine) or engine.dialect.name != "postgresql":
            raise InvalidArgumentError("engine", "must be a PostgreSQL SQLAlchemy Engine")
        if not callable(embed):
            raise InvalidArgumentError("embed", "must be a callable texts -> vectors")
        if not isinstance(table_name, str) or not _TABLE.match(table_name):
            raise InvalidArgumentError("table_name", f"{table_name!r} is not a valid table name")
        if not isinstance(initialize_schema, bool):
            raise InvalidArgumentError("initialize_schema", "must be a bool")
        self.engine = engine
        self.embed = embed
        self.table_name = table_name
        self.initialize_schema = initialize_schema
        self._table = engine.dialect.identifier_preparer.quote(table_name)

    @classmethod
    def from_url(cls, url: str, embed: Embed, **options: Any) -> PgVectorStore:
        """A store on the PostgreSQL at ``url`` (``postgresql+psycopg://...``)."""
        if not isinstance(url, str) or not url.startswith("postgresql"):
            raise InvalidArgumentError("url", f"{url!r} is not a postgresql:// URL")
        return cls(sa.create_engine(url), embed, **options)

    def _create(self, conn: sa.engine.Connection, dim: int) -> None:
        conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
        conn.execute(
            sa.text(
                f"CREATE TABLE IF NOT EXISTS {self._table} (id text PRIMARY KEY,"
                f" text text NOT NULL, metadata jsonb NOT NULL, embedding vector({int(dim)}))"
            )
        )

    def add(self, documents: Sequence[Document]) -> None:
        """Embed ``documents`` (one ``embed`` call) and upsert them in one transaction."""
        docs = check_documents(documents)
        if not docs:
            return
        vectors = embed_all(self.embed, [d.text for d in docs])
        rows = [
            {"id": d.id, "text": d.text, "m": json.dumps(dict(d.metadata)), "v": _vector(v)}
            for d, v in zip(docs, vectors, strict=True)
        ]
        with self.engine.begin() as conn:
            if self.initialize_schema:
                conn.execute(
                    sa.text("SELECT pg_advisory_xact_lock(hashtext(:t))"), {"t": self.table_name}
                )
                self._create(conn, len(vectors[0]))
            conn.execute(sa.text(_INSERT.replace("{table}", self._table)), rows)

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
            exists = conn.execute(sa.text("SELECT to_regclass(:t)"), {"t": self._table}).scalar()
            if exists is None:
                return []  # nothing was ever added
            rows = conn.execute(
                sa.text(_SEARCH.replace("{table}", self._table)),
                {"q": _vector(q), "f": json.dumps(wanted), "min": similarity_threshold, "k": top_k},
            ).all()
        return [
            Document(text, dict(meta), str(id_), score=max(float(score or 0.0), 0.0))
            for id_, text, meta, score in rows
        ]
