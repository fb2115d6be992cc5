"""What the SQL server harnesses share: one engine per server, one table pair per test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatmem.core import BaseChatMemoryRepository
from conformance_tests.harness import Harness, ServerInfo, Unavailable, unique_suffix


class SqlHarness(Harness):
    """A SQL database reached by a SQLAlchemy URL; ``ask_version`` probes the server."""

    product: str

    def ask_version(self, engine: Any) -> str:
        """The server's own version string, trimmed to the number."""
        raise NotImplementedError

    def from_env(self, url: str) -> ServerInfo:
        return self.server_info(url, "env", lambda: None)

    def server_info(
        self, url: str, route: str, stop: Callable[[], None], **extra: Any
    ) -> ServerInfo:
        """Connect, ask the version, and describe the server (its engine in ``extra``)."""
        from chatmem.jdbc import make_engine

        engine = make_engine(url)

        def stop_all() -> None:
            engine.dispose()
            stop()

        try:
            version = self.ask_version(engine)
        except Exception as exc:
            engine.dispose()
            raise Unavailable(f"no answer from {url}: {exc}") from exc
        return ServerInfo(
            self.product,
            version,
            url,
            route=route,
            stop=stop_all,
            extra={"engine": engine, **extra},
        )

    def namespace_options(self) -> dict[str, Any]:
        return {"table_name": f"cm_{unique_suffix()}"}

    def make_repository(self, server: ServerInfo, **options: Any) -> BaseChatMemoryRepository:
        from chatmem.jdbc import JdbcChatMemoryRepository

        options = {**self.namespace_options(), "initialize_schema": "always", **options}
        return JdbcChatMemoryRepository(server.extra["engine"], **options)

    def connect_spec(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> tuple[str, dict[str, Any]] | None:
        assert server.url is not None
        return server.url, {"table_name": repository.config.table_name}  # type: ignore[attr-defined]

    def cleanup(self, server: ServerInfo, repository: BaseChatMemoryRepository) -> None:
        repository.tables.metadata.drop_all(server.extra["engine"])  # type: ignore[attr-defined]


def scalar(engine: Any, sql: str) -> str:
    """One value from a constant query."""
    import sqlalchemy as sa

    with engine.connect() as conn:
        return str(conn.execute(sa.text(sql)).scalar_one())
