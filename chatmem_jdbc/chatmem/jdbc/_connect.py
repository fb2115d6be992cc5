"""What both twins' engines share: the driver each extra installs, SQLite set-up, idle pings.

SQLite files are put in WAL mode once (readers never wait for the writer) with a busy
timeout; ``:memory:`` shares one connection. Server engines ping a pooled connection only
after it sat idle, and a URL naming no driver gets its extra's (the async twin: its asyncio
driver). The engines themselves are made in ``_async/engine.py`` and its sync twin.
"""

from __future__ import annotations

import random
import sqlite3
import time
import weakref
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from chatmem.core import MissingDependencyError

from ._native.dialects import ASYNC_DIALECTS, no_async_twin

IDLE_PING_SECONDS = 10.0
"""A pooled connection idle this long is pinged at checkout (see ``ping_when_idle``)."""

DEFAULT_DRIVERS = {
    "postgres": "postgresql+psycopg",
    "postgresql": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mariadb+pymysql",
    "mssql": "mssql+pymssql",
    "oracle": "oracle+oracledb",
}
"""The driver each extra installs, for URLs that name none (SQLAlchemy would pick mysqlclient
or pyodbc, and no longer knows ``postgres://``)."""

ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+pysqlite": "sqlite+aiosqlite",
    "postgres": "postgresql+psycopg",
    "postgresql": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
    "mysql": "mysql+aiomysql",
    "mysql+pymysql": "mysql+aiomysql",
    "mariadb": "mariadb+aiomysql",
    "mariadb+pymysql": "mariadb+aiomysql",
}
"""The async twin's drivers: for a URL naming no driver, or naming the sync twin's (so one
URL serves both twins): aiosqlite, psycopg's async mode, aiomysql (PyMySQL's asyncio twin:
the same error classes, so the dialects classify its errors unchanged). An asyncio driver
the URL names itself (``postgresql+asyncpg``) is used as given."""

DRIVER_EXTRAS = {"postgresql": "postgres", "mysql": "mysql", "mariadb": "mariadb"}
"""SQLAlchemy backend name -> the extra that installs its driver (others: the same name)."""

WAL_SETUP_SECONDS = 30.0


def engine_url(url: str) -> sa.URL:
    """``url`` with the driver its extra installs when it names none (``DEFAULT_DRIVERS``)."""
    parsed = make_url(url)
    if parsed.drivername in DEFAULT_DRIVERS:
        parsed = parsed.set(drivername=DEFAULT_DRIVERS[parsed.drivername])
    return parsed


def async_engine_url(url: str) -> sa.URL:
    """``url`` with the async twin's driver (``ASYNC_DRIVERS``); a database without an
    async twin (SQL Server, Oracle) is an ``InvalidArgumentError`` saying so."""
    parsed = make_url(url)
    if parsed.get_backend_name() not in ASYNC_DIALECTS:
        raise no_async_twin(parsed.get_backend_name())
    if parsed.drivername in ASYNC_DRIVERS:
        parsed = parsed.set(drivername=ASYNC_DRIVERS[parsed.drivername])
    if parsed.get_driver_name() == "aiomysql":
        _check_aiomysql()
    return parsed


def _check_aiomysql() -> None:
    """aiomysql 0.3.2 binds bytes (our MySQL ids) with PyMySQL's ``escape_bytes_prefixed``,
    which PyMySQL 1.2.3 turned into a placeholder string (aio-libs/aiomysql#1080): every
    query would fail with "'str' object is not callable". Say so before any I/O; the
    extras pin PyMySQL below 1.2 until aiomysql stops importing it."""
    try:
        from aiomysql import connection  # type: ignore[import-untyped]
    except ImportError:
        return  # create_async_engine names the missing driver
    if not callable(getattr(connection, "escape_bytes_prefixed", len)):
        raise MissingDependencyError("mysql", "PyMySQL<1.2")


