"""PostgreSQL (psycopg 3): what SQLAlchemy Core does not abstract.

- Ids: ``VARCHAR(255) COLLATE "C"``: byte-wise comparison and order whatever the database's
  default collation, so listing pages and equality never depend on the locale.
- Payload: ``JSON``, not ``JSONB``. JSON keeps the text exactly as written, so metadata
  numbers keep their type; JSONB re-encodes numbers as ``numeric`` and returns ``1e16`` as
  the int ``10000000000000000`` and ``-0.0`` as ``0.0``. It is still validated JSON, queryable
  with ``->`` / ``->>`` and castable to ``jsonb`` in an index expression.
- Timestamps: ``TIMESTAMP(6) WITHOUT TIME ZONE`` holding UTC (microseconds kept).
- Append in one statement and one round trip: a data-modifying CTE upserts the conversation
  row (``INSERT .. ON CONFLICT DO UPDATE .. RETURNING next_position``, which also row-locks
  it until the statement commits), inserts the batch (``json_to_recordset`` of one JSON
  parameter: psycopg dumps one string faster than an array per column) at the positions it
  reserved, and, when the batch crosses a multiple of the window bound, deletes the
  non-system rows older than the newest ``trim_to``. Every writer
  locks the conversation row before touching message rows, so writers never deadlock.
- The append and the window read run on psycopg's own connection (``PsycopgFastPath`` in
  ``_native/_async/postgresql.py``, on psycopg's ``AsyncConnection`` in the async twin), with
  the SQL SQLAlchemy compiled once: SQLAlchemy's per-statement bookkeeping cost as much CPU
  as the rest of a turn. Everything else goes through SQLAlchemy.
- Retry: unique violations, serialization failures (40001) and deadlocks (40P01).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.types import UserDefinedType

from .dialects import SqlDialect, upsert_returning

if TYPE_CHECKING:
    from .._plan import Statements
    from .._schema import Tables

DECODED = ("position", "message_type", "content", "payload", "created_at")
"""The columns the fast path's window read fetches: ``from_values``'s arguments, in order."""

RETRYABLE_SQLSTATES = frozenset({"40001", "40P01", "23505"})
"""serialization_failure, deadlock_detected, unique_violation."""


class ExactJson(UserDefinedType[str]):
    """PostgreSQL ``JSON`` bound and read as text we encode (no driver-side re-encoding)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "JSON"

    def column_expression(self, colexpr: Any) -> Any:
        # Selected as text: psycopg would otherwise parse every payload itself (json.loads
        # per row, even for rows the repository's DecodeCache already holds).
        return sa.cast(colexpr, sa.Text)


class PostgresDialect(SqlDialect):
    """PostgreSQL 12+ through psycopg 3."""

    name = "postgresql"
    read_isolation = "AUTOCOMMIT"  # psycopg switches it client-side: no BEGIN/ROLLBACK trips

    def id_type(self) -> sa.types.TypeEngine[Any]:
        return sa.String(255, collation="C")

    def payload_type(self) -> sa.types.TypeEngine[Any]:
        return ExactJson()

    def timestamp_type(self) -> sa.types.TypeEngine[Any]:
        return pg.TIMESTAMP(precision=6)

    def is_retryable(self, exc: DBAPIError) -> bool:
        return _sqlstate(exc) in RETRYABLE_SQLSTATES  # only a unique violation or a deadlock

    def reserve_statement(self, conversations: sa.Table) -> Any | None:
        return upsert_returning(pg.insert, conversations)

    def append_statement(self, tables: Tables) -> Any | None:
        return build_append(tables, self.id_type())

    def append_parameters(
        self, cid: str, rows: Sequence[dict[str, Any]], trim_to: int | None
    ) -> dict[str, Any]:
        return {
            "cid": cid,
            "k": len(rows),
            "now": datetime.now(timezone.utc).replace(tzinfo=None),
            "trim": trim_to,
            "skip": None if trim_to is None else trim_to - 1,
            "batch": batch_json(rows),
        }


