"""Fixtures of the long-term memory suite: a settable clock and record stores per backend.

The suite runs in its own nox sessions (``longterm(backend)``, ``longterm_browser``), which
name this folder; a run of the chat conformance suite (``pytest conformance_tests``) leaves
it out, because it needs the ``api`` extra those sessions install.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from chatmem.core.longterm import BaseMemoryRecordRepository, InMemoryMemoryRecordRepository
from conformance_tests.harness import Harness, ServerInfo, unique_suffix

HERE = Path(__file__).parent
SQL_BACKENDS = ("sqlite", "postgres", "mariadb", "mssql", "oracle")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Collect this folder only when the command line names it (or a file in it)."""
    named = any(Path(str(arg).split("::")[0]).resolve().is_relative_to(HERE) for arg in config.args)
    return None if named else True


class TestClock:
    """A clock the test sets: ``clock()`` is the current time, ``advance`` moves it."""

    __test__ = False

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 30, 15, 123456, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta

    def set(self, when: datetime) -> None:
        self.now = when


@pytest.fixture
def clock() -> TestClock:
    return TestClock()


def sql_engine(server: ServerInfo) -> Any:
    """The server's shared engine (the SQLite harness makes it lazily)."""
    from chatmem.jdbc import make_engine

    engine = server.extra.get("engine")
    if engine is None:
        assert server.url is not None
        engine = server.extra["engine"] = make_engine(server.url)
    return engine


@pytest.fixture
def make_records(
    harness: Harness, server: ServerInfo, clock: TestClock
) -> Iterator[Callable[..., BaseMemoryRecordRepository]]:
    """``make_records(shared_with=None, **options)``: a fresh record store on the backend
    under test, or another handle on the same data as ``shared_with``."""
    made: list[BaseMemoryRecordRepository] = []
    memory_stores: dict[int, BaseMemoryRecordRepository] = {}

    def make(
        shared_with: BaseMemoryRecordRepository | None = None, **options: Any
    ) -> BaseMemoryRecordRepository:
        options.setdefault("clock", clock)
        if harness.name == "memory":
            if shared_with is not None:
                return memory_stores[id(shared_with)]
            repo: BaseMemoryRecordRepository = InMemoryMemoryRecordRepository(**options)
            memory_stores[id(repo)] = repo
        elif harness.name in SQL_BACKENDS:
            from chatmem.jdbc import JdbcMemoryRecordRepository

            table = (
                shared_with.config.table_name  # type: ignore[attr-defined]
                if shared_with is not None
                else f"mr_{unique_suffix()}"
            )
            options.setdefault("initialize_schema", "always")
            repo = JdbcMemoryRecordRepository(sql_engine(server), table_name=table, **options)
        else:
            pytest.skip(f"no long-term memory record store for {harness.name} yet")
        made.append(repo)
        return repo

    yield make
    for repo in made:
        tables = getattr(repo, "tables", None)
        if tables is not None:
            tables.metadata.drop_all(repo.engine)  # type: ignore[attr-defined]


@pytest.fixture
def records(make_records: Callable[..., BaseMemoryRecordRepository]) -> BaseMemoryRecordRepository:
    return make_records()
