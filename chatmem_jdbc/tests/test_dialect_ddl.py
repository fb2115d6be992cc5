"""Every dialect's DDL and statements, compiled by SQLAlchemy without a server.

SQL Server and Oracle cannot run on these machines, so this is where their types, collations
and statements are checked (``--backend mssql`` / ``--backend oracle`` run these while their
conformance tests report "not run"). The shipped ``chatmem/jdbc/sql/*.sql`` files are checked
against ``schema_sql``; regenerate them with ``CHATMEM_WRITE_SQL=1`` and the same command.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, oracle, postgresql, sqlite

import chatmem.jdbc
from chatmem.core import InvalidArgumentError
from chatmem.jdbc import DIALECTS, build_tables, schema_sql
from chatmem.jdbc._native.dialects import dialect_for
from chatmem.jdbc._plan import build_statements

SQL_DIR = Path(chatmem.jdbc.__file__).parent / "sql"

# dialect name -> (backend whose run checks it, SQLAlchemy dialects of its supported drivers)
TARGETS: dict[str, tuple[str, list[sa.engine.Dialect]]] = {
    "postgresql": ("postgres", [postgresql.psycopg.dialect()]),
    "mysql": ("mariadb", [mysql.pymysql.dialect()]),
    "mariadb": ("mariadb", [mysql.pymysql.dialect(is_mariadb=True)]),
    "mssql": ("mssql", [mssql.pymssql.dialect(), mssql.pyodbc.dialect()]),
    "oracle": ("oracle", [oracle.oracledb.dialect()]),
    "sqlite": ("sqlite", [sqlite.pysqlite.dialect()]),
}

EXPECTED_DDL: dict[str, list[str]] = {
    "postgresql": [
        'conversation_id VARCHAR(255) COLLATE "C" NOT NULL',
        "payload JSON NOT NULL",
        "created_at TIMESTAMP(6) WITHOUT TIME ZONE NOT NULL",
        "content TEXT",
    ],
    "mysql": [
        "conversation_id VARBINARY(1020) NOT NULL",
        "content LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
        "payload LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL",
        "created_at DATETIME(6) NOT NULL",
        "updated_at DATETIME(6) NOT NULL",
    ],
    "mariadb": [
        "conversation_id VARBINARY(1020) NOT NULL",
        "payload LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL",
        "created_at DATETIME(6) NOT NULL",
    ],
    "mssql": [
        "conversation_id VARBINARY(1020) NOT NULL",
        "content NVARCHAR(max) NULL",
        "payload NVARCHAR(max) NOT NULL",
        "created_at DATETIME2(6) NOT NULL",
        "PRIMARY KEY NONCLUSTERED (conversation_id)",
        "PRIMARY KEY NONCLUSTERED (conversation_id, position)",
    ],
    "oracle": [
        "conversation_id RAW(1020) NOT NULL",
        "content CLOB",
        "payload CLOB NOT NULL",
        "created_at TIMESTAMP NOT NULL",  # Oracle's TIMESTAMP is TIMESTAMP(6)
    ],
    "sqlite": ["conversation_id VARCHAR(255) NOT NULL"],
}

FORBIDDEN_DDL: dict[str, list[str]] = {
    "postgresql": ["JSONB"],  # turns 1e16 into an int
    "mysql": ["DATETIME NOT NULL", " TEXT", "VARCHAR(255)"],
    "mariadb": ["DATETIME NOT NULL", " TEXT", "VARCHAR(255)"],
    "mssql": ["NTEXT", "NVARCHAR(255)", "DATETIME NOT NULL", "PRIMARY KEY (", "KEY CLUSTERED"],
    "oracle": ["VARCHAR2(255", " DATE", " JSON"],
    "sqlite": [],
}


def per_backend(names: list[str]) -> list[Any]:
    return [pytest.param(n, marks=pytest.mark.backend(TARGETS[n][0]), id=n) for n in names]


ALL = per_backend(list(TARGETS))


def tables_for(name: str) -> Any:
    return build_tables("ai_chat_memory", dialect_for(name))


@pytest.mark.parametrize("name", ALL)
def test_ddl_uses_the_types_chosen_for_the_dialect(name: str) -> None:
    ddl = schema_sql(f"{name}://")
    for fragment in EXPECTED_DDL[name]:
        assert fragment in ddl, fragment
    for fragment in FORBIDDEN_DDL[name]:
        assert fragment not in ddl, fragment


@pytest.mark.parametrize("name", ALL)
def test_every_statement_compiles(name: str) -> None:
    chosen = dialect_for(name)
    tables = tables_for(name)
    statements = build_statements(tables, limit_in_union_member=chosen.limit_in_union_member)
    extra = {
        "reserve": chosen.reserve_statement(tables.conversations),
        "append": chosen.append_statement(tables),
        "lock": sa.select(tables.conversations.c.next_position).with_for_update(),
    }
    for sa_dialect in TARGETS[name][1]:
        for field in statements.__dataclass_fields__:
            sql = str(getattr(statements, field).compile(dialect=sa_dialect))
            assert "ai_chat_memory" in sql, field
        for label, stmt in extra.items():
            if stmt is not None:
                assert str(stmt.compile(dialect=sa_dialect)).strip(), label


@pytest.mark.parametrize("name", ALL)
def test_ids_hold_255_four_byte_characters_compared_exactly(name: str) -> None:
    column = tables_for(name).messages.c.conversation_id
    sa_dialect = TARGETS[name][1][0]
    impl = column.type.dialect_impl(sa_dialect)
    if name in ("postgresql", "sqlite"):
        assert impl.length == 255  # characters
        if name == "postgresql":
            assert column.type.collation == "C"
        return
    assert impl.length == 1020  # UTF-8 bytes: 255 x 4
    bind = column.type.bind_processor(sa_dialect)
    encoded = bind("a😀 ") if bind else "a😀 ".encode()
    assert encoded == "a😀 ".encode()
    result = column.type.result_processor(sa_dialect, None)
    assert result is not None and result(encoded) == "a😀 "


@pytest.mark.parametrize("name", per_backend(["mssql"]))
def test_sql_server_locks_the_conversation_row_with_a_hint(name: str) -> None:
    from chatmem.jdbc._native.mssql import lock_statement

    sql = str(lock_statement(tables_for(name).conversations).compile(dialect=mssql.dialect()))
    assert "WITH (UPDLOCK, ROWLOCK)" in sql and "FOR UPDATE" not in sql


@pytest.mark.parametrize("name", per_backend(["oracle"]))
def test_oracle_locks_with_for_update_and_pages_with_fetch_first(name: str) -> None:
    tables = tables_for(name)
    lock = sa.select(tables.conversations.c.next_position).with_for_update()
    assert "FOR UPDATE" in str(lock.compile(dialect=oracle.dialect()))
    window = str(build_statements(tables).window.compile(dialect=oracle.dialect()))
    assert "FETCH FIRST :n ROWS ONLY" in window and "UNION ALL" in window


@pytest.mark.parametrize("name", per_backend(["postgresql"]))
def test_postgresql_append_is_one_cte_statement(name: str) -> None:
    stmt = dialect_for(name).append_statement(tables_for(name))
    sql = str(stmt.compile(dialect=postgresql.psycopg.dialect()))
    assert sql.startswith("WITH reserved AS")
    assert "ON CONFLICT (conversation_id) DO UPDATE" in sql and "RETURNING" in sql
    assert "json_to_recordset" in sql and "DELETE FROM ai_chat_memory" in sql


@pytest.mark.parametrize("name", per_backend(["mssql", "oracle"]))
def test_unknown_dialect_is_an_error_listing_the_supported_ones(name: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        dialect_for("informix")
    for known in DIALECTS:
        assert known in str(info.value)


@pytest.mark.parametrize("name", ALL)
def test_shipped_sql_file_is_current(name: str) -> None:
    path = SQL_DIR / f"{name}.sql"
    expected = sql_file_text(name)
    if os.environ.get("CHATMEM_WRITE_SQL"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(expected)
    assert path.read_text() == expected


def sql_file_text(name: str) -> str:
    return (
        f"-- chatmem chat memory schema for {name}, default table name ai_chat_memory.\n"
        f'-- Generated by chatmem.jdbc.schema_sql("{name}://"); `chatmem schema --url` prints\n'
        "-- it for your own table name. Apply it with your migration tool, then use\n"
        '-- initialize_schema="never".\n\n' + schema_sql(f"{name}://")
    )


DRIVERLESS_URLS = {
    "postgresql": ("postgres://u@127.0.0.1:1/db", "psycopg"),
    "mysql": ("mysql://u:p@127.0.0.1:1/db", "pymysql"),
    "mariadb": ("mariadb://u:p@127.0.0.1:1/db", "pymysql"),
    "mssql": ("mssql://u:p@127.0.0.1:1/db", "pymssql"),
    "oracle": ("oracle://u:p@127.0.0.1:1/?service_name=x", "oracledb"),
}


@pytest.mark.parametrize("name", per_backend(list(DRIVERLESS_URLS)))
def test_urls_without_a_driver_use_the_extras_driver(name: str) -> None:
    from chatmem.core import repository_from_url

    url, driver = DRIVERLESS_URLS[name]
    repo = repository_from_url(url, initialize_schema="never")  # no connection until first use
    assert repo.engine.dialect.driver == driver  # type: ignore[attr-defined]
    assert type(repo.dialect).__name__ == type(dialect_for(name)).__name__  # type: ignore[attr-defined]
    repo.close()  # type: ignore[attr-defined]
