"""SQLite's fast path: append and window read on the kept (or a pooled) sqlite3 / aiosqlite
connection. Appends take the write lock up front (``BEGIN IMMEDIATE``); "database is locked"
is a lost race, retried by the caller."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, NoReturn, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from chatmem.core import Message
from chatmem.core.backend import DecodeCache, remembered

from ..._codec import from_values, to_row
from ..._errors import as_dbapi_error, translated
from ..._plan import Compiled, Statements
from ..sqlite import sqlite_text
from ..sqlite_windows import SqliteWindows
from .connections import kept_connection

ASYNC = True

if ASYNC:
    # aiosqlite runs each connection's sqlite3 calls in a thread of its own (the driver's
    # design: sqlite3 has no asyncio API), so the event loop only awaits.
    SQLITE_DRIVER = "aiosqlite"

else:
    SQLITE_DRIVER = "pysqlite"

T = TypeVar("T")


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
        self.windows = SqliteWindows()  # on the kept connection only

    async def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        async with self.kept.checkout() as (conn, pooled):
            try:
                return await _on_connection(
                    conn, self._window_job, cid, non_system_limit, pooled is None
                )
            except sqlite3.Error as exc:
                self._raise(exc, self.window, "reading the window")

    def _window_job(
        self, raw: sqlite3.Connection, cid: str, limit: int, kept: bool
    ) -> list[Message]:
        """The window, from the window cache when the kept connection proves it current."""
        if kept and self.windows.current(raw):
            hit = self.windows.get(raw, cid, limit)
            if hit is not None:
                return hit
        rows = raw.execute(self.window.sql, self.window.args(cid=cid, n=limit)).fetchall()
        window = self.cache.get_many(rows, _decode_sqlite_row)
        if kept:
            self.windows.put(raw, cid, limit, window)
        return window

    async def read_last(self, cid: str, n: int) -> list[Message]:
        return await self._read(self.last, self.last.args(cid=cid, n=n), "reading")

    async def _read(self, stmt: Compiled, args: tuple[Any, ...], what: str) -> list[Message]:
        async with self.kept.connection() as conn:
            try:
                rows = await _on_connection(conn, _fetch_all, stmt.sql, args)
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
        return await self._write(cid, messages, trim_to, None) is not None

    async def append_and_read_window(
        self, cid: str, messages: Sequence[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message] | None:
        """``append``, then the window read in the same transaction (what ``add_and_get``
        runs); None when the database was busy (the caller retries)."""
        return await self._write(cid, messages, trim_to, non_system_limit)

    async def _write(
        self, cid: str, messages: Sequence[Message], trim_to: int | None, limit: int | None
    ) -> list[Message] | None:
        """The append's transaction, with the window read before its COMMIT when ``limit``
        is set; None when the database was busy."""
        async with self.kept.checkout() as (conn, pooled):
            try:
                return await _on_connection(
                    conn, self._transaction, cid, messages, trim_to, limit, pooled is None
                )
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    return None
                self._raise(exc, self.insert, "appending")
            except sqlite3.Error as exc:
                self._raise(exc, self.insert, "appending")

    def _transaction(
        self,
        raw: sqlite3.Connection,
        cid: str,
        messages: Sequence[Message],
        trim_to: int | None,
        limit: int | None,
        kept: bool,
    ) -> list[Message]:
        """``BEGIN IMMEDIATE``, the append, the window read when ``limit`` is set (from the
        window cache when it is current), ``COMMIT``, on the sqlite3 connection itself; the
        window (empty without ``limit``)."""
        cur = raw.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            valid = kept and self.windows.current(raw)  # no other writer can commit now
            now = sqlite_text(datetime.now(timezone.utc))
            k = len(messages)
            reserved = cur.execute(self.reserve.sql, self.reserve.args(cid=cid, k=k, now=now))
            start = int(reserved.fetchone()[0]) - k
            written = self._rows(cid, start, messages)
            rows = [self.insert.row(values) for values in written]
            if k == 1:  # executemany's per-call set-up costs more than the one row it runs
                cur.execute(self.insert.sql, rows[0])
            else:
                cur.executemany(self.insert.sql, rows)
            trimmed = False
            if trim_to is not None and (start + k) // trim_to != start // trim_to:
                skip = self.trim_cut.args(cid=cid, skip=trim_to - 1)
                cut = cur.execute(self.trim_cut.sql, skip).fetchone()
                if cut is not None:
                    cur.execute(self.trim.sql, self.trim.args(cid=cid, below=cut[0]))
                    trimmed = True
            stored = self._remember(written, messages)
            window: list[Message] | None = None
            read: list[Message] | None = None  # the window, when the cache could not give it
            if valid and not trimmed:
                self.windows.appended(raw, cid, stored)
                window = None if limit is None else self.windows.get(raw, cid, limit)
            elif kept:
                self.windows.forget(raw, cid)
            if limit is not None and window is None:
                args = self.window.args(cid=cid, n=limit)
                window = read = self.cache.get_many(
                    cur.execute(self.window.sql, args), _decode_sqlite_row
                )
            cur.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                cur.execute("ROLLBACK")
            if kept:
                self.windows.forget(raw, cid)
            raise
        if kept:
            self.windows.committed(raw)
            if read is not None and limit is not None:  # a window from the cache is there
                self.windows.put(raw, cid, limit, read)
        return window or []

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

    def _remember(
        self, written: list[dict[str, Any]], messages: Sequence[Message]
    ) -> list[Message]:
        """Cache the messages just written under the rows a read will return for them (the
        very values inserted: SQLite gives back the text and integers it was given), so the
        next window read decodes nothing it wrote; returns them as that read would."""
        columns, put = self.columns, self.cache.put_written
        keys = [tuple(values[c] for c in columns) for values in written]
        for key, values, m in zip(keys, written, messages, strict=True):
            put(key, m, values["position"])
        return self.cache.get_many(keys, _decode_sqlite_row)

    def _raise(self, exc: sqlite3.Error, stmt: Compiled, what: str) -> NoReturn:
        """Raise the chatmem error SQLAlchemy's path raises for the same sqlite3 error."""
        error = translated(as_dbapi_error(exc, stmt.sql, self.engine.dialect, sqlite3.Error), what)
        raise error from error.__cause__


def _decode_sqlite_row(r: tuple[Any, ...]) -> Message:
    """A full messages row (``SELECT *``) as the driver returns it."""
    return from_values(r[1], r[3], r[4], r[5], r[6])


def _fetch_all(raw: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[Any]:
    """One statement's rows, on the sqlite3 connection itself."""
    return raw.execute(sql, args).fetchall()


if ASYNC:

    async def _on_connection(conn: Any, call: Callable[..., T], *args: Any) -> T:
        """``call(sqlite3 connection, *args)`` as one job on the aiosqlite connection's own
        thread: one hop between the loop and that thread per operation, where awaiting each
        statement and fetch costs one hop each (four to six per append). A call cancelled
        before it starts runs anyway, as a cancelled statement would: it commits or rolls
        back whole. ``Connection._execute`` is aiosqlite's own (private) way to queue a job,
        unchanged from 0.17 to 0.22: the shared suite's async twin runs through it."""
        return await conn._execute(call, conn._conn, *args)  # type: ignore[no-any-return]

else:

    def _on_connection(conn: Any, call: Callable[..., T], *args: Any) -> T:
        """``call(sqlite3 connection, *args)``."""
        return call(conn, *args)
