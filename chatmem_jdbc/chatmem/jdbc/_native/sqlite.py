"""SQLite (the embedded default): its dialect, and its two hot operations on sqlite3 itself.

- Writers take the database lock up front (``BEGIN IMMEDIATE``), so a transaction never has
  to upgrade a read lock and die with ``SQLITE_BUSY``; readers are not blocked in WAL mode.
- Reserve in one statement (SQLite 3.35+): ``INSERT .. ON CONFLICT DO UPDATE .. RETURNING``.
- Fast path (``_native/_async/sqlite.py``): on an embedded database the statements cost microseconds
  and SQLAlchemy's per-statement bookkeeping costs several times more, so a window append
  and a window read run the same SQL (compiled once by SQLAlchemy for this engine) directly
  on the pooled sqlite3 (async twin: aiosqlite) connection. Driver errors still go through
  ``translate_errors``.
- Retry: duplicate keys and "database is locked".
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from .dialects import SqlDialect, upsert_returning


class SqliteDialect(SqlDialect):
    """SQLite 3.35+ through the standard library's sqlite3 (pysqlite; aiosqlite, which runs
    sqlite3 in a thread of its own per connection, for the async twin)."""

    name = "sqlite"
    embedded = True
    write_begin = "BEGIN IMMEDIATE"

    def lock_statement(self, conversations: sa.Table) -> Any:
        # BEGIN IMMEDIATE already holds the database's write lock: a plain read suffices.
        c = conversations.c
        return sa.select(c.next_position).where(c.conversation_id == sa.bindparam("cid"))

    def is_retryable(self, exc: DBAPIError) -> bool:
        # A concurrent writer won only on a unique/primary key or a lock; a CHECK, NOT NULL
        # or trigger failure is the caller's error and must surface, not be retried.
        message = str(exc.orig)
        return "UNIQUE constraint failed" in message or "database is locked" in message

    def reserve_statement(self, conversations: sa.Table) -> Any | None:
        if sqlite3.sqlite_version_info < (3, 35):
            return None
        from sqlalchemy.dialects.sqlite import insert

        return upsert_returning(insert, conversations)


def sqlite_text(ts: datetime) -> str:
    """SQLAlchemy's SQLite DateTime text form (always with microseconds, the year in 4 digits)."""
    return ts.replace(tzinfo=None).isoformat(" ", "microseconds")
