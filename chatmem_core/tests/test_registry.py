"""``repository_from_url`` and ``repository_class_for_url`` with a SQL driver missing.

Each case runs in a fresh interpreter whose import system refuses the driver (a meta path
finder raising ``ModuleNotFoundError``, exactly what Python raises for an absent package),
so the real import path of chatmem, SQLAlchemy and the driver is exercised.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

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


def test_an_unknown_scheme_lists_the_known_ones() -> None:
    from chatmem.core import InvalidArgumentError, repository_class_for_url

    with pytest.raises(InvalidArgumentError, match=r"known schemes:.*postgresql"):
        repository_class_for_url("db2://h/x")
