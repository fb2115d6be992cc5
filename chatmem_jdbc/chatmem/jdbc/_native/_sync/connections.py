# Generated from chatmem_jdbc/chatmem/jdbc/_native/_async/connections.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""What every fast path shares: the driver connection kept per engine between calls, pool
calls, and driver errors translated as SQLAlchemy's would be (``as_dbapi_error``)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolProxiedConnection, QueuePool

from chatmem.core import Message

from ..._codec import from_values
from ..._errors import as_dbapi_error, translated
from ..dialects import SqlDialect

T = TypeVar("T")


def pool_call(call: Callable[..., T], *args: Any) -> T:
    """Run a pool operation (checkout, checkin, invalidate)."""
    return call(*args)


class KeptConnection:
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

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """The kept connection when it is free, else one checked out of the pool."""
        with self.checkout() as (conn, _pooled):
            yield conn

    @contextmanager
    def checkout(self) -> Iterator[tuple[Any, PoolProxiedConnection | None]]:
        """``(driver connection, None)`` for the kept one, ``(driver connection, pooled)``
        for one checked out of the pool because the kept one was busy."""
        pool_owner = self.pool_owner()
        assert pool_owner is not None  # the caller holds the engine
        if not (self.keep and self.lock.acquire(blocking=False)):
            raw = pool_call(pool_owner.raw_connection)
            try:
                yield raw.driver_connection, raw
            finally:
                pool_call(raw.close)
            return
        try:
            now = time.monotonic()
            if self.conn is not None and (
                self.pid != os.getpid()
                or (self.max_idle is not None and now - self.used > self.max_idle)
            ):
                self._close()
            if self.conn is None:
                raw = pool_call(pool_owner.raw_connection)
                conn = raw.driver_connection  # (None once detached)
                raw.detach()
                self.conn, self.pid = conn, os.getpid()
            try:
                yield self.conn, None
            except BaseException:
                self._close()  # its state after a failure is not worth trusting
                raise
            self.used = time.monotonic()
        finally:
            self.lock.release()

    def _close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None and self.pid == os.getpid():
            with contextlib.suppress(Exception):
                conn.close()

    def retire(self, _engine: Any) -> None:
        """``engine_disposed``: close the kept connection with the pool's (if it is in use,
        its user finishes and it is closed at the engine's garbage collection)."""
        if not self.lock.acquire(blocking=False):
            return
        try:
            self._close()
        finally:
            self.lock.release()


_KEPT: weakref.WeakKeyDictionary[Any, KeptConnection] = weakref.WeakKeyDictionary()
_KEPT_LOCK = threading.Lock()


def kept_connection(engine: Engine, max_idle: float | None = None) -> KeptConnection:
    """The engine's kept connection (one per engine, shared by its repositories); none is
    kept when ``max_idle`` is 0 (a pool that pings at every checkout: its user wants every
    connection checked before use)."""
    pool_owner = engine
    with _KEPT_LOCK:
        kept = _KEPT.get(pool_owner)
        if kept is None:
            keep = isinstance(pool_owner.pool, QueuePool) and max_idle != 0
            kept = KeptConnection(pool_owner, keep=keep, max_idle=max_idle)
            _KEPT[pool_owner] = kept
            sa.event.listen(pool_owner, "engine_disposed", kept.retire)
    return kept


class _DriverFastPath(Protocol):
    """What ``fast_path_error`` reads of a server fast path."""

    @property
    def dialect(self) -> SqlDialect: ...

    @property
    def engine(self) -> Engine: ...


def fast_path_error(
    fast: _DriverFastPath,
    exc: Exception,
    sql: str,
    dbapi_base: type[Exception],
    what: str,
    lost: bool,
    appending: bool,
) -> Exception:
    """The error SQLAlchemy would have raised for a driver error on a fast path, as chatmem's
    error; ``LostRace`` for an append that lost a race (the caller retries it)."""
    wrapped = as_dbapi_error(exc, sql, fast.engine.dialect, dbapi_base, lost=lost)
    if not isinstance(wrapped, DBAPIError):
        return wrapped
    if appending and not lost and fast.dialect.is_retryable(wrapped):
        return LostRace()
    return translated(wrapped, what)


def decode_row(r: tuple[Any, ...]) -> Message:
    """A row of the ``DECODED`` columns, in that order."""
    return from_values(*r)


class LostRace(Exception):
    """A concurrent writer won; the append is retried."""
