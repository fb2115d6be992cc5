"""The pure half of the pgvector stores: option checks and the statements (every value, vector
and filter a bound parameter; the table name validated and quoted). No I/O
(``_async/pgvector_vectorstore.py`` and its generated sync twin run them);
``pgvector_vectorstore`` is the public module."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.core import InvalidArgumentError

from ._vectors import Document

DEFAULT_TABLE_NAME = "chatmem_vectors"
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")

LOCK = "SELECT pg_advisory_xact_lock(hashtext(:t))"
EXISTS = "SELECT to_regclass(:t)"
EXTENSION = "CREATE EXTENSION IF NOT EXISTS vector"
_CREATE = (
    "CREATE TABLE IF NOT EXISTS {table} (id text PRIMARY KEY,"
    " text text NOT NULL, metadata jsonb NOT NULL, embedding vector({dim}))"
)
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


def check_options(table_name: object, initialize_schema: object) -> None:
    """Validate the constructor's options (InvalidArgumentError naming the bad one)."""
    if not isinstance(table_name, str) or not _TABLE.match(table_name):
        raise InvalidArgumentError("table_name", f"{table_name!r} is not a valid table name")
    if not isinstance(initialize_schema, bool):
        raise InvalidArgumentError("initialize_schema", "must be a bool")


def check_url(url: object) -> str:
    """A ``postgresql...`` URL (InvalidArgumentError naming ``url`` otherwise)."""
    if not isinstance(url, str) or not url.startswith("postgresql"):
        raise InvalidArgumentError("url", f"{url!r} is not a postgresql:// URL")
    return url


def vector_literal(v: Sequence[float]) -> str:
    """A vector as pgvector's text input (``[1.0,2.0]``)."""
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


def create_table(table: str, dim: int) -> str:
    """The table of ``table`` (quoted) for vectors of length ``dim``."""
    return _CREATE.replace("{table}", table).replace("{dim}", str(int(dim)))


def insert(table: str) -> str:
    """The upsert of one document (an executemany over ``rows_of``)."""
    return _INSERT.replace("{table}", table)


def search(table: str) -> str:
    """The search: cosine distance and JSON containment, computed in the database."""
    return _SEARCH.replace("{table}", table)


def rows_of(docs: Sequence[Document], vectors: Sequence[Sequence[float]]) -> list[dict[str, Any]]:
    """The parameters of ``insert`` for each document."""
    return [
        {"id": d.id, "text": d.text, "m": json.dumps(dict(d.metadata)), "v": vector_literal(v)}
        for d, v in zip(docs, vectors, strict=True)
    ]


def search_params(
    q: Sequence[float], wanted: Mapping[str, str], threshold: float, top_k: int
) -> dict[str, Any]:
    """The parameters of ``search``."""
    return {"q": vector_literal(q), "f": json.dumps(wanted), "min": threshold, "k": top_k}


def documents_of(rows: Sequence[Any]) -> list[Document]:
    """The documents of ``search``'s rows, each with its score."""
    return [
        Document(text, dict(meta), str(id_), score=max(float(score or 0.0), 0.0))
        for id_, text, meta, score in rows
    ]
