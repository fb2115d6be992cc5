"""SQLite (the embedded default): its dialect, and its two hot operations on sqlite3 itself.

- Writers take the database lock up front (``BEGIN IMMEDIATE``), so a transaction never has
  to upgrade a read lock and die with ``SQLITE_BUSY``; readers are not blocked in WAL mode.
- Reserve in one statement (SQLite 3.35+): ``INSERT .. ON CONFLICT DO UPDATE .. RETURNING``.
- Fast path: on an embedded database the statements cost microseconds and SQLAlchemy's
  per-statement bookkeeping costs several times more, so a window append and a window read
  run the same SQL (compiled once by SQLAlchemy for this engine) directly on the pooled
  sqlite3 connection. Driver errors still go through ``translate_errors``.
- Retry: duplicate keys and "database is locked".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, NoReturn

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from chatmem.core import Message

from ._codec import from_values, to_row
from ._dialects import FastPath, SqlDialect, upsert_returning
from ._errors import as_dbapi_error, translated
from ._statements import Compiled, Statements

if TYPE_CHECKING:
    from ._schema import Tables


class SqliteDialect(SqlDialect):
    """SQLite 3.35+ through the standard library's sqlite3 (pysqlite)."""

    name = "sqlite"
    embedded = True

    @contextmanager
    def write(self, engine: Engine) -> Iterator[Connection]:
        with engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.exec_driver_sql("ROLLBACK")
                raise
            conn.exec_driver_sql("COMMIT")

    def lock_conversation(self, conn: Connection, conversations: sa.Table, cid: str) -> int | None:
        # BEGIN IMMEDIATE already holds the database's write lock: a plain read suffices.
        stmt = sa.select(conversations.c.next_position).where(
            conversations.c.conversation_id == cid
        )
        value = conn.execute(stmt).scalar_one_or_none()
        return None if value is None else int(value)

    def is_retryable(self, exc: DBAPIError) -> bool:
        # A concurrent writer won only on a unique/primary key or a lock; a CHECK, NOT NULL
        # or trigger failure is the caller's error and must surface, not be retried.
        message = str(exc.orig)
        return "UNIQUE constraint failed" in message or "database is locked" in message

    def fast_path(
        self, engine: Engine, tables: Tables, statements: Statements, reserve_sql: Any
    ) -> FastPath | None:
        if engine.dialect.driver != "pysqlite" or reserve_sql is None:
            return None
        return SqliteFastPath(engine, statements, reserve_sql)

    def reserve_statement(self, conversations: sa.Table) -> Any | None:
        if sqlite3.sqlite_version_info < (3, 35):
            return None
        from sqlalchemy.dialects.sqlite import insert

        return upsert_returning(insert, conversations)


class SqliteFastPath:
    """Append and window read on the raw sqlite3 connection (BEGIN IMMEDIATE for writes)."""

    def __init__(self, engine: Engine, sql: Statements, reserve: Any) -> None:
        self.engine = engine
        self.window = Compiled(sql.window, engine)
        self.reserve = Compiled(reserve, engine)
        self.insert = Compiled(sql.insert_messages, engine)
        self.trim_cut = Compiled(sql.trim_cut, engine)
        self.trim = Compiled(sql.delete_non_system_below, engine)

    def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        raw = self.engine.raw_connection()
        try:
            args = self.window.args(cid=cid, n=non_system_limit)
            rows = raw.cursor().execute(self.window.sql, args).fetchall()
        except sqlite3.Error as exc:
            self._raise(exc, self.window, "reading the window")
        finally:
            raw.close()
        return [from_values(r[1], r[3], r[4], r[5], r[6]) for r in rows]

    def append(self, cid: str, messages: Sequence[Message], trim_to: int | None) -> bool:
        """Append atomically; False when the database was busy (the caller retries)."""
        raw = self.engine.raw_connection()
        conn: Any = raw.driver_connection
        previous = conn.isolation_level
        conn.isolation_level = None
        try:
            cur = conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                self._append(cur, cid, messages, trim_to)
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            return True
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return False
            self._raise(exc, self.insert, "appending")
        except sqlite3.Error as exc:
            self._raise(exc, self.insert, "appending")
        finally:
            conn.isolation_level = previous
            raw.close()

    def _append(self, cur: Any, cid: str, messages: Sequence[Message], trim_to: int | None) -> None:
        now = _text(datetime.now(timezone.utc))
        k = len(messages)
        row = cur.execute(self.reserve.sql, self.reserve.args(cid=cid, k=k, now=now))
        start = int(row.fetchone()[0]) - k
        rows = []
        for i, m in enumerate(messages):
            values = to_row(cid, start + i, m)
            values["created_at"] = _text(values["created_at"])
            rows.append(self.insert.args(**values))
        cur.executemany(self.insert.sql, rows)
        if trim_to is not None and (start + k) // trim_to != start // trim_to:
            skip = self.trim_cut.args(cid=cid, skip=trim_to - 1)
            cut = cur.execute(self.trim_cut.sql, skip).fetchone()
            if cut is not None:
                cur.execute(self.trim.sql, self.trim.args(cid=cid, below=cut[0]))

    def _raise(self, exc: sqlite3.Error, stmt: Compiled, what: str) -> NoReturn:
        """Raise the chatmem error SQLAlchemy's path raises for the same sqlite3 error."""
        error = translated(as_dbapi_error(exc, stmt.sql, self.engine, sqlite3.Error), what)
        raise error from error.__cause__


def _text(ts: datetime) -> str:
    """SQLAlchemy's SQLite DateTime text form (always with microseconds)."""
    return f"{ts.replace(tzinfo=None):%Y-%m-%d %H:%M:%S.%f}"
