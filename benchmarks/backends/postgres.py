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

from benchmarks._workload import WINDOW, Floor, GuardedFloor, PipelinedFloor, is_system, payload
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
        self.db: Any = _connect(server)
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


G_CREATE = (
    "CREATE TABLE IF NOT EXISTS bench_guarded (cid VARCHAR(255) NOT NULL, pos BIGINT NOT NULL,"
    " sys BOOLEAN NOT NULL, payload JSON NOT NULL, PRIMARY KEY (cid, pos))"
)
G_INDEX = "CREATE INDEX IF NOT EXISTS bench_guarded_system ON bench_guarded (cid, pos) WHERE sys"
G_INSERT = (
    "INSERT INTO bench_guarded (cid, pos, sys, payload) "
    "SELECT %s, coalesce(max(pos), -1) + 1, %s, %s FROM bench_guarded WHERE cid = %s"
)
G_WINDOW = (
    "SELECT pos, payload::text FROM bench_guarded WHERE cid = %s AND sys UNION ALL "
    "(SELECT pos, payload::text FROM bench_guarded WHERE cid = %s AND NOT sys "
    f"ORDER BY pos DESC LIMIT {WINDOW}) ORDER BY 1"
)


class PostgresGuardedFloor(GuardedFloor):
    """Positions per conversation as ``max(pos) + 1`` in the insert itself, under the
    primary key ``(cid, pos)``: two writers that read the same maximum collide on the key,
    the second waits for the first's commit and retries, so a position is taken only once
    every lower one is committed (an identity column can commit 6 before 5, and a reader
    then sees 6 without 5). A replace (delete and insert in one transaction) holds the keys
    it writes, so an append either precedes it or lands after all of it. One autocommit
    statement per append, no conversation row; the read is the system messages (a partial
    index) and the newest 20 others in one statement."""

    def __init__(self, server: ServerInfo) -> None:
        import psycopg

        self.unique = psycopg.errors.UniqueViolation
        self.db: Any = _connect(server)
        self.db.execute(G_CREATE)
        self.db.execute(G_INDEX)

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.db.execute("DELETE FROM bench_guarded WHERE cid = %s", (cid,))
        rows = [(cid, i, is_system(m), payload(m)) for i, m in enumerate(messages)]
        with self.db.transaction(), self.db.cursor() as cur:
            cur.executemany("INSERT INTO bench_guarded VALUES (%s, %s, %s, %s)", rows)

    def _append(self, cid: str, message: Message) -> None:
        params = (cid, is_system(message), payload(message), cid)
        while True:
            try:
                self.db.execute(G_INSERT, params)
                return
            except self.unique:
                continue  # a concurrent writer took the position: read the new maximum

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append(cid, user)
        self._append(cid, reply)
        return [json.loads(r[1]) for r in self.db.execute(G_WINDOW, (cid, cid)).fetchall()]

    def close(self) -> None:
        self.db.execute("DROP TABLE IF EXISTS bench_guarded")
        self.db.close()


G_INSERT_AND_WINDOW = (
    "WITH ins AS (INSERT INTO bench_guarded (cid, pos, sys, payload) "
    "SELECT %(cid)s::varchar, coalesce(max(pos), -1) + 1, %(sys)s, %(payload)s FROM bench_guarded "
    "WHERE cid = %(cid)s RETURNING pos, sys, payload::text AS payload) "
    "SELECT pos, payload::text FROM bench_guarded WHERE cid = %(cid)s AND sys "
    "UNION ALL SELECT pos, payload FROM ins WHERE sys UNION ALL "
    "(SELECT pos, payload FROM ((SELECT pos, payload::text AS payload FROM bench_guarded "
    f"WHERE cid = %(cid)s AND NOT sys ORDER BY pos DESC LIMIT {WINDOW}) UNION ALL "
    f"SELECT pos, payload FROM ins WHERE NOT sys) o ORDER BY pos DESC LIMIT {WINDOW}) ORDER BY 1"
)


class PostgresPipelinedFloor(PostgresGuardedFloor, PipelinedFloor):
    """The guarded floor with the second append and the window read as one statement: a
    data-modifying CTE inserts, and the window is read beside it (the statement's snapshot
    does not hold the new row, so the ``RETURNING`` rows are merged in); a key collision
    means a concurrent writer took the position, and the statement runs again."""

    name = PipelinedFloor.name
    kind = PipelinedFloor.kind

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append(cid, user)
        params = {"cid": cid, "sys": is_system(reply), "payload": payload(reply)}
        while True:
            try:
                rows = self.db.execute(G_INSERT_AND_WINDOW, params).fetchall()
            except self.unique:
                continue
            return [json.loads(r[1]) for r in rows]


def _connect(server: ServerInfo) -> Any:
    import psycopg
    import sqlalchemy as sa

    assert server.url is not None
    dsn = sa.make_url(server.url).set(drivername="postgresql")
    return psycopg.connect(dsn.render_as_string(hide_password=False), autocommit=True)


def make_guarded_floor(server: ServerInfo) -> PostgresGuardedFloor:
    return PostgresGuardedFloor(server)


def make_pipelined_floor(server: ServerInfo) -> PostgresPipelinedFloor:
    return PostgresPipelinedFloor(server)
