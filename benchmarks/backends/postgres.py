"""The bare-driver floor for PostgreSQL: psycopg 3, one autocommit connection.

The least work a hand-written PostgreSQL store does: one autocommit ``INSERT`` per message
(one round trip each, as in a chat turn the assistant reply arrives after the model call)
with a client-side sequence number, and the last 20 by ``(cid, seq)`` through the primary
key. No pool, no ping, no positions from the store, no window rule, no concurrency guard.
psycopg prepares the repeated statements server-side, as it does for chatmem's.
"""

from __future__ import annotations

from typing import Any

from conformance_tests.harness import ServerInfo

USER = "What is the weather like in Lisbon next week?"
ASSISTANT = "Sunny and about 22 degrees, with a light breeze."
CREATE = (
    "CREATE TABLE IF NOT EXISTS bench_floor (cid VARCHAR(255) NOT NULL, seq BIGINT NOT NULL,"
    " role VARCHAR(16) NOT NULL, content TEXT NOT NULL, PRIMARY KEY (cid, seq))"
)
INSERT = "INSERT INTO bench_floor VALUES (%s, %s, %s, %s)"
LAST_20 = "SELECT role, content FROM bench_floor WHERE cid = %s ORDER BY seq DESC LIMIT 20"


class PostgresFloor:
    def __init__(self, server: ServerInfo) -> None:
        import psycopg
        import sqlalchemy as sa

        assert server.url is not None
        dsn = sa.make_url(server.url).set(drivername="postgresql")
        self.db: Any = psycopg.connect(dsn.render_as_string(hide_password=False), autocommit=True)
        self.db.execute(CREATE)
        self.next: dict[str, int] = {}

    def seed(self, cid: str, h: int) -> None:
        self.db.execute("DELETE FROM bench_floor WHERE cid = %s", (cid,))
        rows = [(cid, i, "user" if i % 2 else "assistant", f"seed message {i}") for i in range(h)]
        with self.db.transaction(), self.db.cursor() as cur:
            cur.executemany(INSERT, rows)
        self.next[cid] = h

    def _append(self, cid: str, role: str, content: str) -> None:
        seq = self.next[cid]
        self.db.execute(INSERT, (cid, seq, role, content))
        self.next[cid] = seq + 1

    def turn(self, cid: str) -> None:
        self._append(cid, "user", USER)
        self._append(cid, "assistant", ASSISTANT)
        rows = self.db.execute(LAST_20, (cid,)).fetchall()
        rows.reverse()
        assert len(rows) <= 20

    def close(self) -> None:
        self.db.execute("DROP TABLE IF EXISTS bench_floor")
        self.db.close()


def make_floor(server: ServerInfo) -> PostgresFloor:
    return PostgresFloor(server)
