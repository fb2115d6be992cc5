"""The SQL shape of long-term memory records, and every statement on it, built once.

One row per record in ``<table>`` (default ``ai_memory_record``). The dedup rule is a
unique key on ``dedup_key`` = sha256(agent, user, normalised content) (a fixed 64-character
column keeps the key small on every database, whatever the id lengths), so concurrent
writers of one candidate store it once. Listing reads an index in listing order, so a page
costs the same at the first record and the 100,000th: ``(user_id, status, created_at)`` for
one user, ``(agent_id, status, created_at, id)`` for one agent, ``(status, created_at, id)``
for a review queue, ``(created_at, id)`` for everything; the expiry sweep reads ``(status,
expires_at)``. State entries live in ``<table>_state``, keyed by ``(namespace, key)``: a
create is an INSERT the key guards, a replace or delete at a version one conditional
statement.

Statements are plain SQLAlchemy Core objects with bound parameters, built from the table
with no I/O, so the two twins of the repository share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.schema import CreateIndex, CreateTable

from chatmem.core.longterm import (
    EXPIRED_REASON,
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    StateEntry,
)

from ._native.dialects import SqlDialect

DEFAULT_MEMORY_TABLE_NAME = "ai_memory_record"
_PENDING = MemoryStatus.PENDING.value
_REJECTED = MemoryStatus.REJECTED.value
_APPROVED = MemoryStatus.APPROVED.value


@dataclass(frozen=True)
class MemoryTables:
    """The record table, its indexes and the state table."""

    metadata: sa.MetaData
    records: sa.Table
    indexes: tuple[sa.Index, ...]
    state: sa.Table


def build_memory_tables(table_name: str, dialect: SqlDialect) -> MemoryTables:
    """Define the record table for ``dialect`` (id, text and timestamp types come from it)."""
    md = sa.MetaData()
    t = sa.Table(
        table_name,
        md,
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("agent_id", dialect.id_type(), nullable=False),
        sa.Column("user_id", dialect.id_type(), nullable=False),
        sa.Column("memory_type", sa.String(16), nullable=False),
        sa.Column("content", dialect.text_type(), nullable=False),
        sa.Column("dedup_key", sa.String(64), nullable=False),
        sa.Column("confidence", sa.Double(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", dialect.timestamp_type(), nullable=False),
        sa.Column("expires_at", dialect.timestamp_type(), nullable=True),
        sa.Column("reviewed_at", dialect.timestamp_type(), nullable=True),
        sa.Column("reviewer", dialect.text_type(), nullable=True),
        sa.Column("reason", dialect.text_type(), nullable=True),
        sa.Column("conversation_id", dialect.id_type(), nullable=True),
        sa.Column("message_position", sa.BigInteger, nullable=True),
        sa.Column("original_content", dialect.text_type(), nullable=True),
    )
    indexes = (
        sa.Index(f"{table_name}_dedup_uq", t.c.dedup_key, unique=True),
        sa.Index(f"{table_name}_user_idx", t.c.user_id, t.c.status, t.c.created_at),
        sa.Index(f"{table_name}_expiry_idx", t.c.status, t.c.expires_at),
        sa.Index(f"{table_name}_agent_idx", t.c.agent_id, t.c.status, t.c.created_at, t.c.id),
        sa.Index(f"{table_name}_status_idx", t.c.status, t.c.created_at, t.c.id),
        sa.Index(f"{table_name}_created_idx", t.c.created_at, t.c.id),
    )
    if dialect.name == "mssql":
        # A clustered key is limited to 900 bytes; keep the 36-byte id nonclustered like
        # the chat tables, for one storage layout per database.
        t.primary_key.dialect_kwargs["mssql_clustered"] = False
    state = sa.Table(
        f"{table_name}_state",
        md,
        # the id type compares exactly and orders by code point (PostgreSQL collation "C",
        # binary on MySQL, SQLite's BINARY), which ``list_state`` pages by
        sa.Column("namespace", dialect.id_type(), primary_key=True),
        sa.Column("key", dialect.id_type(), primary_key=True),
        sa.Column("value", dialect.text_type(), nullable=True),  # Oracle keeps "" as NULL
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("updated_at", dialect.timestamp_type(), nullable=False),
    )
    if dialect.name == "mssql":
        state.primary_key.dialect_kwargs["mssql_clustered"] = False  # two ids: > 900 bytes
    return MemoryTables(md, t, indexes, state)


def memory_schema_statements(
    tables: MemoryTables, dialect: Dialect, *, if_not_exists: bool
) -> list[str]:
    """The DDL for ``dialect`` as SQL text, in the order to run it."""
    out = [str(CreateTable(tables.records, if_not_exists=if_not_exists).compile(dialect=dialect))]
    out += [
        str(CreateIndex(i, if_not_exists=if_not_exists).compile(dialect=dialect))
        for i in tables.indexes
    ]
    out.append(str(CreateTable(tables.state, if_not_exists=if_not_exists).compile(dialect=dialect)))
    return [s.strip() for s in out]


def memory_schema_sql(url_or_dialect: str, *, table_name: str = DEFAULT_MEMORY_TABLE_NAME) -> str:
    """The record and state tables' DDL for a database named by URL or dialect name, as one script;
    needs no connection and no driver."""
    from chatmem.core.backend import sql_identifier

    from ._native.dialects import dialect_for

    name = url_or_dialect.split(":", 1)[0].split("+", 1)[0]
    name = {"postgres": "postgresql"}.get(name, name)
    sa_dialect = sa.make_url(f"{name}://").get_dialect()()
    tables = build_memory_tables(sql_identifier(table_name), dialect_for(sa_dialect.name))
    return ";\n\n".join(memory_schema_statements(tables, sa_dialect, if_not_exists=False)) + ";\n"


# -- rows ---------------------------------------------------------------------------------
def naive_utc(value: datetime | None) -> datetime | None:
    """Columns hold naive UTC with microseconds."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value