def sqlite_options(url: sa.URL, engine_options: dict[str, Any]) -> bool:
    """Set the SQLite engine options (thread sharing, busy timeout, one shared connection for
    ``:memory:``) in ``engine_options``; True for a file database (then add the WAL hook)."""
    memory = url.database in (None, "", ":memory:")
    engine_options.setdefault("connect_args", {}).setdefault("check_same_thread", False)
    engine_options["connect_args"].setdefault("timeout", 30)
    if memory:
        engine_options.setdefault("poolclass", sa.pool.StaticPool)
    return not memory


def ping_when_idle(engine: Engine, idle_seconds: float = IDLE_PING_SECONDS) -> None:
    """Ping a pooled connection at checkout only if it sat idle for ``idle_seconds``.

    ``pool_pre_ping`` pings on every checkout, a full extra round trip per operation; a
    connection used moments ago is alive, while one idle long enough to be dropped by the
    server or a proxy is checked (and silently replaced) before we use it. For an async
    engine pass its ``sync_engine``: the pool's events run inside SQLAlchemy's greenlet, where
    the async driver's ping is awaited.
    """

    def on_connect(_dbapi_conn: Any, record: Any) -> None:
        record.info["chatmem_used"] = time.monotonic()

    def on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        if time.monotonic() - record.info.get("chatmem_used", 0.0) < idle_seconds:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_conn)
        except Exception as exc:
            raise sa.exc.DisconnectionError(f"stale pooled connection: {exc}") from exc
        if not alive:
            raise sa.exc.DisconnectionError("stale pooled connection")

    def on_checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info["chatmem_used"] = time.monotonic()

    sa.event.listen(engine, "connect", on_connect)
    sa.event.listen(engine, "checkout", on_checkout)
    sa.event.listen(engine, "checkin", on_checkin)
    _IDLE_SECONDS[engine] = idle_seconds


_IDLE_SECONDS: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def idle_seconds_of(engine: Any) -> float | None:
    """How long a connection of ``engine`` (sync or async) may sit idle before it is checked:
    ``make_engine``'s ``idle_ping_seconds``, 0 when the pool pings at every checkout
    (``pool_pre_ping``), else the default; a fast path's kept connection is dropped after
    that long idle. None: the pool itself may not keep connections (not a ``QueuePool``)."""
    engine = getattr(engine, "sync_engine", engine)
    if not isinstance(engine.pool, sa.pool.QueuePool):
        return None
    if getattr(engine.pool, "_pre_ping", False):
        return 0.0
    return _IDLE_SECONDS.get(engine, IDLE_PING_SECONDS)


ASYNC_POOL_SIZE = 15
"""Connections an async engine on a server keeps (SQLAlchemy's default ceiling, 5 + 10
overflow, as one fixed pool). asyncio's pool closes a returned overflow connection whenever
its queue is momentarily full, even with tasks waiting for one, so under a burst of tasks
the default pool opened and closed a connection every few operations (a third of the time
of 100 concurrent conversations on PostgreSQL)."""

SERVER_STATUS_IN_TRANS = 1
"""The MySQL protocol's status flag for an open transaction (PyMySQL and aiomysql keep the
last OK packet's flags in ``connection.server_status``)."""

TRANSACTION_ENDED = "chatmem_transaction_ended"
"""Connection-record flag: the connection's last transaction ended cleanly (see
``rollback_only_open``); the MySQL fast path sets it after its own ``COMMIT``."""

MULTI_STATEMENTS = 1 << 16
"""The MySQL protocol's CLIENT_MULTI_STATEMENTS capability (``pymysql.constants.CLIENT``)."""

_MULTI_STATEMENT_ENGINES: weakref.WeakSet[Any] = weakref.WeakSet()


def allow_multi_statements(drivername: str, engine_options: dict[str, Any]) -> bool:
    """Ask PyMySQL/aiomysql connections for multi-statement queries (so the fast path can send
    a statement and its COMMIT in one round trip); False for other MySQL drivers. Our
    statements bind every value, so a second statement can only come from our own SQL."""
    if drivername.split("+")[-1] not in ("pymysql", "aiomysql"):
        return False
    connect_args = dict(engine_options.get("connect_args") or {})
    connect_args["client_flag"] = int(connect_args.get("client_flag", 0)) | MULTI_STATEMENTS
    engine_options["connect_args"] = connect_args
    return True


