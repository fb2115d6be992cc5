"""Running the repository's statements: a read on one connection, a write in one
transaction that locks the conversation's row first, a lost race rolled back and retried, and
the row-level steps the chatmem layout's writes are made of; a mixin of the repository."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime, timezone
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chatmem.core import Message
from chatmem.core.backend import AsyncSchemaCheck, async_retry

from .._codec import to_row
from .._errors import translate_errors
from .._native.dialects import SqlDialect
from .._plan import Statements
from .._schema import Tables
from .engine import to_the_end

T = TypeVar("T")


class AsyncJdbcTransactions:
    """Reads, write transactions and their retries over ``engine``, for both table layouts."""

    engine: AsyncEngine
    dialect: SqlDialect
    tables: Tables
    _sql: Statements
    _lock_sql: Any
    _reserve_sql: Any
    _serial: AbstractAsyncContextManager[Any]
    _schema_check: AsyncSchemaCheck

    async def _lock_or_create(
        self, conn: AsyncConnection, cid: str, next_position: int
    ) -> int | None:
        """Lock the conversation row and return its next position, or create it with
        ``next_position`` and return None (a duplicate-key race retries the transaction)."""
        result = await conn.execute(self._lock_sql, {"cid": cid})
        current = result.scalar_one_or_none()
        if current is not None:
            return int(current)
        await conn.execute(
            sa.insert(self.tables.conversations).values(
                conversation_id=cid, next_position=next_position, updated_at=now()
            )
        )
        return None

    async def _reserve(self, conn: AsyncConnection, cid: str, count: int) -> int:
        """Reserve ``count`` positions under the row lock; the first one reserved."""
        if self._reserve_sql is not None:
            params = {"cid": cid, "k": count, "now": now()}
            result = await conn.execute(self._reserve_sql, params)
            return self.dialect.reserved_position(result) - count
        current = await self._lock_or_create(conn, cid, count)
        if current is None:
            return 0
        c = self.tables.conversations
        await conn.execute(
            sa.update(c)
            .where(c.c.conversation_id == cid)
            .values(next_position=current + count, updated_at=now())
        )
        return current

    async def _insert(
        self, conn: AsyncConnection, cid: str, start: int, messages: Sequence[Message]
    ) -> None:
        rows = [to_row(cid, start + i, msg) for i, msg in enumerate(messages)]
        await conn.execute(self._sql.insert_messages, rows)

    async def _trim(self, conn: AsyncConnection, cid: str, keep: int) -> None:
        """Drop non-system rows older than the newest ``keep`` (they can never be shown)."""
        result = await conn.execute(self._sql.trim_cut, {"cid": cid, "skip": keep - 1})
        cut = result.scalar_one_or_none()
        if cut is not None:
            await conn.execute(self._sql.delete_non_system_below, {"cid": cid, "below": cut})

    async def _drop_if_empty(self, conn: AsyncConnection, cid: str) -> None:
        result = await conn.execute(self._sql.any_left, {"cid": cid})
        if result.first() is None:
            await conn.execute(self._sql.delete_conversation, {"cid": cid})

    async def _read(self, fn: Callable[[AsyncConnection], Awaitable[T]], what: str) -> T:
        await self._schema_check()
        return await to_the_end(self._run_read(fn, what))

    async def _run_read(self, fn: Callable[[AsyncConnection], Awaitable[T]], what: str) -> T:
        with translate_errors(what):
            async with self._serial, self.engine.connect() as conn:
                if self.dialect.read_isolation is not None:
                    await conn.execution_options(isolation_level=self.dialect.read_isolation)
                return await fn(conn)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection]:
        """A connection inside a write transaction, committed on success: the dialect's
        ``write_begin`` on an autocommit connection (SQLite: BEGIN IMMEDIATE), else the
        driver's own BEGIN."""
        begin = self.dialect.write_begin
        if begin is None:
            async with self.engine.begin() as conn:
                yield conn
            return
        async with self.engine.connect() as raw:
            conn = await raw.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql(begin)
            try:
                yield conn
            except BaseException:
                if not conn.invalidated:  # SQLAlchemy drops a connection a cancel cut off
                    await conn.exec_driver_sql("ROLLBACK")
                raise
            await conn.exec_driver_sql("COMMIT")

    async def _write(self, fn: Callable[[AsyncConnection], Awaitable[None]], what: str) -> None:
        """Run ``fn`` in a write transaction, re-run when it lost a race."""
        await self._schema_check()

        async def attempt() -> bool:
            async with self._serial, self._transaction() as conn:
                await fn(conn)
            return True

        await self._retried(attempt, what)

    async def _write_statement(self, stmt: Any, params: dict[str, Any], what: str) -> None:
        """Run one self-contained write statement in autocommit mode (no BEGIN or COMMIT
        round trips); re-run when it lost a race."""
        await self._schema_check()

        async def attempt() -> bool:
            async with self._serial, self.engine.connect() as conn:
                auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await auto.execute(stmt, params)
            return True

        await self._retried(attempt, what)

    async def _retried(self, attempt: Callable[[], Awaitable[bool]], what: str) -> None:
        """Core's retry on the dialect's lost-race errors (duplicate key, deadlock...)."""

        def lost_race(exc: Exception) -> bool:
            return isinstance(exc, DBAPIError) and self.dialect.is_retryable(exc)

        with translate_errors(what):
            await to_the_end(async_retry(attempt, what=what, retry_on=lost_race))


def now() -> datetime:
    """The naive UTC timestamp the tables hold."""
    return datetime.now(timezone.utc).replace(tzinfo=None)
