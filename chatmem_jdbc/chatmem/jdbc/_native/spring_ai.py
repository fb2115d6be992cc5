"""The Spring AI layout's pure parts: Spring AI 2.0's DDL and statements for its table, which
messages it can hold, and its rows decoded (the repository in ``_async/spring_ai.py``)."""

# The SQL below is built from the table name, a validated SQL identifier, never user text.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa

from chatmem.core import (
    AssistantMessage,
    Message,
    SchemaMode,
    SystemMessage,
    UserMessage,
)
from chatmem.core.backend import (
    SPRING_AI_LOSSY,
    InvalidArgumentError,
    WindowEdit,
    add_to_window,
)

SPRING_AI_TABLE_NAME = "SPRING_AI_CHAT_MEMORY"
"""Spring AI's table (2.0.1 hard-codes it: another name is for chatmem readers only)."""
SPRING_AI_INITIALIZE_SCHEMA: SchemaMode = "embedded"
"""Spring Boot's ``spring.ai.chat.memory.repository.jdbc.initialize-schema`` default: create
the table on embedded databases only, so on a server the table must exist already."""
LOSSY = SPRING_AI_LOSSY
"""What a write may drop when named in ``lossy`` (each is refused otherwise)."""

TYPES = {"USER": UserMessage, "ASSISTANT": AssistantMessage, "SYSTEM": SystemMessage}


def _export_only_schema(table: str, flavour: str) -> list[str]:
    """Spring AI 2.0's ``schema-sqlserver.sql`` and ``schema-oracle.sql`` for ``table``
    (DDL export only: no SQL Server or Oracle server runs here, so the layout is not run on
    them)."""
    if flavour == "mssql":
        return [
            f"IF OBJECT_ID('{table}', 'U') IS NULL\n"
            f"CREATE TABLE {table} (\n"
            "    conversation_id VARCHAR(36) NOT NULL,\n"
            "    content NVARCHAR(MAX) NOT NULL,\n"
            "    type VARCHAR(10) NOT NULL,\n"
            "    [timestamp] DATETIME2 NOT NULL DEFAULT SYSDATETIME(),\n"
            "    sequence_id BIGINT NOT NULL,\n"
            "    CONSTRAINT TYPE_CHECK CHECK (type IN ('USER', 'ASSISTANT', 'SYSTEM', 'TOOL'))\n"
            ")",
            f"IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name ="
            f" '{table}_CONVERSATION_ID_TIMESTAMP_IDX')\n"
            f"CREATE INDEX {table}_CONVERSATION_ID_TIMESTAMP_IDX"
            f" ON {table}(conversation_id, [timestamp] DESC)",
            f"IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name ="
            f" '{table}_CONVERSATION_ID_SEQUENCE_ID_IDX')\n"
            f"CREATE INDEX {table}_CONVERSATION_ID_SEQUENCE_ID_IDX"
            f" ON {table}(conversation_id, sequence_id)",
        ]
    return [
        f"CREATE TABLE {table} (\n"
        "    CONVERSATION_ID VARCHAR2(36 CHAR) NOT NULL,\n"
        "    CONTENT CLOB NOT NULL,\n"
        '    "TYPE" VARCHAR2(10 CHAR) NOT NULL'
        """ CHECK ("TYPE" IN ('USER', 'ASSISTANT', 'SYSTEM', 'TOOL')),\n"""
        '    "TIMESTAMP" TIMESTAMP NOT NULL,\n'
        "    SEQUENCE_ID NUMBER(19) NOT NULL\n"
        ")",
        f"CREATE INDEX {table}_CONVERSATION_ID_TIMESTAMP_IDX"
        f' ON {table}(CONVERSATION_ID, "TIMESTAMP")',
        f"CREATE INDEX {table}_CONVERSATION_ID_SEQUENCE_ID_IDX"
        f" ON {table}(CONVERSATION_ID, SEQUENCE_ID)",
    ]


def _sqlite_schema(table: str) -> list[str]:
    """Spring AI 2.0's ``schema-sqlite.sql`` for ``table`` (``timestamp`` is INTEGER: the
    epoch milliseconds sqlite-jdbc's ``setTimestamp`` stores)."""
    return [
        f"CREATE TABLE IF NOT EXISTS {table} (\n"
        "    conversation_id TEXT NOT NULL,\n"
        "    content TEXT NOT NULL,\n"
        "    type TEXT NOT NULL,\n"
        "    timestamp INTEGER NOT NULL,\n"
        "    sequence_id INTEGER NOT NULL,\n"
        "    CHECK (type IN ('USER', 'ASSISTANT', 'SYSTEM', 'TOOL'))\n"
        ")",
        f"CREATE INDEX IF NOT EXISTS {table}_CONVERSATION_ID_TIMESTAMP_IDX\n"
        f"ON {table}(conversation_id, timestamp)",
        f"CREATE INDEX IF NOT EXISTS {table}_CONVERSATION_ID_SEQUENCE_ID_IDX\n"
        f"ON {table}(conversation_id, sequence_id)",
    ]


