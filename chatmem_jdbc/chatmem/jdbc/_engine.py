"""Engines for chat memory: the driver each extra installs, SQLite set-up, idle pings.

SQLite files are put in WAL mode once (readers never wait for the writer) with a busy
timeout; ``:memory:`` shares one connection. Server engines ping a pooled connection only
after it sat idle, and a URL naming no driver gets its extra's.
"""

from __future__ import annotations

import random
import sqlite3
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from chatmem.core import MissingDependencyError

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


DRIVER_EXTRAS = {"postgresql": "postgres", "mysql": "mysql", "mariadb": "mariadb"}
"""SQLAlchemy backend name -> the extra that installs its driver (others: the same name)."""


def make_engine(
    url: str, *, idle_ping_seconds: float = IDLE_PING_SECONDS, **engine_options: Any
) -> Engine:
    """An engine for ``url`` with settings chat memory needs (SQLite: WAL, busy timeout,
    one shared connection for ``:memory:``; servers: pooled connections pinged only after
    ``idle_ping_seconds`` idle); a URL without a driver gets the extra's."""
    parsed = sa.make_url(url)
    backend = parsed.get_backend_name()
    if parsed.drivername in DEFAULT_DRIVERS:
        parsed = parsed.set(drivername=DEFAULT_DRIVERS[parsed.drivername])
    if parsed.get_backend_name() == "sqlite":
        memory = parsed.database in (None, "", ":memory:")
        engine_options.setdefault("connect_args", {}).setdefault("check_same_thread", False)
        engine_options["connect_args"].setdefault("timeout", 30)
        if memory:
            engine_options.setdefault("poolclass", sa.pool.StaticPool)
        engine = sa.create_engine(parsed, **engine_options)
        if not memory:
            sa.event.listen(engine, "connect", _sqlite_wal)
        return engine
    try:
        engine = sa.create_engine(parsed, **engine_options)
    except ModuleNotFoundError as exc:  # the URL's driver is not installed
        extra = DRIVER_EXTRAS.get(backend, backend)
        raise MissingDependencyError(extra, exc.name or parsed.drivername) from exc
    if not engine_options.get("pool_pre_ping"):
        ping_when_idle(engine, idle_ping_seconds)
    return engine


def ping_when_idle(engine: Engine, idle_seconds: float = IDLE_PING_SECONDS) -> None:
    """Ping a pooled connection at checkout only if it sat idle for ``idle_seconds``.

    ``pool_pre_ping`` pings on every checkout, a full extra round trip per operation; a
    connection used moments ago is alive, while one idle long enough to be dropped by the
    server or a proxy is checked (and silently replaced) before we use it.
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


def _sqlite_wal(dbapi_conn: Any, _record: Any) -> None:
    """Put a new connection's database in WAL mode once (a file already in WAL is left
    alone). Switching needs an exclusive lock that SQLite may refuse at once, without its
    busy handler, while other connections open the same new file: retry that, bounded."""
    cur = dbapi_conn.cursor()
    try:
        deadline = time.monotonic() + WAL_SETUP_SECONDS
        while str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            try:
                cur.execute("PRAGMA journal_mode=WAL").fetchall()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(random.uniform(0.001, 0.02))
        cur.execute("PRAGMA synchronous=NORMAL")
    finally:
        cur.close()


WAL_SETUP_SECONDS = 30.0
