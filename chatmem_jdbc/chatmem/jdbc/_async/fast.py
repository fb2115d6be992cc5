"""The window's two hot operations on the driver's own connection, with the SQL SQLAlchemy
compiled once: on SQLite and on psycopg, SQLAlchemy's per-statement bookkeeping costs as much
as the statement. Each twin runs on its own drivers' connections (each item below names the
blocking twin's, then the other's).

- SQLite: the pooled sqlite3 connection, or aiosqlite's (``SQLITE_DRIVER``). Appends take
  the write lock up front (``BEGIN IMMEDIATE``); "database is locked" is a lost race, retried
  by the caller.
- PostgreSQL: psycopg's connection (blocking, or non-blocking) in autocommit, one round
  trip per read or append, kept between calls like SQLite's.
- MySQL/MariaDB (PyMySQL, or aiomysql), on engines ``make_engine`` or ``make_async_engine``
  made (their connections allow multi-statement queries): the statements and their
  ``COMMIT`` go as one query, so a read or an append is one round trip instead of two or
  three (see ``_native/mysql.py``).

Driver errors go through the same translation as SQLAlchemy's (``as_dbapi_error``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import PoolProxiedConnection, QueuePool
from sqlalchemy.util import await_only, greenlet_spawn

from chatmem.core import Message
from chatmem.core.backend import DecodeCache, remembered

from .._codec import from_values, to_row
from .._connect import (
    SERVER_STATUS_IN_TRANS,
    TRANSACTION_ENDED,
    allows_multi_statements,
    idle_seconds_of,
)
from .._errors import as_dbapi_error, translated
from .._native.dialects import SqlDialect
from .._native.sqlite import sqlite_text
from .._plan import Compiled, Statements

if TYPE_CHECKING:
    from .._native.postgresql import PostgresDialect
    from .._schema import Tables

ASYNC = True

T = TypeVar("T")

if ASYNC:
    # aiosqlite runs each connection's sqlite3 calls in a thread of its own (the driver's
    # design: sqlite3 has no asyncio API), so the event loop only awaits.
    SQLITE_DRIVER = "aiosqlite"

else:
    SQLITE_DRIVER = "pysqlite"


class AsyncFastPath(Protocol):
    """What the repository runs on the fast path."""

    async def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        """Every system message plus the last ``non_system_limit`` others, oldest first."""
        ...

    async def read_last(self, cid: str, n: int) -> list[Message]:
        """The newest ``n`` messages, newest first (what ``find_last`` reverses)."""
        ...

    def can_append(self, count: int, trim_to: int | None) -> bool:
        """Whether ``append`` takes this batch (else the repository's own path does)."""
        ...

    async def append(self, cid: str, messages: Sequence[Message], trim_to: int | None) -> bool:
        """Append atomically; False when it lost a race (the caller retries)."""
        ...

    def remember(self, cid: str, start: int, messages: Sequence[Message]) -> None:
        """Messages another path just committed at ``start``, ... (a replace): cache them
        where the fast path's reads will look, if it can."""
        ...


def fast_path_for(
    dialect: SqlDialect, engine: AsyncEngine, tables: Tables, sql: Statements, reserve: Any
) -> AsyncFastPath | None:
    """The fast path for this engine's database and driver, or None (everything then runs
    through SQLAlchemy)."""
    driver = engine.dialect.driver
    if dialect.name == "sqlite" and driver == SQLITE_DRIVER and reserve is not None:
        return AsyncSqliteFastPath(engine, sql, reserve)
    if dialect.name == "postgresql" and driver == "psycopg":
        from .._native.postgresql import fast_path_statements

        pg = cast("PostgresDialect", dialect)
        return AsyncPsycopgFastPath.create(pg, engine, *fast_path_statements(pg, tables, sql))
    if dialect.name == "mysql" and reserve is not None and allows_multi_statements(engine):
        return AsyncMysqlFastPath(dialect, engine, tables, sql, reserve)
    return None


async def _pool(call: Callable[..., T], *args: Any) -> T:
    """Run a pool operation (checkout, checkin, invalidate)."""
    if ASYNC:
        # in SQLAlchemy's greenlet, where the driver adapter awaits the driver's coroutines
        return await greenlet_spawn(call, *args)
    else:
        return call(*args)


class AsyncKeptConnection:
    """One driver connection kept by a fast path between calls (SQLite's sqlite3 or
    aiosqlite connection, PostgreSQL's psycopg connection).

    A pool checkout and check-in cost about as much as a SQLite statement (three per windowed
    turn), so the fast path keeps one connection per engine, taken from the engine's pool once
    (its ``connect`` events ran: WAL, busy timeout) and detached from it, so the pool's
    capacity is unchanged. One caller uses it at a time; a caller that finds it busy checks one
    out of the pool as before. It is closed with the pool (``engine.dispose()``), dropped after
    any failure on it, dropped when it sat idle longer than ``max_idle`` seconds (a server or
    a proxy may have closed it: the next caller takes a fresh, pinged one from the pool), and
    never used in a process it was not opened in (a fork's child opens its own). Engines whose
    pool is not a ``QueuePool`` (``:memory:``'s ``StaticPool``, a ``NullPool``) always go
    through the pool.
    """

    def __init__(self, pool_owner: Any, *, keep: bool, max_idle: float | None = None) -> None:
        # A weak reference: this object is the value of a weak-keyed map keyed by the engine.
        self.pool_owner, self.keep = weakref.ref(pool_owner), keep
        self.max_idle = max_idle
        self.lock = threading.Lock()  # acquired without blocking: never waited on
        self.conn: Any = None
        self.pid = 0
        self.used = 0.0

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        """The kept connection when it is free, else one checked out of the pool."""
        async with self.checkout() as (conn, _pooled):
            yield conn

    @asynccontextmanager
    async def checkout(self) -> AsyncIterator[tuple[Any, PoolProxiedConnection | None]]:
        """``(driver connection, None)`` for the kept one, ``(driver connection, pooled)``
        for one checked out of the pool because the kept one was busy."""
        pool_owner = self.pool_owner()
        assert pool_owner is not None  # the caller holds the engine
        if not (self.keep and self.lock.acquire(blocking=False)):
            raw = await _pool(pool_owner.raw_connection)
            try:
                yield raw.driver_connection, raw
            finally:
                await _pool(raw.close)
            return
        try:
            now = time.monotonic()
            if self.conn is not None and (
                self.pid != os.getpid()
                or (self.max_idle is not None and now - self.used > self.max_idle)
            ):
                await self._close()
            if self.conn is None:
                raw = await _pool(pool_owner.raw_connection)
                conn = raw.driver_connection  # (None once detached)
                raw.detach()
                self.conn, self.pid = conn, os.getpid()
            try:
                yield self.conn, None
            except BaseException:
                await self._close()  # its state after a failure is not worth trusting
                raise
            self.used = time.monotonic()
        finally:
            self.lock.release()

    async def _close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None and self.pid == os.getpid():
            with contextlib.suppress(Exception):
                await conn.close()

    def retire(self, _engine: Any) -> None:
        """``engine_disposed``: close the kept connection with the pool's (if it is in use,
        its user finishes and it is closed at the engine's garbage collection)."""
        if not self.lock.acquire(blocking=False):
            return
        try:
            if ASYNC:
                with contextlib.suppress(Exception):  # outside SQLAlchemy's greenlet: dropped
                    await_only(self._close())
                self.conn = None
            else:
                self._close()
        finally:
            self.lock.release()


_KEPT: weakref.WeakKeyDictionary[Any, AsyncKeptConnection] = weakref.WeakKeyDictionary()
_KEPT_LOCK = threading.Lock()


def kept_connection(engine: AsyncEngine, max_idle: float | None = None) -> AsyncKeptConnection:
    """The engine's kept connection (one per engine, shared by its repositories); none is
    kept when ``max_idle`` is 0 (a pool that pings at every checkout: its user wants every
    connection checked before use)."""
    if ASYNC:
        pool_owner = engine.sync_engine
    else:
        pool_owner = engine
    with _KEPT_LOCK:
        kept = _KEPT.get(pool_owner)
        if kept is None:
            keep = isinstance(pool_owner.pool, QueuePool) and max_idle != 0
            kept = AsyncKeptConnection(pool_owner, keep=keep, max_idle=max_idle)
            _KEPT[pool_owner] = kept
            sa.event.listen(pool_owner, "engine_disposed", kept.retire)
    return kept


class AsyncSqliteFastPath:
    """Append and window read on the kept (or a pooled) sqlite3 / aiosqlite connection."""

    def __init__(self, engine: AsyncEngine, sql: Statements, reserve: Any) -> None:
        self.engine = engine
        self.kept = kept_connection(engine)
        self.window = Compiled(sql.window, engine.dialect)
        self.last = Compiled(sql.find_last, engine.dialect)
        self.reserve = Compiled(reserve, engine.dialect)
        self.insert = Compiled(sql.insert_messages, engine.dialect)
        self.columns = tuple(c.name for c in sql.insert_messages.table.columns)  # SELECT *
        self.trim_cut = Compiled(sql.trim_cut, engine.dialect)
        self.trim = Compiled(sql.delete_non_system_below, engine.dialect)
        self.cache = DecodeCache()

    async def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        args = self.window.args(cid=cid, n=non_system_limit)
        return await self._read(self.window, args, "reading the window")

    async def read_last(self, cid: str, n: int) -> list[Message]:
        return await self._read(self.last, self.last.args(cid=cid, n=n), "reading")

    async def _read(self, stmt: Compiled, args: tuple[Any, ...], what: str) -> list[Message]:
        async with self.kept.connection() as conn:
            try:
                cur = await conn.execute(stmt.sql, args)
                rows = await cur.fetchall()
            except sqlite3.Error as exc:
                self._raise(exc, stmt, what)
        # A row's columns (payload text, position, raw timestamp...) are its cache key: a
        # replaced or concurrently written row has other values, hence is decoded afresh.
        return self.cache.get_many(rows, _decode_sqlite_row)

    def can_append(self, count: int, trim_to: int | None) -> bool:
        return True

    async def append(self, cid: str, messages: Sequence[Message], trim_to: int | None) -> bool:
        """Append atomically; False when the database was busy (the caller retries). An
        explicit BEGIN IMMEDIATE .. COMMIT, which sqlite3 passes through in every
        isolation mode; a cancelled append is rolled back (or was already committed)."""
        async with self.kept.connection() as conn:
            try:
                cur = await conn.cursor()
                await cur.execute("BEGIN IMMEDIATE")
                try:
                    written = await self._append(cur, cid, messages, trim_to)
                    await cur.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):  # e.g. cancelled after COMMIT ran
                        await cur.execute("ROLLBACK")
                    raise
                self._remember(written, messages)
                return True
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    return False
                self._raise(exc, self.insert, "appending")
            except sqlite3.Error as exc:
                self._raise(exc, self.insert, "appending")

    async def _append(
        self, cur: Any, cid: str, messages: Sequence[Message], trim_to: int | None
    ) -> list[dict[str, Any]]:
        """Insert ``messages``; returns their column values as stored."""
        now = sqlite_text(datetime.now(timezone.utc))
        k = len(messages)
        row = await cur.execute(self.reserve.sql, self.reserve.args(cid=cid, k=k, now=now))
        reserved = await row.fetchone()
        start = int(reserved[0]) - k
        written = self._rows(cid, start, messages)
        rows = [self.insert.row(values) for values in written]
        if k == 1:  # executemany's per-call set-up costs more than the one row it runs
            await cur.execute(self.insert.sql, rows[0])
        else:
            await cur.executemany(self.insert.sql, rows)
        if trim_to is not None and (start + k) // trim_to != start // trim_to:
            skip = self.trim_cut.args(cid=cid, skip=trim_to - 1)
            found = await cur.execute(self.trim_cut.sql, skip)
            cut = await found.fetchone()
            if cut is not None:
                await cur.execute(self.trim.sql, self.trim.args(cid=cid, below=cut[0]))
        return written

    def _rows(self, cid: str, start: int, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """The column values of ``messages`` at ``start``, ... as SQLite stores them."""
        return [self._row(cid, start + i, m) for i, m in enumerate(messages)]

    @staticmethod
    def _row(cid: str, position: int, message: Message) -> dict[str, Any]:
        values = to_row(cid, position, message)
        values["created_at"] = sqlite_text(values["created_at"])
        return values

    def remember(self, cid: str, start: int, messages: Sequence[Message]) -> None:
        keep = remembered(messages)
        written = [self._row(cid, start + i, messages[i]) for i in keep]
        self._remember(written, [messages[i] for i in keep])

    def _remember(self, written: list[dict[str, Any]], messages: Sequence[Message]) -> None:
        """Cache the messages just committed under the rows a read will return for them
        (the very values inserted: SQLite gives back the text and integers it was given),
        so the next window read decodes nothing it wrote."""
        columns, put = self.columns, self.cache.put_written
        for values, m in zip(written, messages, strict=True):
            put(tuple(values[c] for c in columns), m, values["position"])

    def _raise(self, exc: sqlite3.Error, stmt: Compiled, what: str) -> NoReturn:
        """Raise the chatmem error SQLAlchemy's path raises for the same sqlite3 error."""
        error = translated(as_dbapi_error(exc, stmt.sql, self.engine.dialect, sqlite3.Error), what)
        raise error from error.__cause__


class AsyncPsycopgFastPath:
    """Window read, bounded read and append on the engine's kept psycopg connection (a pooled
    one when it is busy), in autocommit: one round trip each, no pool checkout; driver errors
    go through the same translation as SQLAlchemy's."""

    def __init__(
        self,
        dialect: PostgresDialect,
        engine: AsyncEngine,
        window: Compiled,
        last: Compiled,
        append: Compiled,
    ) -> None:
        self.dialect, self.engine, self.window, self.append_sql = dialect, engine, window, append
        self.last = last
        self.kept = kept_connection(engine, max_idle=idle_seconds_of(engine))
        self.cache = DecodeCache()

    @classmethod
    def create(
        cls, dialect: PostgresDialect, engine: AsyncEngine, window: Any, last: Any, append: Any
    ) -> AsyncPsycopgFastPath | None:
        """The fast path, or None when a statement needs SQLAlchemy's parameter processing."""
        window_c, last_c, append_c = (Compiled(s, engine.dialect) for s in (window, last, append))
        if not (window_c.plain and last_c.plain and append_c.plain):
            return None
        return cls(dialect, engine, window_c, last_c, append_c)

    async def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        params = self.window.params(cid=cid, n=non_system_limit)
        return await self._read(self.window, params, "reading the window")

    async def read_last(self, cid: str, n: int) -> list[Message]:
        return await self._read(self.last, self.last.params(cid=cid, n=n), "reading")

    async def _read(self, stmt: Compiled, params: dict[str, Any], what: str) -> list[Message]:
        async with self._cursor(stmt, what) as cur:
            await cur.execute(stmt.sql, params)
            rows = await cur.fetchall()
        return self.cache.get_many(rows, _decode_row)  # keyed by the row's values, as on SQLite

    def can_append(self, count: int, trim_to: int | None) -> bool:
        return True

    def remember(self, cid: str, start: int, messages: Sequence[Message]) -> None:
        pass  # not cached: its reads' row form (driver-parsed types) is not checked to match

    async def append(self, cid: str, messages: Sequence[Message], trim_to: int | None) -> bool:
        rows = [to_row(cid, i, m) for i, m in enumerate(messages)]
        params = self.append_sql.params(**self.dialect.append_parameters(cid, rows, trim_to))
        try:
            async with self._cursor(self.append_sql, "appending") as cur:
                await cur.execute(self.append_sql.sql, params)
        except _LostRace:
            return False
        return True

    @asynccontextmanager
    async def _cursor(self, stmt: Compiled, what: str) -> AsyncIterator[Any]:
        """A cursor in autocommit on the kept connection (or a pooled one when it is busy:
        that one goes back to the pool out of autocommit, as it came)."""
        import psycopg

        lost = True  # until a connection is in hand: the pool's connect error is handed out as is
        try:
            async with self.kept.checkout() as (conn, pooled):
                lost = False
                try:
                    if not conn.autocommit:
                        await conn.set_autocommit(True)  # client-side in psycopg: no round trip
                    try:
                        async with conn.cursor() as cur:
                            yield cur
                    finally:
                        if pooled is not None and not conn.closed:
                            await conn.set_autocommit(False)
                except psycopg.Error as exc:
                    # SQLAlchemy's own test, which needs the connection (closed or broken)
                    checked = conn if pooled is None else pooled.dbapi_connection
                    lost = bool(self.engine.dialect.is_disconnect(cast(Any, exc), checked, None))
                    if lost and pooled is not None:
                        await _pool(pooled.invalidate, exc)
                    raise
        except psycopg.Error as exc:
            error = self._translated(exc, stmt, what, lost=lost)
            raise error from error.__cause__

    def _translated(self, exc: Exception, stmt: Compiled, what: str, *, lost: bool) -> Exception:
        import psycopg

        appending = stmt is self.append_sql
        return _fast_path_error(self, exc, stmt.sql, psycopg.Error, what, lost, appending)


MAX_ONE_TRIP_BATCH = 16
"""The largest append the MySQL fast path sends as one query (one compiled INSERT per batch
size is kept); bigger batches, imports mostly, take the transaction path."""


class AsyncMysqlFastPath:
    """Window read, bounded read and untrimmed append on MySQL/MariaDB, one round trip each.

    Each is one multi-statement query ending in ``COMMIT``: the append reserves its positions
    (the upsert that sets ``LAST_INSERT_ID`` to the new ``next_position``, row-locking the
    conversation) and inserts the batch at ``LAST_INSERT_ID() - k + i`` in the same
    transaction; a read commits its snapshot at once, so the connection goes back to the pool
    with no transaction and no ``ROLLBACK`` round trip. Values are escaped by the driver, as
    for every other statement. A failing statement stops the rest: the transaction is rolled
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
            self.pool = engine.sync_engine
        else:
            self.pool = engine
        window, last = mysql_read_statements(tables)
        self.window = Compiled(window, engine.dialect)
        self.last = Compiled(last, engine.dialect)
        self.reserve = Compiled(reserve, engine.dialect)
        self.positional = bool(engine.dialect.positional)
        self._inserts: dict[int, Compiled] = {}
        self.cache = DecodeCache()

    def _bind(self, *parts: tuple[Compiled, dict[str, Any]]) -> tuple[str, Any]:
        """One query of the statements in ``parts`` followed by COMMIT, and its parameters
        (positional or named, as the driver's paramstyle wants)."""
        query = ";".join(stmt.sql for stmt, _ in parts) + ";COMMIT"
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
        return self.cache.get_many(rows, _decode_row)

    async def read_last(self, cid: str, n: int) -> list[Message]:
        rows = await self._read(self.last, {"cid": cid.encode("utf-8"), "n": n}, "reading")
        return self.cache.get_many(rows, _decode_row)

    async def _read(self, stmt: Compiled, values: dict[str, Any], what: str) -> list[Any]:
        query, params = self._bind((stmt, values))
        async with self._cursor(query, what) as cur:
            await cur.execute(query, params)
            rows = list(await cur.fetchall())
            while await cur.nextset():
                pass
        return rows

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
        k, key = len(messages), cid.encode("utf-8")
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        row: dict[str, Any] = {"cid": key}
        for i, m in enumerate(messages):
            r = to_row(cid, i, m)
            row[f"b{i}"], row[f"s{i}"], row[f"t{i}"] = k - i, r["is_system"], r["message_type"]
            row[f"c{i}"], row[f"p{i}"], row[f"ts{i}"] = r["content"], r["payload"], r["created_at"]
        query, params = self._bind(
            (self.reserve, {"cid": key, "k": k, "now": now}), (self._insert(k), row)
        )
        try:
            async with self._cursor(query, "appending") as cur:
                await cur.execute(query, params)
                while await cur.nextset():
                    pass
        except _LostRace:
            return False
        return True

    @asynccontextmanager
    async def _cursor(self, query: str, what: str) -> AsyncIterator[Any]:
        """A cursor on a pooled connection; afterwards the connection is marked as holding
        no transaction (when the server says so), so its return costs no ROLLBACK."""
        import pymysql

        try:
            raw: PoolProxiedConnection = await _pool(self.pool.raw_connection)
        except pymysql.Error as exc:  # the pool hands out the driver's connect error as is
            error = self._translated(exc, query, what, lost=True)
            raise error from error.__cause__
        conn: Any = raw.driver_connection
        try:
            if ASYNC:
                cur = await conn.cursor()
            else:
                cur = conn.cursor()
            try:
                yield cur
            finally:
                await cur.close()
            if not conn.server_status & SERVER_STATUS_IN_TRANS:
                raw.info[TRANSACTION_ENDED] = True
        except pymysql.Error as exc:
            lost = self.engine.dialect.is_disconnect(cast(Any, exc), raw.dbapi_connection, None)
            if lost:
                await _pool(raw.invalidate, exc)
            else:
                with contextlib.suppress(pymysql.Error):  # the statements before the failure
                    await conn.rollback()
            error = self._translated(exc, query, what, lost=lost)
            raise error from error.__cause__
        finally:
            await _pool(raw.close)

    def _translated(self, exc: Exception, sql: str, what: str, *, lost: bool) -> Exception:
        import pymysql

        appending = what == "appending"
        return _fast_path_error(self, exc, sql, pymysql.Error, what, lost, appending)


def _fast_path_error(
    fast: AsyncPsycopgFastPath | AsyncMysqlFastPath,
    exc: Exception,
    sql: str,
    dbapi_base: type[Exception],
    what: str,
    lost: bool,
    appending: bool,
) -> Exception:
    """The error SQLAlchemy would have raised for a driver error on a fast path, as chatmem's
    error; ``_LostRace`` for an append that lost a race (the caller retries it)."""
    wrapped = as_dbapi_error(exc, sql, fast.engine.dialect, dbapi_base, lost=lost)
    if not isinstance(wrapped, DBAPIError):
        return wrapped
    if appending and not lost and fast.dialect.is_retryable(wrapped):
        return _LostRace()
    return translated(wrapped, what)


def mysql_read_statements(tables: Tables) -> tuple[Any, Any]:
    """``(window, last)`` for the MySQL fast path, fetching only what decoding needs, with
    the timestamp as text: PyMySQL parses every field of every row in Python, and the id
    column and its ``DATETIME`` conversion were most of a window read's client time."""
    m = tables.messages
    created = sa.cast(m.c.created_at, sa.String).label("created_at")  # CAST(.. AS CHAR)
    cols = (m.c.position, m.c.message_type, m.c.content, m.c.payload, created)
    in_conv = m.c.conversation_id == sa.bindparam("cid")
    newest = m.c.position.desc()
    others = sa.select(*cols).where(in_conv, m.c.is_system == 0).order_by(newest)
    window = sa.union_all(
        sa.select(*cols).where(in_conv, m.c.is_system == 1), others.limit(sa.bindparam("n"))
    )
    return window, sa.select(*cols).where(in_conv).order_by(newest).limit(sa.bindparam("n"))


def _decode_sqlite_row(r: tuple[Any, ...]) -> Message:
    """A full messages row (``SELECT *``) as the driver returns it."""
    return from_values(r[1], r[3], r[4], r[5], r[6])


def _decode_row(r: tuple[Any, ...]) -> Message:
    """A row of the ``DECODED`` columns, in that order."""
    return from_values(*r)


class _LostRace(Exception):
    """A concurrent writer won; the append is retried."""