def spring_ai_schema(table: str, flavour: str = "postgresql") -> list[str]:
    """Spring AI 2.0's DDL for ``table``: its ``schema-postgresql.sql``,
    ``schema-mariadb.sql`` (``flavour`` ``"mysql"`` gives the MariaDB one too) or
    ``schema-sqlite.sql``; for export only, ``"mssql"`` and ``"oracle"`` give
    ``schema-sqlserver.sql`` and ``schema-oracle.sql``."""
    if flavour in EXPORT_ONLY:
        return _export_only_schema(table, flavour)
    if flavour == "sqlite":
        return _sqlite_schema(table)
    if flavour == "postgresql":
        ts = '"timestamp"'
        create = (
            f"CREATE TABLE IF NOT EXISTS {table} (\n"
            "    conversation_id VARCHAR(36) NOT NULL,\n"
            "    content TEXT NOT NULL,\n"
            "    type VARCHAR(10) NOT NULL"
            " CHECK (type IN ('USER', 'ASSISTANT', 'SYSTEM', 'TOOL')),\n"
            f"    {ts} TIMESTAMP NOT NULL,\n"
            "    sequence_id BIGINT NOT NULL\n"
            ")"
        )
    else:
        ts = "`timestamp`"
        create = (
            f"CREATE TABLE IF NOT EXISTS {table} (\n"
            "    conversation_id VARCHAR(36) NOT NULL,\n"
            "    content TEXT NOT NULL,\n"
            "    type VARCHAR(10) NOT NULL,\n"
            f"    {ts} TIMESTAMP NOT NULL,\n"
            "    sequence_id BIGINT NOT NULL,\n"
            "    CONSTRAINT TYPE_CHECK CHECK (type IN ('USER', 'ASSISTANT', 'SYSTEM', 'TOOL'))\n"
            ")"
        )
    return [
        create,
        f"CREATE INDEX IF NOT EXISTS {table}_CONVERSATION_ID_TIMESTAMP_IDX\n"
        f"ON {table}(conversation_id, {ts})",
        f"CREATE INDEX IF NOT EXISTS {table}_CONVERSATION_ID_SEQUENCE_ID_IDX\n"
        f"ON {table}(conversation_id, sequence_id)",
    ]


def exact_edit(source: list[Message], new: Sequence[Message], max_messages: int) -> WindowEdit:
    """The edit that leaves exactly the window after adding ``new`` (Spring's rule, from
    ``source``: every system message plus at least the last ``max_messages + 1`` others)."""
    result = add_to_window(source, new, max_messages)
    kept = {id(m) for m in result}
    fresh = {id(m) for m in new}
    gone = frozenset(m.position for m in source if id(m) not in kept and m.position is not None)
    others = [
        m.position for m in source if not isinstance(m, SystemMessage) and m.position is not None
    ]
    return WindowEdit(
        delete_positions=gone,
        delete_non_system_below=min(others) if others else None,  # older than the read
        append=tuple(m for m in result if id(m) in fresh),
    )


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def naive_utc(ts: datetime | None) -> datetime:
    ts = ts or datetime.now(timezone.utc)
    return ts.astimezone(timezone.utc).replace(tzinfo=None)


def epoch_millis(ts: datetime | None) -> int:
    """``ts`` (now when None) as the epoch milliseconds Spring's SQLite column holds
    (sqlite-jdbc stores a ``java.sql.Timestamp`` so: finer digits are dropped, as there)."""
    return (naive_utc(ts) - EPOCH.replace(tzinfo=None)) // timedelta(milliseconds=1)


def instant(ts: datetime | int) -> datetime:
    """A stored timestamp as an aware UTC datetime: naive UTC on the servers, epoch
    milliseconds on SQLite."""
    if isinstance(ts, int):
        return EPOCH + timedelta(milliseconds=ts)
    return ts.replace(tzinfo=timezone.utc)


def decode(result: Any) -> list[Message]:
    """Rows ``(content, type, timestamp, sequence_id)`` as messages; TOOL rows are skipped,
    as Spring's reader skips them."""
    out: list[Message] = []
    for content, kind, ts, seq in result:
        cls = TYPES.get(kind)
        if cls is None:
            continue
        message = cls(content)
        out.append(message.with_store_fields(created_at=instant(ts), position=seq))
    return out


