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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from sqlalchemy.ext.asyncio import AsyncEngine

from chatmem.core import Message

from ..._connect import allows_multi_statements
from ..._plan import Statements
from ..dialects import SqlDialect
from .mysql import AsyncMysqlFastPath
from .postgresql import AsyncPsycopgFastPath
from .sqlite import SQLITE_DRIVER, AsyncSqliteFastPath

if TYPE_CHECKING:
    from ..._schema import Tables
    from ..postgresql import PostgresDialect


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

    async def append_and_read_window(
        self, cid: str, messages: Sequence[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message] | None:
        """``append`` then ``read_window`` in one round trip (SQLite: one transaction), the
        window exactly what the read after the append returns; None when it lost a race."""
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
        from ..postgresql import fast_path_statements

        pg = cast("PostgresDialect", dialect)
        return AsyncPsycopgFastPath.create(pg, engine, *fast_path_statements(pg, tables, sql))
    if dialect.name == "mysql" and reserve is not None and allows_multi_statements(engine):
        return AsyncMysqlFastPath(dialect, engine, tables, sql, reserve)
    return None
