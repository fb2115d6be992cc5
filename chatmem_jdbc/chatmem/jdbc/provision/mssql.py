"""SQL Server harness: testcontainers only (SQL Server cannot run on these machines).

Routes (see ``chatmem_testing/chatmem/testing/harness.py``):

- ``CHATMEM_TEST_MSSQL_URL`` (``mssql+pymssql://user:pw@host:port/db``);
- local: none. Microsoft ships SQL Server for Linux only from its own apt repository or as
  a container image, neither reachable here, so ``start_local`` says so;
- testcontainers: the pinned ``mcr.microsoft.com/mssql/server:2022-CU14-ubuntu-22.04`` image
  on machines with Docker; a ``chatmem`` database with ``READ_COMMITTED_SNAPSHOT`` on.

Here, ``chatmem_jdbc/tests/test_dialect_ddl.py`` compiles every statement and the DDL for SQL
Server without a server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chatmem.testing.harness import (
    ServerInfo,
    Unavailable,
    start_container,
    testcontainers_image,
)

from ._sql import SqlHarness, scalar

DATABASE = "chatmem"


class MssqlHarness(SqlHarness):
    name = "mssql"
    product = "Microsoft SQL Server"
    env_var = "CHATMEM_TEST_MSSQL_URL"
    testcontainers_image = "mcr.microsoft.com/mssql/server:2022-CU14-ubuntu-22.04"

    def ask_version(self, engine: Any) -> str:
        return scalar(engine, "SELECT CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128))")

    def start_local(self, workdir: Path) -> ServerInfo:
        raise Unavailable(
            "SQL Server cannot run on this machine (no Microsoft apt repository, no Docker); "
            "set CHATMEM_TEST_MSSQL_URL or use a machine with Docker"
        )

    def start_testcontainers(self) -> ServerInfo:
        try:
            import sqlalchemy as sa
            from testcontainers.mssql import SqlServerContainer
        except ImportError as exc:
            raise Unavailable("testcontainers[mssql] is not installed") from exc
        container = SqlServerContainer(testcontainers_image(self), dialect="mssql+pymssql")
        start_container(container)
        admin = sa.create_engine(container.get_connection_url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {DATABASE}")
            conn.exec_driver_sql(f"ALTER DATABASE {DATABASE} SET READ_COMMITTED_SNAPSHOT ON")
        admin.dispose()
        url = sa.make_url(container.get_connection_url()).set(database=DATABASE)
        return self.server_info(
            url.render_as_string(hide_password=False), "testcontainers", container.stop
        )


HARNESS = MssqlHarness
