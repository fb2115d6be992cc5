# Generated from chatmem_jdbc/chatmem/jdbc/_async/transactions.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""Running the repository's statements: a read on one connection, a write in one
transaction that locks the conversation's row first, a lost race rolled back and retried, and
the row-level steps the chatmem layout's writes are made of; a mixin of the repository."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timezone
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from chatmem.core import Message
from chatmem.core.backend import SchemaCheck, retry

from .._codec import to_row
from .._errors import translate_errors
from .._native.dialects import SqlDialect
from .._plan import Statements
from .._schema import Tables
from .engine import to_the_end

T = TypeVar("T")


class JdbcTransactions:
    """Reads, write transactions and their retries over ``engine``, for both table layouts."""

    engine: Engine
    dialect: SqlDialect
    tables: Tables
    _sql: Statements
    _lock_sql: Any
    _reserve_sql: Any
    _serial: AbstractContextManager[Any]
    _schema_check: SchemaCheck

    def _lock_or_create(self, conn: Connection, cid: str, next_position: int) -> int | None:
        """Lock the conversation row and return its next position, or create it with
        ``next_position`` and return None (a duplicate-key race retries the transaction)."""
        result = conn.execute(self._lock_sql, {"cid": cid})
        current = result.scalar_one_or_none()
        if current is not None:
            return int(current)
        conn.execute(
            sa.insert(self.tables.conversations).values(
                conversation_id=cid, next_position=next_position, updated_at=now()
            )
        )
        return None

    def _reserve(self, conn: Connection, cid: str, count: int) -> int:
        """Reserve ``count`` positions under the row lock; the first one reserved."""
        if self._reserve_sql is not None:
            params = {"cid": cid, "k": count, "now": now()}
            result = conn.execute(self._reserve_sql, params)
            return self.dialect.reserved_position(result) - count
        current = self._lock_or_create(conn, cid, count)
        if current is None:
            return 0
        c = self.tables.conversations
        conn.execute(
            sa.update(c)
            .where(c.c.conversation_id == cid)
            .values(next_position=current + count, updated_at=now())
        )
        return current

    def _insert(self, conn: Connection, cid: str, start: int, messages: Sequence[Message]) -> None:
        rows = [to_row(cid, start + i, msg) for i, msg in enumerate(messages)]
        conn.execute(self._sql.insert_messages, rows)

    def _trim(self, conn: Connection, cid: str, keep: int) -> None:
        """Drop non-system rows older than the newest ``keep`` (they can never be shown)."""
        result = conn.execute(self._sql.trim_cut, {"cid": cid, "skip": keep - 1})
        cut = result.scalar_one_or_none()
        if cut is not None:
            conn.execute(self._sql.delete_non_system_below, {"cid": cid, "below": cut})

    def _drop_if_empty(self, conn: Connection, cid: str) -> None:
        result = conn.execute(self._sql.any_left, {"cid": cid})
        if result.first() is None:
            conn.execute(self._sql.delete_conversation, {"cid": cid})

    def _read(self, fn: Callable[[Connection], T], what: str) -> T:
        self._schema_check()
        return to_the_end(self._run_read(fn, what))

    def _run_read(self, fn: Callable[[Connection], T], what: str) -> T:
        with translate_errors(what), self._serial, self.engine.connect() as conn:
            if self.dialect.read_isolation is not None:
                conn.execution_options(isolation_level=self.dialect.read_isolation)
            return fn(conn)

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A connection inside a write transaction, committed on success: the dialect's
        ``write_begin`` on an autocommit connection (SQLite: BEGIN IMMEDIATE), else the
        driver's own BEGIN."""
        begin = self.dialect.write_begin
        if begin is None:
            with self.engine.begin() as conn:
                yield conn
            return
        with self.engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql(begin)
            try:
                yield conn
            except BaseException:
                if not conn.invalidated:  # SQLAlchemy drops a connection a cancel cut off
                    conn.exec_driver_sql("ROLLBACK")
                raise
            conn.exec_driver_sql("COMMIT")

    def _write(self, fn: Callable[[Connection], None], what: str) -> None:
        """Run ``fn`` in a write transaction, re-run when it lost a race."""
        self._schema_check()

        def attempt() -> bool:
            with self._serial, self._transaction() as conn:
                fn(conn)
            return True

        self._retried(attempt, what)

    def _write_statement(self, stmt: Any, params: dict[str, Any], what: str) -> None:
        """Run one self-contained write statement in autocommit mode (no BEGIN or COMMIT
        round trips); re-run when it lost a race."""
        self._schema_check()

        def attempt() -> bool:
            with self._serial, self.engine.connect() as conn:
                auto = conn.execution_options(isolation_level="AUTOCOMMIT")
                auto.execute(stmt, params)
            return True

        self._retried(attempt, what)

    def _retried(self, attempt: Callable[[], bool], what: str) -> None:
        """Core's retry on the dialect's lost-race errors (duplicate key, deadlock...)."""

        def lost_race(exc: Exception) -> bool:
            return isinstance(exc, DBAPIError) and self.dialect.is_retryable(exc)

        with translate_errors(what):
            to_the_end(retry(attempt, what=what, retry_on=lost_race))


def now() -> datetime:
    """The naive UTC timestamp the tables hold."""
    return datetime.now(timezone.utc).replace(tzinfo=None)
