# Generated from chatmem_jdbc/chatmem/jdbc/_async/engine.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""This twin's engine factory, with the settings chat memory needs, and how work runs on an
engine (to its end, whatever happens to its caller; one caller at a time on ``:memory:``).
The I/O-free parts both twins share (default drivers, WAL hook, idle pings) are in
``_connect.py``.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, create_engine

from chatmem.core import MissingDependencyError

from .._connect import (
    DRIVER_EXTRAS,
    IDLE_PING_SECONDS,
    allow_multi_statements,
    engine_url,
    mark_multi_statements,
    ping_when_idle,
    rollback_only_open,
    sqlite_options,
    sqlite_wal,
)

T = TypeVar("T")


def make_engine(
    url: str, *, idle_ping_seconds: float = IDLE_PING_SECONDS, **engine_options: Any
) -> Engine:
    """An engine for ``url`` with settings chat memory needs (SQLite: WAL, busy timeout,
    one shared connection for ``:memory:``; servers: pooled connections pinged only after
    ``idle_ping_seconds`` idle; MySQL/MariaDB: a returned connection rolled back only when
    it holds an open transaction, and PyMySQL/aiomysql connections accept multi-statement
    queries for the fast path); a URL without a driver gets this twin's default for its
    database (``engine_url`` picks it)."""
    parsed = engine_url(url)
    backend = parsed.get_backend_name()
    file_db = backend == "sqlite" and sqlite_options(parsed, engine_options)
    reset_open_only = backend in ("mysql", "mariadb") and "pool_reset_on_return" not in (
        engine_options
    )
    if reset_open_only:
        engine_options["pool_reset_on_return"] = None  # rollback_only_open does it
    multi = backend in ("mysql", "mariadb") and allow_multi_statements(
        parsed.drivername, engine_options
    )
    try:
        engine = create_engine(parsed, **engine_options)
    except ModuleNotFoundError as exc:  # the URL's driver is not installed
        extra = DRIVER_EXTRAS.get(backend, backend)
        raise MissingDependencyError(extra, exc.name or parsed.drivername) from exc
    events = engine
    if backend == "sqlite":
        if file_db:
            sa.event.listen(events, "connect", sqlite_wal(_sleep))
    elif not engine_options.get("pool_pre_ping"):
        ping_when_idle(events, idle_ping_seconds)
    if reset_open_only:
        rollback_only_open(events)
    if multi:
        mark_multi_statements(engine)
    return engine


def _sleep(seconds: float) -> None:
    """Wait inside a pool event (the WAL set-up's retries)."""
    time.sleep(seconds)


def to_the_end(work: T) -> T:
    """The sync twin is never cancelled mid-call: the work has already run."""
    return work


def on_connection(conn: Connection, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
    """Run ``fn(sync_connection, ...)`` (SQLAlchemy's inspector and DDL) on ``conn``."""
    return fn(conn, *args, **kw)


MEMORY_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()


def memory_lock(engine: Engine) -> threading.Lock:
    """One lock per ``:memory:`` engine: its one shared connection serves one caller at a
    time."""
    key = engine
    return MEMORY_LOCKS.setdefault(key, threading.Lock())
