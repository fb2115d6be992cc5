"""``repository_from_url`` and ``repository_class_for_url`` with a SQL driver missing.

Each case runs in a fresh interpreter whose import system refuses the driver (a meta path
finder raising ``ModuleNotFoundError``, exactly what Python raises for an absent package),
so the real import path of chatmem, SQLAlchemy and the driver is exercised.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

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


FIXTURE = Path(__file__).resolve().parents[2] / "conformance_tests/fixtures/thirdparty_backend"


def test_a_third_party_store_registered_in_the_group_is_found_like_ours(tmp_path: Path) -> None:
    """A distribution on ``sys.path`` that registers schemes in ``chatmem.backends`` (the
    fixture package ``dictstore``, plus a scheme whose driver is missing): the registry finds
    it through ``importlib.metadata`` exactly as it finds chatmem's own."""
    info = tmp_path / "chatmem_dictstore-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: chatmem-dictstore\nVersion: 0.0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[chatmem.backends]\n"
        "dictstore = dictstore:DictChatMemoryRepository\n"
        "fancystore = fancy_driver_nowhere_xyz:FancyChatMemoryRepository [fancy]\n"
    )
    code = textwrap.dedent(
        """
        from chatmem.core import (
            InvalidArgumentError, MissingDependencyError, UserMessage,
            async_repository_class_for_url, repository_class_for_url, repository_from_url,
        )
        from dictstore import DictChatMemoryRepository

        assert repository_class_for_url("DictStore://") is DictChatMemoryRepository
        repo = repository_from_url("dictstore://")
        assert type(repo) is DictChatMemoryRepository
        repo.save_all("c", [UserMessage("hi")])
        assert repo.find_by_conversation_id("c") == [UserMessage("hi")]
        try:
            repository_class_for_url("nosuch://x")
        except InvalidArgumentError as exc:
            print(exc)
        try:
            async_repository_class_for_url("dictstore://")
        except InvalidArgumentError as exc:
            print(exc)
        try:
            repository_from_url("fancystore://x")
        except MissingDependencyError as exc:
            assert isinstance(exc, ImportError) and exc.extra == "fancy"
            print(exc)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(FIXTURE / "src")])}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    unknown, no_twin, missing = done.stdout.splitlines()
    assert unknown.startswith("url: unknown scheme 'nosuch'; known schemes: ")
    known = unknown.split("known schemes: ")[1].split(", ")
    assert {"dictstore", "fancystore", "memory", "postgresql", "sqlite"} <= set(known)
    assert known == sorted(known)
    assert no_twin == (
        "url: dictstore has no class AsyncDictChatMemoryRepository (no async twin for 'dictstore')"
    )
    assert missing == (
        'chatmem-dictstore needs the "fancy_driver_nowhere_xyz" package: '
        'pip install "chatmem-dictstore[fancy]"'
    )


def test_a_config_must_be_the_url_stores_own() -> None:
    from chatmem.core import InvalidArgumentError, repository_from_url
    from chatmem.jdbc import JdbcConfig
    from chatmem.redis import RedisConfig

    with pytest.raises(
        InvalidArgumentError, match=r"is a RedisConfig; sqlite:// URLs take JdbcConfig"
    ):
        repository_from_url("sqlite:///x.db", RedisConfig())
    with pytest.raises(InvalidArgumentError, match="config"):
        repository_from_url("memory:", JdbcConfig())
    with pytest.raises(InvalidArgumentError, match="both give table_name"):
        repository_from_url("sqlite:///x.db", JdbcConfig(), table_name="t")
