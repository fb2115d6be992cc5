# Generated from chatmem_jdbc/chatmem/jdbc/_native/_async/postgresql.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""PostgreSQL's fast path: window read, bounded read and append on psycopg's own connection
(blocking, or non-blocking) in autocommit, one round trip each, kept between calls."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy.engine import Engine

from chatmem.core import Message
from chatmem.core.backend import DecodeCache

from ..._codec import to_row
from ..._connect import idle_seconds_of
from ..._plan import Compiled
from .connections import LostRace, decode_row, fast_path_error, kept_connection, pool_call

if TYPE_CHECKING:
    from ..postgresql import PostgresDialect


class PsycopgFastPath:
    """Window read, bounded read and append on the engine's kept psycopg connection (a pooled
    one when it is busy), in autocommit: one round trip each, no pool checkout; driver errors
    go through the same translation as SQLAlchemy's."""

    def __init__(
        self,
        dialect: PostgresDialect,
        engine: Engine,
        window: Compiled,
        last: Compiled,
        appends: tuple[Compiled, Compiled],
    ) -> None:
        self.dialect, self.engine, self.window, self.last = dialect, engine, window, last
        self.appends = appends  # with the trim, without it (an append that never trims)
        self.kept = kept_connection(engine, max_idle=idle_seconds_of(engine))
        self.cache = DecodeCache()

    @classmethod
    def create(
        cls,
        dialect: PostgresDialect,
        engine: Engine,
        window: Any,
        last: Any,
        append: Any,
        append_untrimmed: Any,
    ) -> PsycopgFastPath | None:
        """The fast path, or None when a statement needs SQLAlchemy's parameter processing."""
        compiled = [Compiled(s, engine.dialect) for s in (window, last, append, append_untrimmed)]
        if not all(c.plain for c in compiled):
            return None
        return cls(dialect, engine, compiled[0], compiled[1], (compiled[2], compiled[3]))

    def _append_sql(self, trim_to: int | None) -> Compiled:
        return self.appends[trim_to is None]

    def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        params = self.window.params(cid=cid, n=non_system_limit)
        return self._read(self.window, params, "reading the window")

    def read_last(self, cid: str, n: int) -> list[Message]:
        return self._read(self.last, self.last.params(cid=cid, n=n), "reading")

    def _read(self, stmt: Compiled, params: dict[str, Any], what: str) -> list[Message]:
        with self._cursor(stmt, what) as cur:
            cur.execute(stmt.sql, params)
            rows = cur.fetchall()
        return self.cache.get_many(rows, decode_row)  # keyed by the row's values, as on SQLite

    def can_append(self, count: int, trim_to: int | None) -> bool:
        return True

    def remember(self, cid: str, start: int, messages: Sequence[Message]) -> None:
        pass  # not cached: its reads' row form (driver-parsed types) is not checked to match

    def append(self, cid: str, messages: Sequence[Message], trim_to: int | None) -> bool:
        rows = [to_row(cid, i, m) for i, m in enumerate(messages)]
        append = self._append_sql(trim_to)
        params = append.params(**self.dialect.append_parameters(cid, rows, trim_to))
        try:
            with self._cursor(append, "appending") as cur:
                cur.execute(append.sql, params)
        except LostRace:
            return False
        return True

    def append_and_read_window(
        self, cid: str, messages: Sequence[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message] | None:
        """The append and the window read sent together in pipeline mode: one round trip.
        The read is its own statement, so its snapshot is taken after the append holds the
        conversation row's lock and holds every write committed before it (one statement
        reading beside a data-modifying CTE would read a snapshot from before that lock, and
        miss a writer that committed while it waited)."""
        rows = [to_row(cid, i, m) for i, m in enumerate(messages)]
        append = self._append_sql(trim_to)
        params = append.params(**self.dialect.append_parameters(cid, rows, trim_to))
        read = self.window.params(cid=cid, n=non_system_limit)
        try:
            with self._cursor(append, "appending") as cur:
                conn = cur.connection
                with conn.pipeline(), conn.cursor() as window:
                    cur.execute(append.sql, params)
                    window.execute(self.window.sql, read)
                    found = window.fetchall()
        except LostRace:
            return None
        return self.cache.get_many(found, decode_row)

    @contextmanager
    def _cursor(self, stmt: Compiled, what: str) -> Iterator[Any]:
        """A cursor in autocommit on the kept connection (or a pooled one when it is busy:
        that one goes back to the pool out of autocommit, as it came)."""
        import psycopg

        lost = True  # until a connection is in hand: the pool's connect error is handed out as is
        try:
            with self.kept.checkout() as (conn, pooled):
                lost = False
                try:
                    if not conn.autocommit:
                        conn.set_autocommit(True)  # client-side in psycopg: no round trip
                    try:
                        with conn.cursor() as cur:
                            yield cur
                    finally:
                        if pooled is not None and not conn.closed:
                            conn.set_autocommit(False)
                except psycopg.Error as exc:
                    # SQLAlchemy's own test, which needs the connection (closed or broken)
                    checked = conn if pooled is None else pooled.dbapi_connection
                    lost = bool(self.engine.dialect.is_disconnect(cast(Any, exc), checked, None))
                    if lost and pooled is not None:
                        pool_call(pooled.invalidate, exc)
                    raise
        except psycopg.Error as exc:
            error = self._translated(exc, stmt, what, lost=lost)
            raise error from error.__cause__

    def _translated(self, exc: Exception, stmt: Compiled, what: str, *, lost: bool) -> Exception:
        import psycopg

        appending = stmt in self.appends
        return fast_path_error(self, exc, stmt.sql, psycopg.Error, what, lost, appending)
