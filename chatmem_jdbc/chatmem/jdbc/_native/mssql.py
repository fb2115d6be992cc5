"""SQL Server 2019+ (pymssql): what SQLAlchemy Core does not abstract.

- Ids: ``VARBINARY(1020)`` holding the id's UTF-8 bytes. SQL Server compares ``NVARCHAR`` and
  ``VARCHAR`` with ANSI padding in every collation, ``_BIN2`` included (``N'a' = N'a '`` is
  true), and the default collations also fold case and accents; binary values compare byte
  for byte. Ids never hold NUL characters (core rejects them), so no two ids differ only in
  trailing zero bytes.
- Text and payload: ``NVARCHAR(max)`` (UTF-16, any Unicode text; the payload stays the exact
  JSON text, usable with ``JSON_VALUE``/``OPENJSON``).
- Keys: nonclustered primary keys (a clustered key holds at most 900 bytes; an id up to 1020),
  so the message table is a heap read through the window index.
- Timestamps: ``DATETIME2(6)`` (``DATETIME`` rounds to 1/300 s).
- Locking: SQLAlchemy renders no ``FOR UPDATE`` on SQL Server; the conversation row is read
  ``WITH (UPDLOCK, ROWLOCK)`` inside the write transaction instead. Enable
  ``READ_COMMITTED_SNAPSHOT`` on the database (Azure SQL's default) so readers never block on,
  or deadlock with, writers.
- Retry: duplicate keys, deadlock victims (1205) and lock timeouts (1222).

Driver: pymssql (its wheels bundle FreeTDS, so no system ODBC driver is needed, and
SQLAlchemy 2.0 and 2.1 both support it). ``mssql+pyodbc`` and ``mssql+mssqlpython`` engines
work with the same dialect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import mssql
from sqlalchemy.exc import DBAPIError, IntegrityError

from .dialects import SqlDialect, Utf8Id

if TYPE_CHECKING:
    from .._schema import Tables

RETRYABLE_ERRNOS = frozenset({1205, 1222})
"""Deadlock victim, lock request timeout."""


class MssqlDialect(SqlDialect):
    """SQL Server 2019+ and Azure SQL."""

    name = "mssql"

    def id_type(self) -> sa.types.TypeEngine[Any]:
        return Utf8Id()

    def text_type(self) -> sa.types.TypeEngine[Any]:
        return sa.NVARCHAR()

    def payload_type(self) -> sa.types.TypeEngine[Any]:
        return sa.NVARCHAR()

    def timestamp_type(self) -> sa.types.TypeEngine[Any]:
        return mssql.DATETIME2(precision=6)  # type: ignore[no-untyped-call]

    def adapt_tables(self, tables: Tables) -> None:
        # A clustered key is limited to 900 bytes; a 255-character id is up to 1020.
        for table in (tables.conversations, tables.messages):
            table.primary_key.dialect_kwargs["mssql_clustered"] = False

    def lock_statement(self, conversations: sa.Table) -> Any:
        return lock_statement(conversations)

    def is_retryable(self, exc: DBAPIError) -> bool:
        return isinstance(exc, IntegrityError) or _errno(exc) in RETRYABLE_ERRNOS


def lock_statement(conversations: sa.Table) -> sa.Select[Any]:
    """``SELECT next_position FROM <conv> WITH (UPDLOCK, ROWLOCK) WHERE conversation_id = :cid``."""
    c = conversations.c
    return (
        sa.select(c.next_position)
        .with_hint(conversations, "WITH (UPDLOCK, ROWLOCK)", "mssql")
        .where(c.conversation_id == sa.bindparam("cid"))
    )


def _errno(exc: DBAPIError) -> int | None:
    """The server's error number (pymssql and pyodbc put it in different places)."""
    args = getattr(exc.orig, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    number = getattr(exc.orig, "number", None)
    return number if isinstance(number, int) else None