def aware_utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=timezone.utc)


def to_row(record: MemoryRecord, key: str) -> dict[str, Any]:
    """A record as column values."""
    return {
        "id": record.id,
        "agent_id": record.agent_id,
        "user_id": record.user_id,
        "memory_type": record.memory_type.value,
        "content": record.content,
        "dedup_key": key,
        "confidence": record.confidence,
        "status": record.status.value,
        "created_at": naive_utc(record.created_at),
        "expires_at": naive_utc(record.expires_at),
        "reviewed_at": naive_utc(record.reviewed_at),
        "reviewer": record.reviewer,
        "reason": record.reason,
        "conversation_id": record.conversation_id,
        "message_position": record.message_position,
        "original_content": record.original_content,
    }


def from_row(row: Any) -> MemoryRecord:
    """A record from a result mapping."""
    created = aware_utc(row["created_at"])
    assert created is not None
    position = row["message_position"]
    return MemoryRecord(
        id=row["id"],
        agent_id=row["agent_id"],
        user_id=row["user_id"],
        memory_type=MemoryType(row["memory_type"]),
        content=row["content"],
        confidence=float(row["confidence"]),
        status=MemoryStatus(row["status"]),
        created_at=created,
        expires_at=aware_utc(row["expires_at"]),
        reviewed_at=aware_utc(row["reviewed_at"]),
        reviewer=row["reviewer"],
        reason=row["reason"],
        conversation_id=row["conversation_id"],
        message_position=None if position is None else int(position),
        original_content=row["original_content"],
    )


# -- statements ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryStatements:
    """Statements that do not depend on call arguments (bound by name at execution)."""

    insert: Any
    by_id: Any
    by_key: Any
    delete: Any
    review: Any
    review_edit: Any
    expire: Any


def build_memory_statements(t: sa.Table) -> MemoryStatements:
    """Build the fixed statements once per repository."""
    c = t.c
    review = t.update().where(
        c.id == sa.bindparam("rid"),
        c.status == _PENDING,
        c.expires_at > sa.bindparam("now"),
    )
    decided: dict[str, Any] = {
        "status": sa.bindparam("decision"),
        "reviewed_at": sa.bindparam("now"),
        "reviewer": sa.bindparam("reviewer"),
        "reason": sa.bindparam("reason"),
    }
    return MemoryStatements(
        insert=t.insert(),
        by_id=sa.select(t).where(c.id == sa.bindparam("rid")),
        by_key=sa.select(t).where(c.dedup_key == sa.bindparam("key")),
        delete=t.delete().where(c.id == sa.bindparam("rid")),
        # The review is one conditional UPDATE: when reviewers race, the database lets
        # exactly one of them match "still pending and not expired".
        review=review.values(**decided),
        # an approval with the reviewer's wording keeps the proposed one beside it
        review_edit=review.values(
            **decided,
            content=sa.bindparam("new_content"),
            original_content=sa.bindparam("proposed"),
        ),
        expire=t.update()
        .where(c.status == _PENDING, c.expires_at <= sa.bindparam("now"))
        .values(status=_REJECTED, reviewed_at=c.expires_at, reviewer=None, reason=EXPIRED_REASON),
    )


