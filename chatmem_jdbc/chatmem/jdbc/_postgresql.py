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
- The append and the window read run on psycopg's own connection (``PsycopgFastPath``), with
  the SQL SQLAlchemy compiled once: SQLAlchemy's per-statement bookkeeping cost as much CPU
  as the rest of a turn. Everything else goes through SQLAlchemy.
- Retry: unique violations, serialization failures (40001) and deadlocks (40P01).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.types import UserDefinedType

from chatmem.core import Message

from ._codec import from_values, to_row
from ._dialects import FastPath, SqlDialect, upsert_returning
from ._errors import as_dbapi_error, translated
from ._statements import Compiled, Statements

if TYPE_CHECKING:
    from ._schema import Tables

DECODED = ("position", "message_type", "content", "payload", "created_at")
"""The columns the fast path's window read fetches: ``from_values``'s arguments, in order."""

RETRYABLE_SQLSTATES = frozenset({"40001", "40P01", "23505"})
"""serialization_failure, deadlock_detected, unique_violation."""


class ExactJson(UserDefinedType[str]):
    """PostgreSQL ``JSON`` bound and read as text we encode (no driver-side re-encoding)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "JSON"


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

    def fast_path(
        self, engine: Engine, tables: Tables, statements: Statements, reserve_sql: Any
    ) -> FastPath | None:
        if engine.dialect.driver != "psycopg":
            return None
        window = statements.window
        decoded = window.with_only_columns(*(window.selected_columns[n] for n in DECODED))
        return PsycopgFastPath.create(self, engine, decoded, build_append(tables, self.id_type()))

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


def build_append(tables: Tables, id_type: sa.types.TypeEngine[Any]) -> Any:
    """The one-statement append (see the module docstring); binds ``cid``, ``k``, ``now``,
    ``trim``, ``skip`` and ``batch`` (``batch_json``)."""
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
    columns = ["conversation_id", "position", "is_system", "message_type", "content"]
    return sa.insert(m).from_select([*columns, "payload", "created_at"], rows).add_cte(trimmed)


class PsycopgFastPath:
    """Window read and append on the pooled psycopg connection, in autocommit (one round
    trip each); driver errors go through the same translation as SQLAlchemy's."""

    def __init__(
        self, dialect: PostgresDialect, engine: Engine, window: Compiled, append: Compiled
    ) -> None:
        self.dialect, self.engine, self.window, self.append_sql = dialect, engine, window, append

    @classmethod
    def create(
        cls, dialect: PostgresDialect, engine: Engine, window: Any, append: Any
    ) -> PsycopgFastPath | None:
        """The fast path, or None when a statement needs SQLAlchemy's parameter processing."""
        compiled = Compiled(window, engine), Compiled(append, engine)
        if not all(c.plain for c in compiled):
            return None
        return cls(dialect, engine, *compiled)

    def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        with self._cursor(self.window, "reading the window") as cur:
            cur.execute(self.window.sql, self.window.params(cid=cid, n=non_system_limit))
            rows = cur.fetchall()
        return [from_values(*r) for r in rows]

    def append(self, cid: str, messages: Sequence[Message], trim_to: int | None) -> bool:
        rows = [to_row(cid, i, m) for i, m in enumerate(messages)]
        params = self.append_sql.params(**self.dialect.append_parameters(cid, rows, trim_to))
        try:
            with self._cursor(self.append_sql, "appending") as cur:
                cur.execute(self.append_sql.sql, params)
        except _LostRace:
            return False
        return True

    @contextmanager
    def _cursor(self, stmt: Compiled, what: str) -> Iterator[Any]:
        import psycopg

        try:
            raw = self.engine.raw_connection()
        except psycopg.Error as exc:  # the pool hands out the driver's connect error as is
            error = self._translated(exc, stmt, what, lost=True)
            raise error from error.__cause__
        try:
            conn = raw.driver_connection
            assert conn is not None
            conn.autocommit = True  # client-side in psycopg: no round trip
            try:
                with conn.cursor() as cur:
                    yield cur
            finally:
                if not conn.closed:
                    conn.autocommit = False
        except psycopg.Error as exc:
            lost = self.engine.dialect.is_disconnect(cast(Any, exc), raw.dbapi_connection, None)
            if lost:
                raw.invalidate(exc)
            error = self._translated(exc, stmt, what, lost=lost)
            raise error from error.__cause__
        finally:
            raw.close()

    def _translated(self, exc: Exception, stmt: Compiled, what: str, *, lost: bool) -> Exception:
        """The error SQLAlchemy would have raised, as chatmem's error (or ``_LostRace``)."""
        import psycopg

        wrapped = as_dbapi_error(exc, stmt.sql, self.engine, psycopg.Error, lost=lost)
        if not isinstance(wrapped, DBAPIError):
            return wrapped
        if stmt is self.append_sql and not lost and self.dialect.is_retryable(wrapped):
            return _LostRace()
        return translated(wrapped, what)


class _LostRace(Exception):
    """A concurrent writer won; the append is retried."""


def _sqlstate(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "sqlstate", None)
