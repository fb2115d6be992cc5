"""The bare-driver floor for PostgreSQL: psycopg 3, one autocommit connection.

Same durability as chatmem (the same server and its default ``synchronous_commit``, one
commit per append), store-assigned order (an identity column), the same JSON payload in a
``JSON`` column as chatmem's, and the window of 20 through a ``(cid, id)`` index, read as
text and decoded with ``json.loads``. No pool, no conversation row, no concurrency guard
beyond the identity. psycopg prepares the repeated statements server-side, as for chatmem.
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
    "CREATE TABLE IF NOT EXISTS bench_floor (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " cid VARCHAR(255) NOT NULL, payload JSON NOT NULL)"
)
INDEX = "CREATE INDEX IF NOT EXISTS bench_floor_window ON bench_floor (cid, id)"
INSERT = "INSERT INTO bench_floor (cid, payload) VALUES (%s, %s)"
LAST = f"SELECT payload::text FROM bench_floor WHERE cid = %s ORDER BY id DESC LIMIT {WINDOW}"


class PostgresFloor(Floor):
    def __init__(self, server: ServerInfo) -> None:
        import psycopg
        import sqlalchemy as sa

        assert server.url is not None
        dsn = sa.make_url(server.url).set(drivername="postgresql")
        self.db: Any = psycopg.connect(dsn.render_as_string(hide_password=False), autocommit=True)
        self.db.execute(CREATE)
        self.db.execute(INDEX)

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.db.execute("DELETE FROM bench_floor WHERE cid = %s", (cid,))
        with self.db.transaction(), self.db.cursor() as cur:
            cur.executemany(INSERT, [(cid, payload(m)) for m in messages])

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self.db.execute(INSERT, (cid, payload(user)))
        self.db.execute(INSERT, (cid, payload(reply)))
        rows = self.db.execute(LAST, (cid,)).fetchall()
        return [json.loads(r[0]) for r in reversed(rows)]

    def close(self) -> None:
        self.db.execute("DROP TABLE IF EXISTS bench_floor")
        self.db.close()


def make_floor(server: ServerInfo) -> PostgresFloor:
    return PostgresFloor(server)
