# Generated from chatmem_jdbc/chatmem/jdbc/_native/_async/mysql.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""MySQL's and MariaDB's fast path (PyMySQL, or aiomysql), on engines ``make_engine`` or
``make_async_engine`` made (their connections allow multi-statement queries): the statements
and their ``COMMIT`` go as one query, so a read or an append is one round trip instead of two
or three (see ``_native/mysql.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from operator import itemgetter
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.pool import PoolProxiedConnection

from chatmem.core import Message
from chatmem.core.backend import DecodeCache

from ..._codec import to_row
from ..._connect import SERVER_STATUS_IN_TRANS, TRANSACTION_ENDED
from ..._plan import Compiled, Statements
from ..._schema import Tables
from ..dialects import SqlDialect
from ..mysql import mysql_read_statements
from .connections import LostRace, decode_row, fast_path_error, pool_call

MAX_ONE_TRIP_BATCH = 16
"""The largest append the MySQL fast path sends as one query (one compiled INSERT per batch
size is kept); bigger batches, imports mostly, take the transaction path."""


class MysqlFastPath:
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
        engine: Engine,
        tables: Tables,
        sql: Statements,
        reserve: Any,
    ) -> None:
        self.dialect, self.engine, self.tables = dialect, engine, tables
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

    def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        values = {"cid": cid.encode("utf-8"), "n": non_system_limit}
        rows = self._read(self.window, values, "reading the window")
        rows.sort(key=itemgetter(0))  # the UNION's rows come back in no set order
        return self.cache.get_many(rows, decode_row)

    def read_last(self, cid: str, n: int) -> list[Message]:
        rows = self._read(self.last, {"cid": cid.encode("utf-8"), "n": n}, "reading")
        return self.cache.get_many(rows, decode_row)

    def _read(self, stmt: Compiled, values: dict[str, Any], what: str) -> list[Any]:
        query, params = self._bind((stmt, values))
        with self._cursor(query, what) as cur:
            cur.execute(query, params)
            rows = list(cur.fetchall())
            while cur.nextset():
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

    def append(self, cid: str, messages: Sequence[Message], trim_to: int | None) -> bool:
        return self._append(cid, messages, None) is not None

    def append_and_read_window(
        self, cid: str, messages: Sequence[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message] | None:
        """The append's query with the window read before its COMMIT: the read's snapshot
        starts after the reserve took the conversation row's lock, so it holds every append
        committed before this one, and this one."""
        rows = self._append(cid, messages, non_system_limit)
        if rows is None:
            return None
        rows.sort(key=itemgetter(0))
        return self.cache.get_many(rows, decode_row)

    def _append(self, cid: str, messages: Sequence[Message], limit: int | None) -> list[Any] | None:
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
        query, params = self._bind(*parts)
        rows: list[Any] = []
        try:
            with self._cursor(query, "appending") as cur:
                cur.execute(query, params)
                while True:
                    if cur.description:  # the window read's result
                        rows = list(cur.fetchall())
                    if not cur.nextset():
                        break
        except LostRace:
            return None
        return rows

    @contextmanager
    def _cursor(self, query: str, what: str) -> Iterator[Any]:
        """A cursor on a pooled connection; afterwards the connection is marked as holding
        no transaction (when the server says so), so its return costs no ROLLBACK."""
        import pymysql

        try:
            raw: PoolProxiedConnection = pool_call(self.pool.raw_connection)
        except pymysql.Error as exc:  # the pool hands out the driver's connect error as is
            error = self._translated(exc, query, what, lost=True)
            raise error from error.__cause__
        conn: Any = raw.driver_connection
        try:
            cur = conn.cursor()
            try:
                yield cur
            finally:
                cur.close()
            if not conn.server_status & SERVER_STATUS_IN_TRANS:
                raw.info[TRANSACTION_ENDED] = True
        except pymysql.Error as exc:
            lost = self.engine.dialect.is_disconnect(cast(Any, exc), raw.dbapi_connection, None)
            if lost:
                pool_call(raw.invalidate, exc)
            else:
                with contextlib.suppress(pymysql.Error):  # the statements before the failure
                    conn.rollback()
            error = self._translated(exc, query, what, lost=lost)
            raise error from error.__cause__
        finally:
            pool_call(raw.close)

    def _translated(self, exc: Exception, sql: str, what: str, *, lost: bool) -> Exception:
        import pymysql

        appending = what == "appending"
        return fast_path_error(self, exc, sql, pymysql.Error, what, lost, appending)