def mark_multi_statements(engine: Any) -> None:
    """Remember that ``engine``'s connections accept multi-statement queries."""
    _MULTI_STATEMENT_ENGINES.add(getattr(engine, "sync_engine", engine))


def allows_multi_statements(engine: Any) -> bool:
    """Whether ``engine`` (sync or async) was made by ``make_engine`` with multi-statement
    MySQL connections (an engine made elsewhere keeps the one-statement-per-trip path)."""
    return getattr(engine, "sync_engine", engine) in _MULTI_STATEMENT_ENGINES


def rollback_only_open(engine: Engine) -> None:
    """Roll a MySQL/MariaDB connection back on its return to the pool unless it provably holds
    no transaction (for an engine made with ``pool_reset_on_return=None``).

    The pool's default reset sends ``ROLLBACK`` on every check-in, a full round trip even
    after a ``COMMIT``: two of a windowed turn's ten. A connection goes back as is only when
    its last SQLAlchemy transaction event was a commit or rollback that did not fail, and the
    server's last OK packet does not flag an open transaction; anything else (raw driver use
    since checkout, a failed statement, a transaction still open) is rolled back as before.
    For an async engine pass its ``sync_engine`` (the events run in SQLAlchemy's greenlet,
    where the rollback is awaited).
    """

    def on_checkout(_dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        record.info[TRANSACTION_ENDED] = False

    def on_begin(conn: Any) -> None:
        conn.info[TRANSACTION_ENDED] = False

    def on_end(conn: Any) -> None:
        conn.info[TRANSACTION_ENDED] = True

    def on_error(context: Any) -> None:
        if context.connection is not None and not context.connection.invalidated:
            context.connection.info[TRANSACTION_ENDED] = False

    def on_reset(dbapi_conn: Any, record: Any, state: Any) -> None:
        if state.terminate_only or not state.asyncio_safe:
            return  # the connection is being closed: nothing to reset
        if state.transaction_was_reset:
            return  # SQLAlchemy rolled it back just now
        driver = getattr(dbapi_conn, "_connection", dbapi_conn)  # aiomysql under its adapter
        status = getattr(driver, "server_status", None)
        open_ = not isinstance(status, int) or bool(status & SERVER_STATUS_IN_TRANS)
        if open_ or not record.info.get(TRANSACTION_ENDED):
            dbapi_conn.rollback()

    sa.event.listen(engine, "checkout", on_checkout)
    sa.event.listen(engine, "begin", on_begin)
    sa.event.listen(engine, "commit", on_end)
    sa.event.listen(engine, "rollback", on_end)
    sa.event.listen(engine, "handle_error", on_error)
    sa.event.listen(engine, "reset", on_reset)


def sqlite_wal(sleep: Callable[[float], None]) -> Callable[[Any, Any], None]:
    """The ``connect`` hook that puts a new connection's database in WAL mode once (a file
    already in WAL is left alone). Switching needs an exclusive lock that SQLite may refuse
    at once, without its busy handler, while other connections open the same new file: retry
    that, bounded, waiting with ``sleep`` (the async twin's awaits ``asyncio.sleep`` from
    SQLAlchemy's greenlet, so the event loop keeps running)."""

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        try:
            deadline = time.monotonic() + WAL_SETUP_SECONDS
            while str(_fetch_one(cur, "PRAGMA journal_mode")).lower() != "wal":
                try:
                    cur.execute("PRAGMA journal_mode=WAL")
                    cur.fetchall()
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                    sleep(random.uniform(0.001, 0.02))
            cur.execute("PRAGMA synchronous=NORMAL")
        finally:
            cur.close()

    return on_connect


def _fetch_one(cur: Any, sql: str) -> Any:
    cur.execute(sql)
    return cur.fetchone()[0]
