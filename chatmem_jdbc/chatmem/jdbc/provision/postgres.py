"""PostgreSQL harness: a throwaway PostgreSQL 15 cluster on loopback, started with our tooling.

Routes (see ``chatmem_testing/chatmem/testing/harness.py``):

- ``CHATMEM_TEST_POSTGRES_URL`` (``postgresql+psycopg://user:pw@host:port/db``);
- local: Debian's PostgreSQL (``scripts/install/postgres.sh``): ``initdb`` into a temp dir
  owned by the ``postgres`` user (the server refuses to run as root), then ``pg_ctl start``
  on a free 127.0.0.1 port with its socket in that dir, trust auth for loopback only;
- testcontainers: ``PostgresContainer`` on the pinned ``postgres:15.8`` image (or
  ``CHATMEM_TC_IMAGE_POSTGRES``), on machines with Docker.

Every test gets its own pair of tables (``cm_<suffix>``); ``cleanup`` drops them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from chatmem.testing.harness import (
    ServerInfo,
    Unavailable,
    container_extra,
    free_port,
    start_container,
    tail,
    testcontainers_class,
    testcontainers_image,
)

from ._sql import SqlHarness, scalar

PREFERRED_MAJOR = "15"
START_TIMEOUT = 60


def find_bin_dir() -> Path:
    """Debian's server binaries (``/usr/lib/postgresql/<major>/bin``), major 15 preferred."""
    override = os.environ.get("CHATMEM_POSTGRES_BIN")
    if override:
        return Path(override)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    preferred = [p for p in found if f"/{PREFERRED_MAJOR}/" in p]
    for candidate in preferred + found:
        return Path(candidate).parent
    raise Unavailable("no /usr/lib/postgresql/*/bin/initdb: run scripts/install/postgres.sh")


class PostgresHarness(SqlHarness):
    name = "postgres"
    product = "PostgreSQL"
    env_var = "CHATMEM_TEST_POSTGRES_URL"
    testcontainers_image = "postgres:15.8"

    drop_database_suffix = " WITH (FORCE)"

    def ask_version(self, engine: Any) -> str:
        # "15.18 (Debian 15.18-0+deb12u1)" -> "15.18"
        return scalar(engine, "SHOW server_version").split(" ")[0]

    def start_local(self, workdir: Path) -> ServerInfo:
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise Unavailable(f'psycopg missing: pip install "chatmem[postgres]" ({exc})') from exc
        bin_dir = find_bin_dir()
        as_user = _server_user()
        root = Path(tempfile.mkdtemp(prefix="chatmem-pg-"))
        data, log = root / "data", root / "server.log"
        if as_user is not None:
            shutil.chown(root, as_user, as_user)
        port = free_port()

        def run(*args: str) -> None:
            cmd = [str(bin_dir / args[0]), *args[1:]]
            if as_user is not None:
                cmd = ["runuser", "-u", as_user, "--", *cmd]
            done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                output = done.stderr or done.stdout
                raise Unavailable(f"{args[0]} failed ({done.returncode}): {output}\n{tail(log)}")

        def stop() -> None:
            if (data / "postmaster.pid").exists():
                with contextlib.suppress(Unavailable):
                    run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
            shutil.rmtree(root, ignore_errors=True)

        options = (
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c shared_buffers=64MB"
            " -c max_connections=100"
        )
        try:
            run(
                "initdb",
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            )
            run(
                "pg_ctl",
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "-t",
                str(START_TIMEOUT),
                "start",
            )
            url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
            return self.server_info(
                url, "local", stop, root=str(root), ctl=run, data=str(data), log=str(log),
                options=options,
            )  # fmt: skip
        except BaseException:
            stop()
            raise

    def restart(self, server: ServerInfo, downtime: float = 2.0) -> None:
        """``pg_ctl stop -m fast`` then ``start`` on the same data directory and port."""
        if server.route != "local":
            super().restart(server, downtime)
        run, data = server.extra["ctl"], server.extra["data"]
        run("pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
        time.sleep(downtime)
        run(
            "pg_ctl", "-D", data, "-l", server.extra["log"], "-o", server.extra["options"],
            "-w", "-t", str(START_TIMEOUT), "start",
        )  # fmt: skip

    def start_testcontainers(self) -> ServerInfo:
        PostgresContainer = testcontainers_class("postgres", "PostgresContainer")
        container = PostgresContainer(testcontainers_image(self), driver="psycopg")
        labels = start_container(container)
        try:
            return self.server_info(
                container.get_connection_url(),
                "testcontainers",
                container.stop,
                **container_extra(container, labels),
            )
        except BaseException:
            container.stop()
            raise


def _server_user() -> str | None:
    """The account the server runs as: ``postgres`` when we are root (PostgreSQL refuses
    root), else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise Unavailable("running as root and no `postgres` user to run the server") from None
    return "postgres"


HARNESS = PostgresHarness
