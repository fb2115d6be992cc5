"""The bare-driver floor for Cassandra: cassandra-driver, one partition per conversation.

Same durability as chatmem (the same server and commit log settings, the same consistency
level), store-assigned order kept as chatmem keeps it: positions come from a static
sequence advanced by one lightweight transaction per append (a conditional batch that also
inserts the message, remembered between calls so a single writer pays one LWT), the same
JSON payload, and the window as one prepared ``SELECT ... LIMIT 20`` on the clustering
order, decoded. A time-UUID floor without the LWT would skip the guard chatmem gives, so it
would measure a different guarantee.
"""

# The table name is made here from a random hex suffix; every value is a bind marker.
# ruff: noqa: S608
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from benchmarks._workload import WINDOW, Floor, GuardedFloor, is_system, merge_window, payload
from chatmem.core import Message
from chatmem.testing.harness import ServerInfo, unique_suffix


class CassandraFloor(Floor):
    """Positions from a static sequence advanced by one conditional batch per append."""

    def __init__(self, server: ServerInfo, columns: str = "") -> None:
        self.session: Any = server.extra["session"]
        self.table = f'"{server.extra["keyspace"]}"."floor_{unique_suffix()}"'
        self.session.execute(
            f"CREATE TABLE {self.table} (cid text, pos bigint, nxt bigint static, content text"
            f"{columns}, PRIMARY KEY ((cid), pos)) WITH CLUSTERING ORDER BY (pos DESC)"
        )
        self.insert = self.session.prepare(
            f"INSERT INTO {self.table} (cid, pos, content) VALUES (?, ?, ?)"
        )
        self.advance = self.session.prepare(
            f"UPDATE {self.table} SET nxt = ? WHERE cid = ? IF nxt = ?"
        )
        self.select = self.session.prepare(
            f"SELECT content FROM {self.table} WHERE cid = ? LIMIT {WINDOW}"
        )
        self.next: dict[str, int | None] = {}
        self.put_system: Any = None

    def _append(self, cid: str, contents: list[str], system: str | None = None) -> None:
        from cassandra.query import BatchStatement, BatchType

        while True:
            n = self.next.get(cid)
            start = n or 0
            taken = len(contents) + (system is not None)
            batch = BatchStatement(batch_type=BatchType.UNLOGGED)
            batch.add(self.advance, (start + taken, cid, n))
            for i, content in enumerate(contents):
                batch.add(self.insert, (cid, start + i, content))
            if system is not None:  # only the guarded floor files one (its static map)
                batch.add(self.put_system, (start, system, cid))
            result = self.session.execute(batch)
            if result.was_applied:
                self.next[cid] = start + taken
                return
            self.next[cid] = result.one().nxt

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        rows = [payload(m) for m in messages]
        for i in range(0, len(rows), 200):
            self._append(cid, rows[i : i + 200])

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append(cid, [payload(user)])
        self._append(cid, [payload(reply)])
        rows = list(self.session.execute(self.select, (cid,)))
        return [json.loads(r[0]) for r in reversed(rows)]

    def close(self) -> None:
        self.session.execute(f"DROP TABLE IF EXISTS {self.table}")


def make_floor(server: ServerInfo) -> CassandraFloor:
    return CassandraFloor(server)


class CassandraGuardedFloor(CassandraFloor, GuardedFloor):
    """The naive floor's order is already the guarded one (the conditional batch on the
    static sequence orders appends and fences a replace that takes the same guard). What
    this floor adds is the read shape: system messages live in a static map on the
    partition (position -> JSON), set in the same conditional batch, so the one
    ``SELECT ... LIMIT 20`` returns them with every row at no extra read."""

    name = GuardedFloor.name
    kind = GuardedFloor.kind

    def __init__(self, server: ServerInfo) -> None:
        super().__init__(server, columns=", sys map<bigint, text> static")
        self.put_system = self.session.prepare(f"UPDATE {self.table} SET sys[?] = ? WHERE cid = ?")
        self.select = self.session.prepare(
            f"SELECT pos, content, sys FROM {self.table} WHERE cid = ? LIMIT {WINDOW}"
        )

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        rows: list[str] = []
        for m in messages:
            if is_system(m) or len(rows) == 200:
                self._append(cid, rows)
                rows = []
            if is_system(m):
                self._append_one(cid, m)
            else:
                rows.append(payload(m))
        self._append(cid, rows)

    def _append_one(self, cid: str, message: Message) -> None:
        if is_system(message):
            self._append(cid, [], system=payload(message))
        else:
            self._append(cid, [payload(message)])

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append_one(cid, user)
        self._append_one(cid, reply)
        rows = list(self.session.execute(self.select, (cid,)))
        systems = sorted((rows[0].sys or {}).items()) if rows else []
        return merge_window(systems, [(r.pos, r.content) for r in rows if r.content is not None])


def make_guarded_floor(server: ServerInfo) -> CassandraGuardedFloor:
    return CassandraGuardedFloor(server)
