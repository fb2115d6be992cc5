"""The one place the SQL storage shape is defined, as SQLAlchemy Core objects.

``<table>`` holds one row per message: ``(conversation_id, position)`` is the key; the
``(conversation_id, is_system, position)`` index serves both halves of a window read (every
system message, and the last N others) as index ranges. ``<table>_conversation`` holds one
row per conversation with the next position: writers lock it, listing pages through it.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateIndex, CreateTable

from chatmem.core.backend import retry

from ._native.dialects import SqlDialect


@dataclass(frozen=True)
class Tables:
    """The tables and index of one repository."""

    metadata: sa.MetaData
    messages: sa.Table
    conversations: sa.Table
    window_index: sa.Index


def build_tables(table_name: str, dialect: SqlDialect) -> Tables:
    """Define the tables for ``dialect`` (column types and collations differ per dialect)."""
    md = sa.MetaData()
    conversations = sa.Table(
        f"{table_name}_conversation",
        md,
        sa.Column("conversation_id", dialect.id_type(), primary_key=True),
        sa.Column("next_position", sa.BigInteger, nullable=False),
        sa.Column("updated_at", dialect.timestamp_type(), nullable=False),
    )
    messages = sa.Table(
        table_name,
        md,
        sa.Column("conversation_id", dialect.id_type(), primary_key=True),
        sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("is_system", sa.SmallInteger, nullable=False),
        sa.Column("message_type", sa.String(16), nullable=False),
        sa.Column("content", dialect.text_type(), nullable=True),
        sa.Column("payload", dialect.payload_type(), nullable=False),
        sa.Column("created_at", dialect.timestamp_type(), nullable=False),
    )
    window_index = sa.Index(
        f"{table_name}_window_idx",
        messages.c.conversation_id,
        messages.c.is_system,
        messages.c.position,
    )
    tables = Tables(md, messages, conversations, window_index)
    dialect.adapt_tables(tables)
    return tables


def schema_statements(tables: Tables, dialect: Dialect, *, if_not_exists: bool) -> list[str]:
    """The DDL for ``dialect`` as SQL text, in the order to run it."""
    return [
        str(
            CreateTable(tables.conversations, if_not_exists=if_not_exists).compile(dialect=dialect)
        ).strip(),
        str(
            CreateTable(tables.messages, if_not_exists=if_not_exists).compile(dialect=dialect)
        ).strip(),
        str(
            CreateIndex(tables.window_index, if_not_exists=if_not_exists).compile(dialect=dialect)
        ).strip(),
    ]


def schema_sql(url_or_dialect: str, *, table_name: str = "ai_chat_memory") -> str:
    """The DDL for a database named by URL (``postgresql://...``) or dialect name, as one
    SQL script; needs no connection and no driver."""
    from chatmem.core.backend import sql_identifier

    from ._native.dialects import dialect_for

    name = url_or_dialect.split(":", 1)[0].split("+", 1)[0]
    name = {"postgres": "postgresql"}.get(name, name)
    sa_dialect = sa.make_url(f"{name}://").get_dialect()()
    tables = build_tables(sql_identifier(table_name), dialect_for(sa_dialect.name))
    return ";\n\n".join(schema_statements(tables, sa_dialect, if_not_exists=False)) + ";\n"


def create_tables(metadata: sa.MetaData, engine: Engine, what: str) -> None:
    """``CREATE`` every table and index of ``metadata`` that is missing. Processes racing to
    do it may see "already exists" from the loser's statement: that one is re-run (its
    check then finds the tables), any other error is raised."""

    def attempt() -> bool:
        metadata.create_all(engine, checkfirst=True)
        return True

    retry(attempt, attempts=5, what=what, retry_on=is_create_race)


def is_create_race(exc: Exception) -> bool:
    """True when a ``CREATE`` failed because a concurrent process created the object first."""
    return isinstance(exc, DBAPIError) and "exist" in str(exc.orig).lower()
