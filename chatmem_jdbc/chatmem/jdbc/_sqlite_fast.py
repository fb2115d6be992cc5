"""The two hot operations on SQLite through the sqlite3 connection itself.

On an embedded database the statements cost microseconds and SQLAlchemy's per-statement
bookkeeping costs several times more, so a window append and a window read run the same
SQL (compiled once by SQLAlchemy for this engine) directly on the pooled sqlite3 connection.
Everything else goes through SQLAlchemy.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from sqlalchemy.engine import Engine

from chatmem.core import BackendError, Message

from ._codec import from_values, to_row
from ._statements import Statements


class _Prepared:
    """A statement compiled once for an engine, with its positional parameter order."""

    def __init__(self, stmt: Any, engine: Engine) -> None:
        compiled = stmt.compile(dialect=engine.dialect)
        self.sql: str = compiled.string
        self.order: tuple[str, ...] = tuple(compiled.positiontup or ())
        self.defaults: dict[str, Any] = {n: b.value for b, n in compiled.bind_names.items()}

    def args(self, **values: Any) -> tuple[Any, ...]:
        return tuple(values[k] if k in values else self.defaults[k] for k in self.order)


class SqliteFastPath:
    """Append and window read on the raw sqlite3 connection (BEGIN IMMEDIATE for writes)."""

    def __init__(self, engine: Engine, sql: Statements, reserve: Any) -> None:
        self.engine = engine
        self.window = _Prepared(sql.window, engine)
        self.reserve = _Prepared(reserve, engine)
        self.insert = _Prepared(sql.insert_messages, engine)
        self.trim_cut = _Prepared(sql.trim_cut, engine)
        self.trim = _Prepared(sql.delete_non_system_below, engine)

    def read_window(self, cid: str, non_system_limit: int) -> list[Message]:
        raw = self.engine.raw_connection()
        try:
            rows = (
                raw.cursor()
                .execute(self.window.sql, self.window.args(cid=cid, n=non_system_limit))
                .fetchall()
            )
        except sqlite3.Error as exc:
            raise BackendError(f"reading the window failed: {exc}") from exc
        finally:
            raw.close()
        return [from_values(r[1], r[3], r[4], r[5], r[6]) for r in rows]

    def append(self, cid: str, messages: Sequence[Message], trim_to: int | None) -> bool:
        """Append atomically; False when the database was busy (the caller retries)."""
        raw = self.engine.raw_connection()
        conn: Any = raw.driver_connection
        previous = conn.isolation_level
        conn.isolation_level = None
        try:
            cur = conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                now = _text(datetime.now(timezone.utc))
                k = len(messages)
                row = cur.execute(self.reserve.sql, self.reserve.args(cid=cid, k=k, now=now))
                start = int(row.fetchone()[0]) - k
                rows = []
                for i, m in enumerate(messages):
                    values = to_row(cid, start + i, m)
                    values["created_at"] = _text(values["created_at"])
                    rows.append(self.insert.args(**values))
                cur.executemany(self.insert.sql, rows)
                if trim_to is not None and (start + k) // trim_to != start // trim_to:
                    cut = cur.execute(
                        self.trim_cut.sql, self.trim_cut.args(cid=cid, skip=trim_to - 1)
                    ).fetchone()
                    if cut is not None:
                        cur.execute(self.trim.sql, self.trim.args(cid=cid, below=cut[0]))
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            return True
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return False
            raise BackendError(f"appending failed: {exc}") from exc
        except sqlite3.Error as exc:
            raise BackendError(f"appending failed: {exc}") from exc
        finally:
            conn.isolation_level = previous
            raw.close()


def _text(ts: datetime) -> str:
    """SQLAlchemy's SQLite DateTime text form (always with microseconds)."""
    return f"{ts.replace(tzinfo=None):%Y-%m-%d %H:%M:%S.%f}"
