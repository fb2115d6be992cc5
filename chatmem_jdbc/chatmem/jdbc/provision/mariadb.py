"""MariaDB harness: a throwaway MariaDB 10.11 instance on loopback, started with our tooling.

Routes (see ``chatmem_testing/chatmem/testing/harness.py``):

- ``CHATMEM_TEST_MARIADB_URL`` (``mariadb+pymysql://user:pw@host:port/db``);
- local: Debian's MariaDB (``scripts/install/mariadb.sh``): ``mariadb-install-db`` into a
  temp dir owned by ``mysql``, then ``mariadbd --no-defaults --user=mysql`` with its socket in
  that dir and TCP on a free 127.0.0.1 port. Server defaults are kept on purpose (latin1
  server charset, case-insensitive PAD SPACE collations), so the tests prove chatmem's DDL
  does not depend on them. root creates a TCP user for PyMySQL over the socket;
- testcontainers: ``MySqlContainer`` on the pinned ``mariadb:10.11.9`` image (or
  ``CHATMEM_TC_IMAGE_MARIADB``), on machines with Docker.

Every test gets its own pair of tables (``cm_<suffix>``); ``cleanup`` drops them.
"""

from __future__ import annotations

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
    stop_process,
    tail,
    testcontainers_class,
    testcontainers_image,
    wait_for_port,
)

from ._sql import SqlHarness, scalar

DATABASE = "chatmem"
USER, PASSWORD = "chatmem", "chatmem"
START_TIMEOUT = 60.0


def find_binaries() -> tuple[str, str]:
    """``mariadbd`` and ``mariadb-install-db`` from Debian's packages."""
    server = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    install = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"
    if not (os.access(server, os.X_OK) and os.access(install, os.X_OK)):
        raise Unavailable("no mariadbd / mariadb-install-db: run scripts/install/mariadb.sh")
    return server, install


class MariadbHarness(SqlHarness):
    name = "mariadb"
    product = "MariaDB"
    env_var = "CHATMEM_TEST_MARIADB_URL"
    testcontainers_image = "mariadb:10.11.9"

    def ask_version(self, engine: Any) -> str:
        # "10.11.19-MariaDB-0+deb12u1" -> "10.11.19"
        return scalar(engine, "SELECT VERSION()").split("-")[0]

    def start_local(self, workdir: Path) -> ServerInfo:
        try:
            import pymysql
        except ImportError as exc:
            raise Unavailable(f'PyMySQL missing: pip install "chatmem[mariadb]" ({exc})') from exc
        server, install = find_binaries()
        user = _server_user()
        as_user = ["--user", user] if user else []
        root = Path(tempfile.mkdtemp(prefix="chatmem-mariadb-"))
        data, sock, log = root / "data", root / "mysqld.sock", root / "server.log"
        data.mkdir()
        if user is not None:
            shutil.chown(root, user, user)
            shutil.chown(data, user, user)
        done = subprocess.run(
            [
                install,
                "--no-defaults",
                f"--datadir={data}",
                "--skip-test-db",
                "--auth-root-authentication-method=normal",
                *as_user,
            ],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            shutil.rmtree(root, ignore_errors=True)
            raise Unavailable(f"mariadb-install-db failed: {done.stderr or done.stdout}")
        port = free_port()
        cmd = [
            server,
            "--no-defaults",
            f"--datadir={data}",
            f"--socket={sock}",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={root / 'mysqld.pid'}",
            f"--log-error={log}",
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=64M",
            "--max-connections=200",
            *as_user,
        ]
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

        procs = [proc]  # restart() appends the new process; stop() ends the current one

        def stop() -> None:
            stop_process(procs[-1], grace=30.0)
            shutil.rmtree(root, ignore_errors=True)

        try:
            wait_for_port(port, START_TIMEOUT, proc, log)
            _create_user(pymysql, sock, proc, log)
            url = f"mariadb+pymysql://{USER}:{PASSWORD}@127.0.0.1:{port}/{DATABASE}"
            return self.server_info(
                url, "local", stop, root=str(root), pid=proc.pid, cmd=cmd, procs=procs,
                port=port, log=str(log),
            )  # fmt: skip
        except BaseException:
            stop()
            raise

    def restart(self, server: ServerInfo, downtime: float = 2.0) -> None:
        """SIGTERM (a clean InnoDB shutdown), then the same command: same data, same port."""
        if server.route != "local":
            super().restart(server, downtime)
        procs = server.extra["procs"]
        stop_process(procs[-1], grace=60.0)
        time.sleep(downtime)
        proc = subprocess.Popen(
            server.extra["cmd"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        procs.append(proc)
        wait_for_port(server.extra["port"], START_TIMEOUT, proc, Path(server.extra["log"]))

    def start_testcontainers(self) -> ServerInfo:
        MySqlContainer = testcontainers_class("mysql", "MySqlContainer")
        # The official mariadb image takes MySQL's MYSQL_* variables, which the module sets.
        container = MySqlContainer(
            testcontainers_image(self), username=USER, password=PASSWORD, dbname=DATABASE
        )
        labels = start_container(container)
        try:
            host, port = container.get_container_host_ip(), container.get_exposed_port(3306)
            _grant_cold_databases(host, int(port), container.root_password)
            url = f"mariadb+pymysql://{USER}:{PASSWORD}@{host}:{port}/{DATABASE}"
            return self.server_info(
                url, "testcontainers", container.stop, **container_extra(container, labels)
            )
        except BaseException:
            container.stop()
            raise


def _grant_cold_databases(host: str, port: int, root_password: str) -> None:
    """As the container's root (over TCP, like the official image allows): let the test user
    create the default-path test's fresh databases, as the local route does."""
    import pymysql

    conn = pymysql.connect(host=host, port=port, user="root", password=root_password)
    with conn, conn.cursor() as cur:
        cur.execute(f"GRANT ALL ON `cold\\_%`.* TO '{USER}'@'%'")


def _create_user(pymysql: Any, sock: Path, proc: subprocess.Popen[bytes], log: Path) -> None:
    """As root over the socket: the test database and a password user for TCP clients."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            conn = pymysql.connect(unix_socket=str(sock), user="root", password="")
            break
        except pymysql.err.OperationalError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise Unavailable(f"cannot log in as root over {sock}: {exc}\n{tail(log)}") from exc
            time.sleep(0.2)
    with conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
        cur.execute(f"CREATE USER IF NOT EXISTS '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'")
        cur.execute(f"GRANT ALL ON {DATABASE}.* TO '{USER}'@'127.0.0.1'")
        # the default-path test's fresh databases (see SqlHarness.cold_default_url)
        cur.execute(f"GRANT ALL ON `cold\\_%`.* TO '{USER}'@'127.0.0.1'")


def _server_user() -> str | None:
    """``mysql`` when we are root (mariadbd refuses root without --user), else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("mysql")
    except KeyError:
        raise Unavailable("running as root and no `mysql` user to run the server") from None
    return "mysql"


HARNESS = MariadbHarness
