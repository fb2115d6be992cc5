"""This twin's engine factory, with the settings chat memory needs, and how work runs on an
engine (to its end, whatever happens to its caller; one caller at a time on ``:memory:``).
The I/O-free parts both twins share (default drivers, WAL hook, idle pings) are in
``_connect.py``.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.util import await_only

from chatmem.core import MissingDependencyError

from .._connect import (
    ASYNC_POOL_SIZE,
    DRIVER_EXTRAS,
    IDLE_PING_SECONDS,
    allow_multi_statements,
    async_engine_url,
    mark_multi_statements,
    ping_when_idle,
    rollback_only_open,
    sqlite_options,
    sqlite_wal,
)

ASYNC = True

T = TypeVar("T")


def make_async_engine(
    url: str, *, idle_ping_seconds: float = IDLE_PING_SECONDS, **engine_options: Any
) -> AsyncEngine:
    """An engine for ``url`` with settings chat memory needs (SQLite: WAL, busy timeout,
    one shared connection for ``:memory:``; servers: pooled connections pinged only after
    ``idle_ping_seconds`` idle; MySQL/MariaDB: a returned connection rolled back only when
    it holds an open transaction, and PyMySQL/aiomysql connections accept multi-statement
    queries for the fast path); a URL without a driver gets this twin's default for its
    database (``async_engine_url`` picks it)."""
    parsed = async_engine_url(url)
    backend = parsed.get_backend_name()
    file_db = backend == "sqlite" and sqlite_options(parsed, engine_options)
    reset_open_only = backend in ("mysql", "mariadb") and "pool_reset_on_return" not in (
        engine_options
    )
    if reset_open_only:
        engine_options["pool_reset_on_return"] = None  # rollback_only_open does it
    if ASYNC:
        sized = {"poolclass", "pool_size", "max_overflow"} & set(engine_options)
        if backend != "sqlite" and not sized:
            engine_options.update(pool_size=ASYNC_POOL_SIZE, max_overflow=0)
    multi = backend in ("mysql", "mariadb") and allow_multi_statements(
        parsed.drivername, engine_options
    )
    try:
        engine = create_async_engine(parsed, **engine_options)
    except ModuleNotFoundError as exc:  # the URL's driver is not installed
        extra = DRIVER_EXTRAS.get(backend, backend)
        raise MissingDependencyError(extra, exc.name or parsed.drivername) from exc
    if ASYNC:  # pool events are sync code: they attach to the engine under the asyncio one
        events = engine.sync_engine
    else:
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
    if ASYNC:
        # a pool event is sync code: await asyncio's sleep from SQLAlchemy's greenlet, so
        # the event loop keeps running
        await_only(asyncio.sleep(seconds))
    else:
        time.sleep(seconds)


if ASYNC:
    UNFINISHED: set[asyncio.Future[Any]] = set()

    async def to_the_end(work: Awaitable[T]) -> T:
        """Await ``work`` (one read, or one write with its retries) in a task of its own that a
        cancelled caller does not interrupt: the caller's CancelledError is raised at once,
        while the statement runs to its commit or rollback and its connection goes back to
        the pool clean. (A cancel landing inside a driver call would leave old or new too,
        but SQLAlchemy then discards the connection mid-protocol, which aiosqlite and
        aiomysql do not survive cleanly.)"""
        task = asyncio.ensure_future(work)
        UNFINISHED.add(task)
        task.add_done_callback(finished)
        return await asyncio.shield(task)

    async def settle() -> None:
        """Wait for the work cancelled callers left running on this event loop."""
        loop = asyncio.get_running_loop()
        mine = [t for t in UNFINISHED if t.get_loop() is loop]
        if mine:
            await asyncio.gather(*mine, return_exceptions=True)

    def finished(task: asyncio.Future[Any]) -> None:
        UNFINISHED.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a cancelled caller no longer waits for it
else:

    def to_the_end(work: T) -> T:
        """The sync twin is never cancelled mid-call: the work has already run."""
        return work


async def on_connection(conn: AsyncConnection, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
    """Run ``fn(sync_connection, ...)`` (SQLAlchemy's inspector and DDL) on ``conn``."""
    if ASYNC:  # through ``run_sync``, in SQLAlchemy's greenlet
        return await conn.run_sync(fn, *args, **kw)
    else:
        return fn(conn, *args, **kw)


MEMORY_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


def memory_lock(engine: AsyncEngine) -> asyncio.Lock:
    """One lock per ``:memory:`` engine: its one shared connection serves one caller at a
    time."""
    if ASYNC:
        key = engine.sync_engine
    else:
        key = engine
    return MEMORY_LOCKS.setdefault(key, asyncio.Lock())
