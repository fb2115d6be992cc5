"""What differs between SQL databases, and nothing else (selected by ``engine.dialect.name``).

``SqlDialect`` is the portable default built on SQLAlchemy Core; a dialect subclass overrides
only what Core does not abstract: column types and collations, how a write transaction
begins and locks the conversation, which errors mean "lost a race, retry", and (where the
database allows it) a faster append. Dialects do no I/O: they hand statements and flags to
the repository, whose async source and generated sync twin run them. An unknown dialect is
an error listing the supported ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import CursorResult, Dialect
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.types import TypeDecorator

from chatmem.core.backend import InvalidArgumentError

if TYPE_CHECKING:
    from .._schema import Tables


# engine.dialect.name -> "module:Class" (imported only when used)
DIALECTS: dict[str, str] = {
    "sqlite": "chatmem.jdbc._native.sqlite:SqliteDialect",
    "postgresql": "chatmem.jdbc._native.postgresql:PostgresDialect",
    "mysql": "chatmem.jdbc._native.mysql:MysqlDialect",
    "mariadb": "chatmem.jdbc._native.mysql:MysqlDialect",
    "mssql": "chatmem.jdbc._native.mssql:MssqlDialect",
    "oracle": "chatmem.jdbc._native.oracle:OracleDialect",
}


ID_BYTES = 1020
"""255 characters of up to 4 UTF-8 bytes each."""


class Utf8Id(TypeDecorator[str]):
    """A conversation id stored as its UTF-8 bytes (``VARBINARY``; ``RAW`` on Oracle), so the
    database compares ids byte for byte: never case-, accent- or trailing-space-folded."""

    impl = sa.types.VARBINARY(ID_BYTES)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "oracle":
            from sqlalchemy.dialects.oracle import RAW

            return dialect.type_descriptor(RAW(ID_BYTES))
        return dialect.type_descriptor(sa.types.VARBINARY(ID_BYTES))

    def process_bind_param(self, value: str | None, dialect: Dialect) -> bytes | None:
        return None if value is None else value.encode("utf-8")

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else bytes(value).decode("utf-8")


class SqlDialect:
    """Portable behaviour; subclasses override what their database does differently."""

    name: ClassVar[str] = "generic"
    embedded: ClassVar[bool] = False
    limit_in_union_member: ClassVar[bool] = False
    """True where ``(SELECT ..) UNION ALL (SELECT .. ORDER BY .. LIMIT n)`` is valid SQL; the
    window read then needs no derived tables (6x faster on MariaDB)."""
    read_isolation: ClassVar[str | None] = None
    """Isolation level for reads (each is one statement); ``AUTOCOMMIT`` saves the BEGIN and
    ROLLBACK round trips where the driver switches it without a round trip (psycopg)."""

    def id_type(self) -> sa.types.TypeEngine[Any]:
        """Conversation ids: up to 255 characters, compared exactly (binary, no padding)."""
        return sa.String(255)

    def text_type(self) -> sa.types.TypeEngine[Any]:
        return sa.Text()

    def payload_type(self) -> sa.types.TypeEngine[Any]:
        """The JSON document holding everything but the text."""
        return sa.Text()

    def timestamp_type(self) -> sa.types.TypeEngine[Any]:
        """A naive UTC timestamp with microseconds."""
        return sa.DateTime()

    def adapt_tables(self, tables: Tables) -> None:
        """Set dialect options on the built tables, keys and index (for example SQL Server's
        nonclustered primary keys); nothing by default."""

    write_begin: ClassVar[str | None] = None
    """SQL that opens a write transaction on an autocommit connection (SQLite: ``BEGIN
    IMMEDIATE``, which takes the write lock up front); None: the driver's own BEGIN."""

    def lock_statement(self, conversations: sa.Table) -> Any:
        """Read the conversation's ``next_position`` (binds ``cid``) and lock its row until
        the write transaction ends."""
        c = conversations.c
        return (
            sa.select(c.next_position)
            .where(c.conversation_id == sa.bindparam("cid"))
            .with_for_update()
        )

    def is_retryable(self, exc: DBAPIError) -> bool:
        """True when the error means a concurrent writer won (duplicate key, deadlock)."""
        return isinstance(exc, IntegrityError)

    def reserve_statement(self, conversations: sa.Table) -> Any | None:
        """One statement that creates or bumps the conversation row by ``:k`` positions and
        returns the new ``next_position`` (binds ``cid``, ``k``, ``now``); None when the
        database has no upsert with RETURNING (the repository then locks, reads, updates)."""
        return None

    def reserved_position(self, result: CursorResult[Any]) -> int:
        """The conversation's new ``next_position`` from ``reserve_statement``'s result."""
        return int(result.scalar_one())

    def append_statement(self, tables: Tables) -> Any | None:
        """One statement that reserves positions and appends a batch after every stored row,
        atomic on its own, so it runs in autocommit mode: one round trip per append. It may
        trim as ``_append``'s ``trim_to`` allows. Bound with ``append_parameters``. None: the
        repository appends in a transaction (reserve, insert, sometimes trim)."""
        return None

    def append_parameters(
        self, cid: str, rows: Sequence[dict[str, Any]], trim_to: int | None
    ) -> dict[str, Any]:
        """Parameters of ``append_statement`` for ``rows`` (``to_row`` output, positions
        0..k-1 relative to the reserved start)."""
        raise NotImplementedError


def upsert_returning(insert: Any, conversations: sa.Table) -> Any:
    """``INSERT .. ON CONFLICT (conversation_id) DO UPDATE .. RETURNING next_position`` for
    dialects whose ``insert`` construct has ``on_conflict_do_update`` (SQLite, PostgreSQL)."""
    c = conversations.c
    stmt = insert(conversations).values(
        conversation_id=sa.bindparam("cid"),
        next_position=sa.bindparam("k"),
        updated_at=sa.bindparam("now"),
    )
    return stmt.on_conflict_do_update(
        index_elements=[c.conversation_id],
        set_={
            "next_position": c.next_position + stmt.excluded.next_position,
            "updated_at": stmt.excluded.updated_at,
        },
    ).returning(c.next_position)


ASYNC_DIALECTS = ("mariadb", "mysql", "postgresql", "sqlite")
"""The databases the async twin supports (SQL Server and Oracle have no async twin yet)."""


def no_async_twin(name: str) -> InvalidArgumentError:
    """The error for a database the async twin does not support."""
    return InvalidArgumentError(
        "url",
        f"there is no async twin for the {name!r} dialect in chatmem.jdbc (async dialects: "
        f"{', '.join(ASYNC_DIALECTS)}); use JdbcChatMemoryRepository for {name!r}",
    )


def async_dialect_for(name: str) -> SqlDialect:
    """``dialect_for`` for the async twin: a database it does not support is an error."""
    if name not in ASYNC_DIALECTS:
        raise no_async_twin(name)
    return dialect_for(name)


def dialect_for(name: str) -> SqlDialect:
    """The dialect for ``engine.dialect.name``; unknown names list the supported ones."""
    try:
        target = DIALECTS[name]
    except KeyError:
        raise InvalidArgumentError(
            "engine", f"unsupported database {name!r}; supported: {', '.join(sorted(DIALECTS))}"
        ) from None
    module_name, class_name = target.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    dialect: SqlDialect = cls()
    return dialect
