"""Oracle harness: testcontainers only (Oracle Database cannot run on these machines).

Routes (see ``chatmem_testing/chatmem/testing/harness.py``):

- ``CHATMEM_TEST_ORACLE_URL`` (``oracle+oracledb://user:pw@host:port/?service_name=FREEPDB1``);
- local: none. Oracle ships its database only as RPMs and container images from its own
  sites, neither reachable here, so ``start_local`` says so;
- testcontainers: the pinned ``gvenzl/oracle-free:23.5-slim`` image on machines with Docker.

Here, ``chatmem_jdbc/tests/test_dialect_ddl.py`` compiles every statement and the DDL for
Oracle without a server.
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


class OracleHarness(SqlHarness):
    name = "oracle"
    product = "Oracle Database"
    env_var = "CHATMEM_TEST_ORACLE_URL"
    testcontainers_image = "gvenzl/oracle-free:23.5-slim"

    def cold_default_url(self, server: ServerInfo) -> str:
        raise Unavailable("Oracle: a fresh schema needs a new user; not provisioned here")

    def ask_version(self, engine: Any) -> str:
        return scalar(engine, "SELECT version_full FROM product_component_version")

    def start_local(self, workdir: Path) -> ServerInfo:
        raise Unavailable(
            "Oracle Database cannot run on this machine (no Oracle download site, no Docker); "
            "set CHATMEM_TEST_ORACLE_URL or use a machine with Docker"
        )

    def start_testcontainers(self) -> ServerInfo:
        try:
            from testcontainers.oracle import OracleDbContainer
        except ImportError as exc:
            raise Unavailable("testcontainers[oracle] is not installed") from exc
        container = OracleDbContainer(testcontainers_image(self))
        start_container(container)
        return self.server_info(container.get_connection_url(), "testcontainers", container.stop)


HARNESS = OracleHarness
