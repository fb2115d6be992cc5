"""The bare-driver floor for SQLite: the stdlib ``sqlite3`` module, autocommit, WAL."""

from __future__ import annotations

import sqlite3

from conformance_tests.harness import ServerInfo


class SqliteFloor:
    """Append, append, read the last 20: the least work a hand-written store can do."""

    def __init__(self, server: ServerInfo) -> None:
        assert server.url is not None
        path = server.url.removeprefix("sqlite:///")
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS floor_messages (cid TEXT NOT NULL, seq INTEGER NOT NULL,"
            " role TEXT NOT NULL, content TEXT NOT NULL, PRIMARY KEY (cid, seq))"
        )
        self.next: dict[str, int] = {}

    def seed(self, cid: str, h: int) -> None:
        self.db.execute("DELETE FROM floor_messages WHERE cid = ?", (cid,))
        rows = [
            (cid, i, "user" if i % 2 == 0 else "assistant", f"seed message {i}") for i in range(h)
        ]
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO floor_messages VALUES (?, ?, ?, ?)", rows)
        self.db.execute("COMMIT")
        self.next[cid] = h

    def _append(self, cid: str, role: str, content: str) -> None:
        seq = self.next[cid]
        self.db.execute("INSERT INTO floor_messages VALUES (?, ?, ?, ?)", (cid, seq, role, content))
        self.next[cid] = seq + 1

    def turn(self, cid: str) -> None:
        self._append(cid, "user", "What is the weather like in Lisbon next week?")
        self._append(cid, "assistant", "Sunny and about 22 degrees, with a light breeze.")
        rows = self.db.execute(
            "SELECT role, content FROM floor_messages WHERE cid = ? ORDER BY seq DESC LIMIT 20",
            (cid,),
        ).fetchall()
        rows.reverse()

    def close(self) -> None:
        self.db.close()


def make_floor(server: ServerInfo) -> SqliteFloor:
    return SqliteFloor(server)
