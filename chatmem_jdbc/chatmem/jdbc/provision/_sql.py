"""What the SQL server harnesses share: one engine per server, one table pair per test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import Harness, ServerInfo, Unavailable, unique_suffix


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
        """The URL and every option of ``repository`` (the async twin and other processes get
        the same tables, configured alike)."""
        assert server.url is not None
        config = repository.config  # type: ignore[attr-defined]
        return server.url, {
            "table_name": config.table_name,
            "initialize_schema": config.initialize_schema,
        }

    def cleanup(self, server: ServerInfo, repository: BaseChatMemoryRepository) -> None:
        repository.tables.metadata.drop_all(server.extra["engine"])  # type: ignore[attr-defined]

    drop_database_suffix = ""
    """Appended to ``DROP DATABASE name`` (PostgreSQL: ``WITH (FORCE)``)."""

    def cold_default_url(self, server: ServerInfo) -> str:
        """The server's URL with a database created just now: the default table is absent."""
        import sqlalchemy as sa

        assert server.url is not None
        name = f"cold_{unique_suffix()}"  # generated: safe to splice into DDL
        with _admin(server).connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
        url = sa.make_url(server.url).set(database=name)
        return url.render_as_string(hide_password=False)

    def cleanup_cold_default(self, server: ServerInfo, url: str) -> None:
        import sqlalchemy as sa

        name = sa.make_url(url).database
        assert name is not None and name.startswith("cold_")
        with _admin(server).connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}{self.drop_database_suffix}")


def _admin(server: ServerInfo) -> Any:
    """An autocommit engine on the server's own database (for CREATE/DROP DATABASE)."""
    admin = server.extra.get("admin_engine")
    if admin is None:
        import sqlalchemy as sa

        admin = server.extra["admin_engine"] = sa.create_engine(
            server.extra["engine"].url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool
        )
    return admin


def scalar(engine: Any, sql: str) -> str:
    """One value from a constant query."""
    import sqlalchemy as sa

    with engine.connect() as conn:
        return str(conn.execute(sa.text(sql)).scalar_one())