def fast_path_statements(dialect: PostgresDialect, tables: Tables, statements: Statements) -> Any:
    """``(window, last, append, append_untrimmed)`` for the psycopg fast path: the window
    read and the bounded newest-first read fetching only ``DECODED``, the payload as text
    (psycopg would parse a ``JSON`` column itself, and we decode the text once per distinct
    row through a ``DecodeCache``), and the one-statement append with and without its trim."""

    def decoded(stmt: Any) -> Any:
        columns = [stmt.selected_columns[n] for n in DECODED]
        columns[DECODED.index("payload")] = sa.cast(columns[3], sa.Text).label("payload")
        return stmt.with_only_columns(*columns)

    id_type = dialect.id_type()
    return (
        decoded(statements.window),
        decoded(statements.find_last),
        build_append(tables, id_type),
        build_append(tables, id_type, trimming=False),
    )


def batch_json(rows: Sequence[dict[str, Any]]) -> str:
    """The batch as one JSON array (one parameter instead of an array per column; the payload,
    already JSON, is embedded as is). Keys match ``BATCH`` below."""
    return (
        "["
        + ",".join(
            f'{{"i":{i},"s":{r["is_system"]},"t":"{r["message_type"]}",'
            f'"c":{json.dumps(r["content"], ensure_ascii=False)},"p":{r["payload"]},'
            f'"ts":"{r["created_at"].isoformat()}"}}'
            for i, r in enumerate(rows)
        )
        + "]"
    )


BATCH = (
    sa.column("i", sa.BigInteger),
    sa.column("s", sa.SmallInteger),
    sa.column("t", sa.String),
    sa.column("c", sa.Text),
    sa.column("p", ExactJson()),
    sa.column("ts", pg.TIMESTAMP(precision=6)),
)


def build_append(
    tables: Tables, id_type: sa.types.TypeEngine[Any], *, trimming: bool = True
) -> Any:
    """The one-statement append (see the module docstring); binds ``cid``, ``k``, ``now``,
    ``trim``, ``skip`` and ``batch`` (``batch_json``). With ``trimming=False`` (an append that
    never trims: ``keep_history``) the statement has no ``DELETE`` to plan and run."""
    m, c = tables.messages, tables.conversations
    cid = sa.bindparam("cid", type_=id_type)
    k = sa.bindparam("k", type_=sa.BigInteger)
    trim = sa.bindparam("trim", type_=sa.BigInteger)
    reserved = upsert_returning(pg.insert, c).cte("reserved")
    batch = (
        sa.func.json_to_recordset(sa.cast(sa.bindparam("batch"), ExactJson()))
        .table_valued(*BATCH)
        .render_derived(name="batch", with_types=True)
    )
    rows = sa.select(
        cid,
        reserved.c.next_position - k + batch.c.i,
        batch.c.s,
        batch.c.t,
        batch.c.c,
        batch.c.p,
        batch.c.ts,
    ).select_from(reserved.join(batch, sa.true()))
    columns = ["conversation_id", "position", "is_system", "message_type", "content"]
    insert = sa.insert(m).from_select([*columns, "payload", "created_at"], rows)
    if not trimming:
        return insert
    crossed = sa.exists(
        sa.select(reserved.c.next_position).where(
            reserved.c.next_position // trim != (reserved.c.next_position - k) // trim
        )
    )
    cut = (
        sa.select(m.c.position)
        .where(m.c.conversation_id == cid, m.c.is_system == 0)
        .order_by(m.c.position.desc())
        .offset(sa.bindparam("skip", type_=sa.BigInteger))
        .limit(1)
        .scalar_subquery()
    )
    trimmed = (
        sa.delete(m)
        .where(crossed, m.c.conversation_id == cid, m.c.is_system == 0, m.c.position < cut)
        .cte("trimmed")
    )
    return insert.add_cte(trimmed)


def _sqlstate(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "sqlstate", None)
