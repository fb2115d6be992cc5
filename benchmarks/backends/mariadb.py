"""The bare-driver floor for MariaDB: PyMySQL, one autocommit connection.

The least work a hand-written MariaDB store does: one autocommit ``INSERT`` per message (one
round trip each, as in a chat turn the assistant reply arrives after the model call) with a
client-side sequence number, and the last 20 by ``(cid, seq)`` through the primary key. No
pool, no ping, no positions from the store, no window rule, no concurrency guard.
"""

from __future__ import annotations

from typing import Any

from conformance_tests.harness import ServerInfo

USER = "What is the weather like in Lisbon next week?"
ASSISTANT = "Sunny and about 22 degrees, with a light breeze."
CREATE = (
    "CREATE TABLE IF NOT EXISTS bench_floor (cid VARBINARY(1020) NOT NULL, seq BIGINT NOT NULL,"
    " role VARCHAR(16) NOT NULL, content LONGTEXT CHARACTER SET utf8mb4 NOT NULL,"
    " PRIMARY KEY (cid, seq))"
)
INSERT = "INSERT INTO bench_floor VALUES (%s, %s, %s, %s)"
LAST_20 = "SELECT role, content FROM bench_floor WHERE cid = %s ORDER BY seq DESC LIMIT 20"


class MariadbFloor:
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
        self.next: dict[str, int] = {}

    def seed(self, cid: str, h: int) -> None:
        key = cid.encode()
        self.cur.execute("DELETE FROM bench_floor WHERE cid = %s", (key,))
        rows = [(key, i, "user" if i % 2 else "assistant", f"seed message {i}") for i in range(h)]
        self.db.begin()
        self.cur.executemany(INSERT, rows)
        self.db.commit()
        self.next[cid] = h

    def _append(self, cid: str, role: str, content: str) -> None:
        seq = self.next[cid]
        self.cur.execute(INSERT, (cid.encode(), seq, role, content))
        self.next[cid] = seq + 1

    def turn(self, cid: str) -> None:
        self._append(cid, "user", USER)
        self._append(cid, "assistant", ASSISTANT)
        self.cur.execute(LAST_20, (cid.encode(),))
        rows = list(self.cur.fetchall())
        rows.reverse()
        assert len(rows) <= 20

    def close(self) -> None:
        self.cur.execute("DROP TABLE IF EXISTS bench_floor")
        self.db.close()


def make_floor(server: ServerInfo) -> MariadbFloor:
    return MariadbFloor(server)
