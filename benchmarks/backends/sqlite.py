"""The bare-driver floor for SQLite: the stdlib ``sqlite3`` module.

Same durability as chatmem's engine (WAL, ``synchronous=NORMAL``, one transaction per
append: autocommit), store-assigned order (the rowid, ``INTEGER PRIMARY KEY``), the same
JSON payload per message, and the window of 20 read through a ``(cid, id)`` index, decoded.
No conversation row, no locking beyond SQLite's own, no system-message rule.
"""

# WINDOW is this module's own int constant; every value is a bind parameter.
# ruff: noqa: S608
from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from benchmarks._workload import WINDOW, Floor, GuardedFloor, is_system, payload
from chatmem.core import Message
from chatmem.testing.harness import ServerInfo

LAST = f"SELECT payload FROM floor_messages WHERE cid = ? ORDER BY id DESC LIMIT {WINDOW}"
INSERT = "INSERT INTO floor_messages (cid, payload) VALUES (?, ?)"


class SqliteFloor(Floor):
    def __init__(self, server: ServerInfo) -> None:
        assert server.url is not None
        path = server.url.removeprefix("sqlite:///")
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS floor_messages (id INTEGER PRIMARY KEY,"
            " cid TEXT NOT NULL, payload TEXT NOT NULL)"
        )
        self.db.execute("CREATE INDEX IF NOT EXISTS floor_window ON floor_messages (cid, id)")

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.db.execute("DELETE FROM floor_messages WHERE cid = ?", (cid,))
        self.db.execute("BEGIN")
        self.db.executemany(INSERT, [(cid, payload(m)) for m in messages])
        self.db.execute("COMMIT")

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self.db.execute(INSERT, (cid, payload(user)))
        self.db.execute(INSERT, (cid, payload(reply)))
        rows = self.db.execute(LAST, (cid,)).fetchall()
        return [json.loads(r[0]) for r in reversed(rows)]

    def close(self) -> None:
        self.db.execute("DROP TABLE IF EXISTS floor_messages")
        self.db.close()


def make_floor(server: ServerInfo) -> SqliteFloor:
    return SqliteFloor(server)


G_INSERT = "INSERT INTO guarded_messages (cid, sys, payload) VALUES (?, ?, ?)"
G_WINDOW = (
    "SELECT id, payload FROM guarded_messages WHERE cid = ? AND sys = 1 UNION ALL "
    "SELECT * FROM (SELECT id, payload FROM guarded_messages WHERE cid = ? AND sys = 0 "
    f"ORDER BY id DESC LIMIT {WINDOW}) ORDER BY 1"
)


class SqliteGuardedFloor(GuardedFloor):
    """The rowid is already the cheapest correct order here: SQLite serialises writers with
    its database lock, so ids are assigned in commit order and a replace (delete and insert
    in one transaction) cannot interleave with an append. What this floor adds to the naive
    one is the read shape: the system messages (a partial index) and the newest 20 others,
    one statement."""

    def __init__(self, server: ServerInfo) -> None:
        assert server.url is not None
        path = server.url.removeprefix("sqlite:///")
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS guarded_messages (id INTEGER PRIMARY KEY,"
            " cid TEXT NOT NULL, sys INTEGER NOT NULL, payload TEXT NOT NULL)"
        )
        self.db.execute("CREATE INDEX IF NOT EXISTS guarded_window ON guarded_messages (cid, id)")
        self.db.execute(
            "CREATE INDEX IF NOT EXISTS guarded_system ON guarded_messages (cid, id) WHERE sys = 1"
        )

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.db.execute("DELETE FROM guarded_messages WHERE cid = ?", (cid,))
        self.db.execute("BEGIN")
        self.db.executemany(G_INSERT, [(cid, is_system(m), payload(m)) for m in messages])
        self.db.execute("COMMIT")

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self.db.execute(G_INSERT, (cid, is_system(user), payload(user)))
        self.db.execute(G_INSERT, (cid, is_system(reply), payload(reply)))
        return [json.loads(r[1]) for r in self.db.execute(G_WINDOW, (cid, cid))]

    def close(self) -> None:
        self.db.execute("DROP TABLE IF EXISTS guarded_messages")
        self.db.close()


def make_guarded_floor(server: ServerInfo) -> SqliteGuardedFloor:
    return SqliteGuardedFloor(server)