EXPORT_ONLY = ("mssql", "oracle")
"""Databases whose Spring DDL ``chatmem schema`` exports, where the layout does not run."""


def ddl_flavour_of(backend: str) -> str:
    """The DDL flavour for ``backend``: ``flavour_of``'s, or an ``EXPORT_ONLY`` one."""
    return backend if backend in EXPORT_ONLY else flavour_of(backend)


def flavour_of(backend: str) -> str:
    """``"postgresql"``, ``"mysql"`` (MariaDB too) or ``"sqlite"``: the databases this
    layout runs on."""
    if backend.startswith("postgres"):
        return "postgresql"
    if backend in ("mysql", "mariadb"):
        return "mysql"
    if backend == "sqlite":
        return "sqlite"
    raise InvalidArgumentError(
        "url",
        f"the spring-ai layout runs on PostgreSQL, MariaDB/MySQL and SQLite, not {backend}"
        " (SQL Server and Oracle: DDL export only, through schema_statements_for_url)",
    )


def statements(table: str, flavour: str) -> dict[str, Any]:
    """The SQL of this layout for ``table`` (a validated identifier, never user text)."""
    t = table
    if flavour == "postgresql":
        cols = 'content, type, "timestamp", sequence_id'
        ts = '"timestamp"'
        special = {
            "exists": sa.text("SELECT to_regclass(:name)").bindparams(name=t.lower()),
            "lock": sa.text("SELECT pg_advisory_xact_lock(hashtext(:cid))"),
        }
    elif flavour == "sqlite":  # no lock statement: BEGIN IMMEDIATE serialises the writers
        cols = "content, type, timestamp, sequence_id"
        ts = "timestamp"
        special = {
            "exists": sa.text(
                "SELECT name FROM sqlite_master"
                " WHERE type = 'table' AND name = :name COLLATE NOCASE"
            ).bindparams(name=t),
        }
    else:
        cols = "content, type, `timestamp`, sequence_id"
        ts = "`timestamp`"
        special = {
            "exists": sa.text(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = DATABASE() AND table_name = :name"
            ).bindparams(name=t),
            # one lock name per conversation (ids are at most 36 characters: under 64)
            "lock": sa.text("SELECT GET_LOCK(CONCAT('chatmem-spring:', :cid), 60)"),
            "unlock": sa.text("SELECT RELEASE_LOCK(CONCAT('chatmem-spring:', :cid))"),
        }
    return {
        **special,
        "next": sa.text(
            f"SELECT COALESCE(MAX(sequence_id), -1) + 1 FROM {t} WHERE conversation_id = :cid"
        ),
        "find": sa.text(
            f"SELECT {cols} FROM {t} WHERE conversation_id = :cid ORDER BY sequence_id"
        ),
        "find_last": sa.text(
            f"SELECT {cols} FROM {t} WHERE conversation_id = :cid"
            " ORDER BY sequence_id DESC LIMIT :n"
        ),
        # every system message plus the last n others, oldest first
        "window": sa.text(
            f"SELECT {cols} FROM {t} WHERE conversation_id = :cid AND (type = 'SYSTEM'"
            f" OR sequence_id >= (SELECT MIN(sequence_id) FROM (SELECT sequence_id FROM {t}"
            " WHERE conversation_id = :cid AND type <> 'SYSTEM'"
            " ORDER BY sequence_id DESC LIMIT :n) AS tail)) ORDER BY sequence_id"
        ),
        "insert": sa.text(
            f"INSERT INTO {t} (conversation_id, content, type, {ts}, sequence_id)"
            " VALUES (:cid, :content, :type, :ts, :seq)"
        ),
        "delete": sa.text(f"DELETE FROM {t} WHERE conversation_id = :cid"),
        "delete_at": sa.text(
            f"DELETE FROM {t} WHERE conversation_id = :cid AND sequence_id IN :positions"
        ).bindparams(sa.bindparam("positions", expanding=True)),
        "delete_below": sa.text(
            f"DELETE FROM {t} WHERE conversation_id = :cid AND type <> 'SYSTEM'"
            " AND sequence_id < :below"
        ),
        "ids_first": sa.text(
            f"SELECT DISTINCT conversation_id FROM {t} ORDER BY conversation_id LIMIT :n"
        ),
        "ids_after": sa.text(
            f"SELECT DISTINCT conversation_id FROM {t} WHERE conversation_id > :after"
            " ORDER BY conversation_id LIMIT :n"
        ),
    }
