"""MySQL's and MariaDB's fast path (PyMySQL, or aiomysql), on engines ``make_engine`` or
``make_async_engine`` made (their connections allow multi-statement queries): the statements
and their ``COMMIT`` go as one query, so a read or an append is one round trip instead of two
or three (see ``_native/mysql.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from operator import itemgetter
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from chatmem.core import Message
from chatmem.core.backend import DecodeCache

from ..._codec import to_row
from ..._connect import SERVER_STATUS_IN_TRANS, TRANSACTION_ENDED, idle_seconds_of
from ..._plan import Compiled, Statements
from ..._schema import Tables
from ..dialects import SqlDialect
from ..mysql import mysql_read_statements
from .connections import LostRace, decode_row, fast_path_error, kept_connection, pool_call

ASYNC = True

MAX_ONE_TRIP_BATCH = 16
"""The largest append the MySQL fast path sends as one query (one compiled INSERT per batch
size is kept); bigger batches, imports mostly, take the transaction path."""


class _KeptConnectionLost(Exception):
    """A read found the kept connection dead (``error`` is what the caller would raise)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class AsyncMysqlFastPath:
    """Window read, bounded read and untrimmed append on MySQL/MariaDB, one round trip each.

    They run on the engine's kept connection in autocommit (no pool checkout; a pooled one
    when it is busy). The append is one multi-statement transaction: it reserves its
    positions (the upsert that sets ``LAST_INSERT_ID`` to the new ``next_position``,
    row-locking the conversation) and inserts the batch at ``LAST_INSERT_ID() - k + i``
    between ``START TRANSACTION`` and ``COMMIT``; a read is its ``SELECT`` alone. On a pooled
    connection (no autocommit) both end in ``COMMIT``, so it goes back to the pool with no
    transaction and no ``ROLLBACK`` round trip. Values are escaped by the driver, as for
    every other statement. A failing statement stops the rest: the transaction is rolled
    back, and lost races (duplicate key, deadlock, lock wait) are retried by the caller.
    """

    def __init__(
        self,
        dialect: SqlDialect,
        engine: AsyncEngine,
        tables: Tables,
        sql: Statements,
        reserve: Any,
    ) -> None:
        self.dialect, self.engine, self.tables = dialect, engine, tables
        if ASYNC:
            self.pool_owner: Any = engine.sync_engine
        else:
            self.pool_owner = engine
        self.kept = kept_connection(engine, max_idle=idle_seconds_of(engine))
        window, last = mysql_read_statements(tables)
        self.window = Compiled(window, engine.dialect)
        self.last = Compiled(last, engine.dialect)
        self.reserve = Compiled(reserve, engine.dialect)
        self.positional = bool(engine.dialect.positional)
        self._inserts: dict[int, Compiled] = {}
        self.cache = DecodeCache()

    def _bind(
        self, parts: Sequence[tuple[Compiled, dict[str, Any]]], *, autocommit: bool, write: bool
    ) -> tuple[str, Any]:
        """One query of the statements in ``parts`` and its parameters (positional or named,
        as the driver's paramstyle wants). On the kept connection (autocommit) a read is its
        statements alone and a write is wrapped in START TRANSACTION .. COMMIT; on a pooled
        one (no autocommit) both end in COMMIT, so it returns to the pool with none open."""
        query = ";".join(stmt.sql for stmt, _ in parts)
        if not autocommit:
            query += ";COMMIT"
        elif write:
            query = f"START TRANSACTION;{query};COMMIT"
        if self.positional:
            return query, tuple(v for stmt, values in parts for v in stmt.args(**values))
        named: dict[str, Any] = {}
        for stmt, values in parts:
            named.update(stmt.params(**values))
        return query, named

    async def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        values = {"cid": cid.encode("utf-8"), "n": non_system_limit}
        rows = await self._read(self.window, values, "reading the window")
        rows.sort(key=itemgetter(0))  # the UNION's rows come back in no set order
        return self.cache.get_many(rows, decode_row)

    async def read_last(self, cid: str, n: int) -> list[Message]:
        rows = await self._read(self.last, {"cid": cid.encode("utf-8"), "n": n}, "reading")
        return self.cache.get_many(rows, decode_row)

    async def _read(self, stmt: Compiled, values: dict[str, Any], what: str) -> list[Any]:
        """One read; read again (once, on a fresh connection) when the kept connection turned
        out dead: it may have sat through a server restart that the pool's checks would have
        caught, and a read is safe to repeat."""
        for again in (False, True):
            try:
                async with self._cursor([(stmt, values)], what, write=False) as (cur, q, p):
                    await cur.execute(q, p)
                    rows = list(await cur.fetchall())
                    while await cur.nextset():
                        pass
                return rows
            except _KeptConnectionLost as lost:
                if again:
                    raise lost.error from lost.error.__cause__
        raise AssertionError("unreachable")

    def can_append(self, count: int, trim_to: int | None) -> bool:
        return trim_to is None and count <= MAX_ONE_TRIP_BATCH

    def remember(self, cid: str, start: int, messages: Sequence[Message]) -> None:
        pass  # not cached: its reads' row form (driver-parsed types) is not checked to match

    def _insert(self, k: int) -> Compiled:
        stmt = self._inserts.get(k)
        if stmt is None:
            back = [sa.bindparam(f"b{i}", type_=sa.BigInteger) for i in range(k)]
            rows = [
                {
                    "conversation_id": sa.bindparam("cid"),
                    "position": sa.func.last_insert_id() - back[i],
                    "is_system": sa.bindparam(f"s{i}"),
                    "message_type": sa.bindparam(f"t{i}"),
                    "content": sa.bindparam(f"c{i}"),
                    "payload": sa.bindparam(f"p{i}"),
                    "created_at": sa.bindparam(f"ts{i}"),
                }
                for i in range(k)
            ]
            insert = sa.insert(self.tables.messages).values(rows)
            stmt = self._inserts[k] = Compiled(insert, self.engine.dialect)
        return stmt

    async def append(self, cid: str, messages: Sequence[Message], trim_to: int | None) -> bool:
        return await self._append(cid, messages, None) is not None

    async def append_and_read_window(
        self, cid: str, messages: Sequence[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message] | None:
        """The append's query with the window read before its COMMIT: the read's snapshot
        starts after the reserve took the conversation row's lock, so it holds every append
        committed before this one, and this one."""
        rows = await self._append(cid, messages, non_system_limit)
        if rows is None:
            return None
        rows.sort(key=itemgetter(0))
        return self.cache.get_many(rows, decode_row)

    async def _append(
        self, cid: str, messages: Sequence[Message], limit: int | None
    ) -> list[Any] | None:
        """One query: reserve, insert, the window read when ``limit`` is set, COMMIT. The
        window's rows (``[]`` without ``limit``), or None when it lost a race."""
        k, key = len(messages), cid.encode("utf-8")
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        row: dict[str, Any] = {"cid": key}
        for i, m in enumerate(messages):
            r = to_row(cid, i, m)
            row[f"b{i}"], row[f"s{i}"], row[f"t{i}"] = k - i, r["is_system"], r["message_type"]
            row[f"c{i}"], row[f"p{i}"], row[f"ts{i}"] = r["content"], r["payload"], r["created_at"]
        parts = [(self.reserve, {"cid": key, "k": k, "now": now}), (self._insert(k), row)]
        if limit is not None:
            parts.append((self.window, {"cid": key, "n": limit}))
        rows: list[Any] = []
        try:
            async with self._cursor(parts, "appending", write=True) as (cur, query, params):
                await cur.execute(query, params)
                while True:
                    if cur.description:  # the window read's result
                        rows = list(await cur.fetchall())
                    if not await cur.nextset():
                        break
        except LostRace:
            return None
        return rows

    @asynccontextmanager
    async def _cursor(
        self, parts: Sequence[tuple[Compiled, dict[str, Any]]], what: str, *, write: bool
    ) -> AsyncIterator[tuple[Any, str, Any]]:
        """A cursor, the query and its parameters: on the engine's kept connection in
        autocommit (no pool checkout; dropped after any failure), or on a pooled one when it
        is busy, which is afterwards marked as holding no transaction (when the server says
        so), so its return costs no ROLLBACK."""
        import pymysql

        query, lost, kept = "", True, False  # a connect error is a lost connection
        try:
            async with self.kept.checkout() as (conn, pooled):
                lost = False
                kept = pooled is None
                if kept and not conn.get_autocommit():
                    await conn.autocommit(True)  # once per kept connection
                query, params = self._bind(parts, autocommit=kept, write=write)
                try:
                    if ASYNC:
                        cur = await conn.cursor()
                    else:
                        cur = conn.cursor()
                    try:
                        yield cur, query, params
                    finally:
                        await cur.close()
                    if pooled is not None and not conn.server_status & SERVER_STATUS_IN_TRANS:
                        pooled.info[TRANSACTION_ENDED] = True
                except pymysql.Error as exc:
                    checked = conn if pooled is None else pooled.dbapi_connection
                    lost = bool(self.engine.dialect.is_disconnect(cast(Any, exc), checked, None))
                    if pooled is not None and lost:
                        await pool_call(pooled.invalidate, exc)
                    elif pooled is not None:
                        with contextlib.suppress(pymysql.Error):  # the statements before it
                            await conn.rollback()
                    raise  # (the kept connection is closed by its checkout)
        except pymysql.Error as exc:
            error = self._translated(exc, query, what, lost=lost)
            if lost and kept and not write:
                # the pool may hold connections from before the same outage: recycle them
                await pool_call(self.kept_pool_invalidate)
                raise _KeptConnectionLost(error) from None
            raise error from error.__cause__

    def kept_pool_invalidate(self) -> None:
        """Mark every pooled connection older than now as stale (what SQLAlchemy does on a
        disconnect error of its own)."""
        pool: Any = self.pool_owner.pool
        pool._invalidate(None, None, False)  # SQLAlchemy's own hook: stamps the pool's time

    def _translated(self, exc: Exception, sql: str, what: str, *, lost: bool) -> Exception:
        import pymysql

        appending = what == "appending"
        return fast_path_error(self, exc, sql, pymysql.Error, what, lost, appending)
