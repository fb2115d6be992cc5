"""The URL registry and the packaging promises on our own SQL store (``chatmem.jdbc``, found
through its ``chatmem.backends`` entry points): a missing SQL driver, the class for a URL,
a typed config, ``from_url``'s owned engine. Core's own registry tests use no store.

The missing-driver cases run in a fresh interpreter whose import system refuses the driver (a
meta path finder raising ``ModuleNotFoundError``, exactly what Python raises for an absent
package), so the real import path of chatmem, SQLAlchemy and the driver is exercised.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chatmem.core import MessageWindowChatMemory, MissingDependencyError, SchemaError, UserMessage

pytestmark = pytest.mark.backend("sqlite")

BLOCKED = ("psycopg", "psycopg2", "pymysql", "pymssql", "oracledb")

PROLOGUE = textwrap.dedent(
    f"""
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {BLOCKED!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, Block())
    for mod in [m for m in sys.modules if m.split(".")[0] in {BLOCKED!r}]:
        del sys.modules[mod]
    """
)


def _run(body: str) -> str:
    code = PROLOGUE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


CASES = [
    ("postgresql://u:p@127.0.0.1:1/db", "postgres", "psycopg"),
    ("postgres://u:p@127.0.0.1:1/db", "postgres", "psycopg"),
    ("postgresql+psycopg2://u:p@127.0.0.1:1/db", "postgres", "psycopg2"),
    ("mysql://u:p@127.0.0.1:1/db", "mysql", "pymysql"),
    ("mariadb://u:p@127.0.0.1:1/db", "mariadb", "pymysql"),
    ("mssql://u:p@127.0.0.1:1/db", "mssql", "pymssql"),
    ("oracle://u:p@127.0.0.1:1/?service_name=x", "oracle", "oracledb"),
]


def test_a_missing_sql_driver_is_a_missing_dependency_error() -> None:
    out = _run(
        f"""
        from chatmem.core import MissingDependencyError, repository_class_for_url
        from chatmem.core import repository_from_url
        from chatmem.jdbc import JdbcChatMemoryRepository
        for url, extra, module in {CASES!r}:
            for build in (repository_from_url, repository_class_for_url,
                          JdbcChatMemoryRepository.from_url):
                try:
                    build(url)
                except MissingDependencyError as exc:
                    assert isinstance(exc, ImportError) and exc.extra == extra, exc
                    print(url, "|", exc)
                except Exception as exc:
                    print(url, "|", type(exc).__name__, exc)
                else:
                    print(url, "|", build.__name__, "raised nothing")
        """
    )
    expected = [
        f'{url} | chatmem needs the "{module}" package: pip install "chatmem[{extra}]"'
        for url, extra, module in CASES
        for _ in range(3)
    ]
    assert out.splitlines() == expected


def test_the_class_for_a_url_needs_no_server() -> None:
    from chatmem.core import InMemoryChatMemoryRepository, repository_class_for_url
    from chatmem.jdbc import JdbcChatMemoryRepository

    assert repository_class_for_url("sqlite:///x.db") is JdbcChatMemoryRepository
    assert repository_class_for_url("memory:") is InMemoryChatMemoryRepository
    ddl = JdbcChatMemoryRepository.schema_statements_for_url("sqlite:///x.db")
    assert len(ddl) == 3 and ddl[0].startswith("CREATE TABLE ai_chat_memory_conversation")


def test_a_config_must_be_the_url_stores_own() -> None:
    import dataclasses

    from chatmem.core import InvalidArgumentError, repository_from_url
    from chatmem.jdbc import JdbcConfig

    @dataclasses.dataclass
    class RedisConfig:  # another store's config, by name (this session has no redis driver)
        table_name: str = "t"

    with pytest.raises(
        InvalidArgumentError, match=r"is a RedisConfig; sqlite:// URLs take JdbcConfig"
    ):
        repository_from_url("sqlite:///x.db", RedisConfig())
    with pytest.raises(InvalidArgumentError, match="config"):
        repository_from_url("memory:", JdbcConfig())
    with pytest.raises(InvalidArgumentError, match="both give table_name"):
        repository_from_url("sqlite:///x.db", JdbcConfig(), table_name="t")


def test_jdbc_from_url_owns_its_engine(tmp_path: Path) -> None:
    pytest.importorskip("sqlalchemy")
    from chatmem.jdbc import JdbcChatMemoryRepository

    with JdbcChatMemoryRepository.from_url(f"sqlite:///{tmp_path / 'a.db'}") as repo:
        repo.save_all("u", [UserMessage("hi")])
        assert repo.engine.pool.checkedin() == 1  # type: ignore[attr-defined]
    assert repo.engine.pool.checkedin() == 0  # type: ignore[attr-defined]  # disposed


def test_sqlite_fast_path_errors_go_through_the_same_translation(tmp_path: Path) -> None:
    pytest.importorskip("sqlalchemy")
    import sqlite3

    from sqlalchemy.exc import DBAPIError

    from chatmem.jdbc import JdbcChatMemoryRepository

    path = tmp_path / "b.db"
    repo = JdbcChatMemoryRepository(f"sqlite:///{path}")
    memory = MessageWindowChatMemory(repo, max_messages=4)
    memory.add("u", UserMessage("hi"))
    with sqlite3.connect(path) as conn:  # the tables vanish behind the repository's back
        conn.execute(f"DROP TABLE {repo.tables.messages.name}")
    with pytest.raises(SchemaError, match="tables are missing") as info:
        memory.add("u", UserMessage("again"))  # the raw sqlite3 append
    assert isinstance(info.value.__cause__, DBAPIError)
    assert isinstance(info.value.__cause__.orig, sqlite3.OperationalError)
    with pytest.raises(SchemaError, match="tables are missing"):
        memory.get("u")  # the raw sqlite3 window read
    repo.close()


def test_missing_driver_raises_import_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [m for m in sys.modules if m == "chatmem.jdbc" or m.startswith("chatmem.jdbc.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # makes `import sqlalchemy` fail
    with pytest.raises(MissingDependencyError) as info:
        importlib.import_module("chatmem.jdbc")
    assert isinstance(info.value, ImportError)
    assert str(info.value).endswith('pip install "chatmem[sqlite]"')
