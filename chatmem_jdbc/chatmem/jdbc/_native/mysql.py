"""MySQL 8 and MariaDB 10.5+ (PyMySQL; the async twin: aiomysql): what SQLAlchemy Core does
not abstract.

- Ids: ``VARBINARY(1020)`` holding the id's UTF-8 bytes (255 characters of at most 4 bytes).
  Binary strings compare byte for byte with no padding, on both products and whatever the
  server's defaults: MariaDB's default collations are case- and accent-insensitive and
  PAD SPACE (``'a' = 'A' = 'a '``), ``utf8mb4_bin`` still pads, and the NO PAD binary
  collation is spelled differently on MySQL (``utf8mb4_0900_bin``) and MariaDB
  (``utf8mb4_nopad_bin``). UTF-8 byte order is code-point order, so listing pages sort as
  Python sorts.
- Text and payload: ``LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`` (``TEXT`` stops at
  64 KiB; the server's default charset may be latin1). The payload is stored verbatim: on
  MariaDB ``JSON`` is this very type, while MySQL's binary ``JSON`` would turn integers beyond
  64 bits into doubles.
- Timestamps: ``DATETIME(6)``; plain ``DATETIME`` rounds to seconds, which once scrambled the
  order of Spring AI's messages.
- Reserve in one statement: ``INSERT .. ON DUPLICATE KEY UPDATE next_position =
  LAST_INSERT_ID(next_position + k)`` creates or row-locks the conversation and hands the new
  ``next_position`` back in the OK packet (``cursor.lastrowid``), so an append is that
  statement, one multi-row INSERT and the COMMIT. On engines ``make_engine`` made, the fast
  path (``AsyncMysqlFastPath`` in ``_native/_async/mysql.py``) sends the three as one
  multi-statement query, the INSERT placing rows at ``LAST_INSERT_ID() - k + i``, and each
  read with its COMMIT: one round trip per operation.
- Retry: duplicate keys, deadlocks (1213) and lock wait timeouts (1205).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import DBAPIError

from .dialects import SqlDialect, Utf8Id

if TYPE_CHECKING:
    from .._schema import Tables

RETRYABLE_ERRNOS = frozenset({1062, 1205, 1213})  # duplicate key, lock wait, deadlock
"""ER_LOCK_WAIT_TIMEOUT, ER_LOCK_DEADLOCK."""


def utf8mb4_longtext() -> sa.types.TypeEngine[Any]:
    return mysql.LONGTEXT(charset="utf8mb4", collation="utf8mb4_bin")


class MysqlDialect(SqlDialect):
    """MySQL 8.0+ and MariaDB 10.5+ through PyMySQL or aiomysql (InnoDB)."""

    name = "mysql"
    limit_in_union_member = True

    def id_type(self) -> sa.types.TypeEngine[Any]:
        return Utf8Id()

    def text_type(self) -> sa.types.TypeEngine[Any]:
        return utf8mb4_longtext()

    def payload_type(self) -> sa.types.TypeEngine[Any]:
        return utf8mb4_longtext()

    def timestamp_type(self) -> sa.types.TypeEngine[Any]:
        return mysql.DATETIME(fsp=6)

    def is_retryable(self, exc: DBAPIError) -> bool:
        return _errno(exc) in RETRYABLE_ERRNOS

    def reserve_statement(self, conversations: sa.Table) -> Any | None:
        c = conversations.c
        k = sa.bindparam("k", type_=sa.BigInteger)
        stmt = mysql.insert(conversations).values(
            conversation_id=sa.bindparam("cid"),
            next_position=sa.func.last_insert_id(k),
            updated_at=sa.bindparam("now"),
        )
        return stmt.on_duplicate_key_update(
            next_position=sa.func.last_insert_id(c.next_position + k),
            updated_at=sa.bindparam("now"),
        )

    def reserved_position(self, result: CursorResult[Any]) -> int:
        # LAST_INSERT_ID(expr) sets the OK packet's insert id, which PyMySQL (and aiomysql,
        # built on it) reports here.
        return int(result.lastrowid)


def _errno(exc: DBAPIError) -> int | None:
    args = getattr(exc.orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def mysql_read_statements(tables: Tables) -> tuple[Any, Any]:
    """``(window, last)`` for the MySQL fast path, fetching only what decoding needs, with
    the timestamp as text: PyMySQL parses every field of every row in Python, and the id
    column and its ``DATETIME`` conversion were most of a window read's client time."""
    m = tables.messages
    created = sa.cast(m.c.created_at, sa.String).label("created_at")  # CAST(.. AS CHAR)
    cols = (m.c.position, m.c.message_type, m.c.content, m.c.payload, created)
    in_conv = m.c.conversation_id == sa.bindparam("cid")
    newest = m.c.position.desc()
    others = sa.select(*cols).where(in_conv, m.c.is_system == 0).order_by(newest)
    window = sa.union_all(
        sa.select(*cols).where(in_conv, m.c.is_system == 1), others.limit(sa.bindparam("n"))
    )
    return window, sa.select(*cols).where(in_conv).order_by(newest).limit(sa.bindparam("n"))
