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

from benchmarks._workload import WINDOW, Floor, payload
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
