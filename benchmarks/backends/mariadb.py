"""The bare-driver floor for MariaDB: PyMySQL, one autocommit connection.

Same durability as chatmem (the same server and InnoDB settings, one commit per append),
store-assigned order (``AUTO_INCREMENT``), the same JSON payload in a ``LONGTEXT`` column
(MariaDB's ``JSON`` is that type), and the window of 20 through a ``(cid, id)`` index,
decoded with ``json.loads``. No pool, no conversation row, no concurrency guard beyond the
auto-increment.
"""

# WINDOW is this module's own int constant; every value is a bind parameter.
# ruff: noqa: S608
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from benchmarks._workload import WINDOW, Floor, GuardedFloor, PipelinedFloor, is_system, payload
from chatmem.core import Message
from chatmem.testing.harness import ServerInfo

CREATE = (
    "CREATE TABLE IF NOT EXISTS bench_floor (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
    " cid VARBINARY(1020) NOT NULL, payload LONGTEXT CHARACTER SET utf8mb4 NOT NULL,"
    " KEY bench_floor_window (cid, id))"
)
INSERT = "INSERT INTO bench_floor (cid, payload) VALUES (%s, %s)"
LAST = f"SELECT payload FROM bench_floor WHERE cid = %s ORDER BY id DESC LIMIT {WINDOW}"


class MariadbFloor(Floor):
    def __init__(self, server: ServerInfo) -> None:
        import pymysql
        import sqlalchemy as sa

        assert server.url is not None
        url = sa.make_url(server.url)
        self.db: Any = pymysql.connect(
            host=url.host,
            port=url.port or 3306,
            user=url.username,
            password=url.password or "",
            database=url.database,
            charset="utf8mb4",
            autocommit=True,
        )
        self.cur = self.db.cursor()
        self.cur.execute(CREATE)

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        key = cid.encode()
        self.cur.execute("DELETE FROM bench_floor WHERE cid = %s", (key,))
        self.db.begin()
        self.cur.executemany(INSERT, [(key, payload(m)) for m in messages])
        self.db.commit()

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        key = cid.encode()
        self.cur.execute(INSERT, (key, payload(user)))
        self.cur.execute(INSERT, (key, payload(reply)))
        self.cur.execute(LAST, (key,))
        return [json.loads(r[0]) for r in reversed(self.cur.fetchall())]

    def close(self) -> None:
        self.cur.execute("DROP TABLE IF EXISTS bench_floor")
        self.db.close()


def make_floor(server: ServerInfo) -> MariadbFloor:
    return MariadbFloor(server)


G_CREATE = (
    "CREATE TABLE IF NOT EXISTS bench_guarded (cid VARBINARY(1020) NOT NULL,"
    " pos BIGINT NOT NULL, sys TINYINT NOT NULL,"
    " payload LONGTEXT CHARACTER SET utf8mb4 NOT NULL, PRIMARY KEY (cid, pos),"
    " KEY bench_guarded_window (cid, sys, pos))"
)
G_INSERT = (
    "INSERT INTO bench_guarded (cid, pos, sys, payload) "
    "SELECT %s, coalesce(max(pos), -1) + 1, %s, %s FROM bench_guarded WHERE cid = %s"
)
G_WINDOW = (
    "SELECT pos, payload FROM bench_guarded WHERE cid = %s AND sys = 1 UNION ALL "
    "(SELECT pos, payload FROM bench_guarded WHERE cid = %s AND sys = 0 "
    f"ORDER BY pos DESC LIMIT {WINDOW}) ORDER BY 1"
)
RETRY = (1062, 1213)  # duplicate key, deadlock: a concurrent writer took the position


class MariadbGuardedFloor(GuardedFloor):
    """Positions per conversation as ``max(pos) + 1`` in the insert itself, under the
    primary key ``(cid, pos)``: InnoDB locks the range it read the maximum from, so two
    writers cannot take one position (the loser gets a duplicate key or a deadlock and
    retries) and a position commits only after every lower one (``AUTO_INCREMENT`` can
    commit 6 before 5). A replace in one transaction holds the same range, so an append
    cannot land inside it. One autocommit statement per append, no conversation row; the
    read is the system messages and the newest 20 others in one statement."""

    client_flag = 0

    def __init__(self, server: ServerInfo) -> None:
        import pymysql
        import sqlalchemy as sa

        assert server.url is not None
        url = sa.make_url(server.url)
        self.error = pymysql.err.MySQLError
        self.db: Any = pymysql.connect(
            host=url.host,
            port=url.port or 3306,
            user=url.username,
            password=url.password or "",
            database=url.database,
            charset="utf8mb4",
            autocommit=True,
            client_flag=self.client_flag,
        )
        self.cur = self.db.cursor()
        self.cur.execute(G_CREATE)

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        key = cid.encode()
        self.cur.execute("DELETE FROM bench_guarded WHERE cid = %s", (key,))
        self.db.begin()
        self.cur.executemany(
            "INSERT INTO bench_guarded VALUES (%s, %s, %s, %s)",
            [(key, i, is_system(m), payload(m)) for i, m in enumerate(messages)],
        )
        self.db.commit()

    def _run(self, sql: str, params: tuple[Any, ...]) -> None:
        while True:
            try:
                self.cur.execute(sql, params)
                return
            except self.error as exc:
                if exc.args[0] not in RETRY:
                    raise

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        key = cid.encode()
        self._run(G_INSERT, (key, is_system(user), payload(user), key))
        self._run(G_INSERT, (key, is_system(reply), payload(reply), key))
        self.cur.execute(G_WINDOW, (key, key))
        return [json.loads(r[1]) for r in self.cur.fetchall()]

    def close(self) -> None:
        self.cur.execute("DROP TABLE IF EXISTS bench_guarded")
        self.db.close()


class MariadbPipelinedFloor(MariadbGuardedFloor, PipelinedFloor):
    """The guarded floor with the second append and the window read as one multi-statement
    query (``CLIENT.MULTI_STATEMENTS``): one round trip for both."""

    name = PipelinedFloor.name
    kind = PipelinedFloor.kind
    client_flag = 1 << 16  # pymysql.constants.CLIENT.MULTI_STATEMENTS

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        key = cid.encode()
        self._run(G_INSERT, (key, is_system(user), payload(user), key))
        self._run(f"{G_INSERT}; {G_WINDOW}", (key, is_system(reply), payload(reply), key, key, key))
        self.cur.nextset()
        return [json.loads(r[1]) for r in self.cur.fetchall()]


def make_guarded_floor(server: ServerInfo) -> MariadbGuardedFloor:
    return MariadbGuardedFloor(server)


def make_pipelined_floor(server: ServerInfo) -> MariadbPipelinedFloor:
    return MariadbPipelinedFloor(server)