def find_statement(
    t: sa.Table,
    *,
    agent_id: str | None,
    user_id: str | None,
    status: MemoryStatus | None,
    memory_type: MemoryType | None,
    limit: int,
    after: tuple[datetime, str] | None,
    now: datetime,
    sqlite: bool = False,
) -> Any:
    """A page of records by effective status at ``now`` (expired pending = rejected)."""
    c = t.c
    when = naive_utc(now)
    conditions: list[Any] = []
    if agent_id is not None:
        conditions.append(c.agent_id == agent_id)
    if user_id is not None:
        conditions.append(c.user_id == user_id)
    if memory_type is not None:
        conditions.append(c.memory_type == memory_type.value)
    if status is MemoryStatus.PENDING:
        # SQLite's planner (no statistics unless ANALYZE ran) would range-scan the expiry
        # index and sort every pending record; unary + keeps the term off that index there.
        due: sa.ColumnElement[Any] = c.expires_at
        if sqlite:
            due = sa.literal_column(f"+{c.expires_at.name}", c.expires_at.type)
        conditions += [c.status == _PENDING, due > when]
    elif status is MemoryStatus.REJECTED:
        conditions.append(
            sa.or_(c.status == _REJECTED, sa.and_(c.status == _PENDING, c.expires_at <= when))
        )
    elif status is MemoryStatus.APPROVED:
        conditions.append(c.status == _APPROVED)
    if after is not None:
        at, rid = naive_utc(after[0]), after[1]
        # The first term is redundant but lets every planner seek the index to the cursor.
        conditions += [
            c.created_at >= at,
            sa.or_(c.created_at > at, sa.and_(c.created_at == at, c.id > rid)),
        ]
    return sa.select(t).where(*conditions).order_by(c.created_at, c.id).limit(limit)


# -- state entries ------------------------------------------------------------------------
@dataclass(frozen=True)
class StateStatements:
    """The state table's statements (``ns``, ``k``, ``expected``, ``new_value``, ``now``)."""

    read: Any
    replace: Any
    delete: Any
    delete_at: Any


def build_state_statements(t: sa.Table) -> StateStatements:
    c = t.c
    entry = (c.namespace == sa.bindparam("ns"), c.key == sa.bindparam("k"))
    at = c.version == sa.bindparam("expected")
    return StateStatements(
        read=sa.select(t).where(*entry),
        replace=t.update()
        .where(*entry, at)
        .values(
            value=sa.bindparam("new_value"),
            version=c.version + 1,
            updated_at=sa.bindparam("now"),
        ),
        delete=t.delete().where(*entry),
        delete_at=t.delete().where(*entry, at),
    )


def state_page_statement(t: sa.Table, namespace: str, after: str | None, limit: int) -> Any:
    """Up to ``limit`` entries of ``namespace`` after key ``after``, by key."""
    conditions = [t.c.namespace == namespace]
    if after is not None:
        conditions.append(t.c.key > after)
    return sa.select(t).where(*conditions).order_by(t.c.key).limit(limit)


def state_row(entry: StateEntry) -> dict[str, Any]:
    return {
        "namespace": entry.namespace,
        "key": entry.key,
        "value": entry.value,
        "version": entry.version,
        "updated_at": naive_utc(entry.updated_at),
    }


def state_from_row(row: Any) -> StateEntry:
    updated = aware_utc(row["updated_at"])
    assert updated is not None
    return StateEntry(
        namespace=row["namespace"],
        key=row["key"],
        value=row["value"] or "",
        version=int(row["version"]),
        updated_at=updated,
    )
