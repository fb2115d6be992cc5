"""SQLite, the embedded default: a database file per run, a table per test."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import Harness, ServerInfo, unique_suffix


class SqliteHarness(Harness):
    name = "sqlite"
    env_var = "CHATMEM_TEST_SQLITE_URL"

    def from_env(self, url: str) -> ServerInfo:
        return ServerInfo("SQLite", sqlite3.sqlite_version, url, route="env")

    def start_local(self, workdir: Path) -> ServerInfo:
        url = f"sqlite:///{workdir / 'chatmem-test.db'}"
        return ServerInfo("SQLite", sqlite3.sqlite_version, url, route="embedded")

    def namespace_options(self) -> dict[str, Any]:
        return {"table_name": f"cm_{unique_suffix()}"}

    def make_repository(self, server: ServerInfo, **options: Any) -> BaseChatMemoryRepository:
        from chatmem.jdbc import JdbcChatMemoryRepository, make_engine

        assert server.url is not None
        engine = server.extra.get("engine")
        if engine is None:
            engine = server.extra["engine"] = make_engine(server.url)
        options = {**self.namespace_options(), "initialize_schema": "always", **options}
        return JdbcChatMemoryRepository(engine, **options)

    def connect_spec(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> tuple[str, dict[str, Any]] | None:
        """The URL and every option of ``repository`` (the async twin and other processes get
        the same tables, configured alike)."""
        assert server.url is not None
        config = repository.config  # type: ignore[attr-defined]
        return server.url, {
            "table_name": config.table_name,
            "initialize_schema": config.initialize_schema,
        }

    def cleanup(self, server: ServerInfo, repository: BaseChatMemoryRepository) -> None:
        repository.tables.metadata.drop_all(repository.engine)  # type: ignore[attr-defined]

    def cold_default_url(self, server: ServerInfo) -> str:
        """A database file that does not exist yet, beside the run's own."""
        assert server.url is not None
        folder = Path(server.url.removeprefix("sqlite:///")).parent
        return f"sqlite:///{folder / f'cold-{unique_suffix()}.db'}"

    def cleanup_cold_default(self, server: ServerInfo, url: str) -> None:
        path = url.removeprefix("sqlite:///")
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(path + suffix).unlink(missing_ok=True)


HARNESS = SqliteHarness
