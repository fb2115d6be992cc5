"""The bare-driver floor for Cassandra: cassandra-driver, one partition per conversation.

``make_floor`` is the least work a hand-written Cassandra store does (Spring AI's shape):
each message is one prepared INSERT clustered by a client-made time UUID, newest first, and
the window is one prepared ``SELECT ... LIMIT 20``, decoded. No store-assigned positions, no
guard: concurrent writers with skewed clocks interleave, and nothing keeps system messages.

``make_guarded_floor`` is the least work that keeps chatmem's guarantees by hand (positions
assigned under a lightweight transaction on a static sequence, remembered between calls, so
one LWT per append): run it with ``python -m benchmarks.backends.cassandra`` to see what the
LWT itself costs on this server.
"""

# The table name is made here from a random hex suffix; every value is a bind marker.
# ruff: noqa: S608
from __future__ import annotations

import json
import uuid
from typing import Any

from conformance_tests.harness import ServerInfo, unique_suffix

USER = json.dumps({"role": "user", "content": "What is the weather like in Lisbon next week?"})
ASSISTANT = json.dumps(
    {"role": "assistant", "content": "Sunny and about 22 degrees, with a light breeze."}
)


class _Base:
    def __init__(self, server: ServerInfo, ddl: str) -> None:
        self.session: Any = server.extra["session"]
        self.table = f'"{server.extra["keyspace"]}"."floor_{unique_suffix()}"'
        self.session.execute(ddl.format(t=self.table))

    def close(self) -> None:
        self.session.execute(f"DROP TABLE IF EXISTS {self.table}")


class CassandraFloor(_Base):
    def __init__(self, server: ServerInfo) -> None:
        super().__init__(
            server,
            "CREATE TABLE {t} (cid text, ts timeuuid, content text, PRIMARY KEY ((cid), ts)) "
            "WITH CLUSTERING ORDER BY (ts DESC)",
        )
        self.insert = self.session.prepare(
            f"INSERT INTO {self.table} (cid, ts, content) VALUES (?, ?, ?)"
        )
        self.select = self.session.prepare(
            f"SELECT content FROM {self.table} WHERE cid = ? LIMIT 20"
        )

    def seed(self, cid: str, h: int) -> None:
        from cassandra.concurrent import execute_concurrent_with_args

        rows = [
            (
                cid,
                uuid.uuid1(),
                json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"seed {i}"}),
            )
            for i in range(h)
        ]
        execute_concurrent_with_args(self.session, self.insert, rows, concurrency=50)

    def turn(self, cid: str) -> None:
        self.session.execute(self.insert, (cid, uuid.uuid1(), USER))
        self.session.execute(self.insert, (cid, uuid.uuid1(), ASSISTANT))
        window = [json.loads(r[0]) for r in self.session.execute(self.select, (cid,))][::-1]
        assert len(window) <= 20


class GuardedCassandraFloor(_Base):
    """Positions from a static sequence advanced by one conditional batch per append."""

    def __init__(self, server: ServerInfo) -> None:
        super().__init__(
            server,
            "CREATE TABLE {t} (cid text, pos bigint, nxt bigint static, content text, "
            "PRIMARY KEY ((cid), pos)) WITH CLUSTERING ORDER BY (pos DESC)",
        )
        self.insert = self.session.prepare(
            f"INSERT INTO {self.table} (cid, pos, content) VALUES (?, ?, ?)"
        )
        self.advance = self.session.prepare(
            f"UPDATE {self.table} SET nxt = ? WHERE cid = ? IF nxt = ?"
        )
        self.select = self.session.prepare(
            f"SELECT content FROM {self.table} WHERE cid = ? LIMIT 20"
        )
        self.next: dict[str, int | None] = {}

    def _append(self, cid: str, contents: list[str]) -> None:
        from cassandra.query import BatchStatement, BatchType

        while True:
            n = self.next.get(cid)
            start = n or 0
            batch = BatchStatement(batch_type=BatchType.UNLOGGED)
            batch.add(self.advance, (start + len(contents), cid, n))
            for i, content in enumerate(contents):
                batch.add(self.insert, (cid, start + i, content))
            result = self.session.execute(batch)
            if result.was_applied:
                self.next[cid] = start + len(contents)
                return
            self.next[cid] = result.one().nxt

    def seed(self, cid: str, h: int) -> None:
        rows = [
            json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"seed {i}"})
            for i in range(h)
        ]
        for i in range(0, h, 500):
            self._append(cid, rows[i : i + 500])

    def turn(self, cid: str) -> None:
        self._append(cid, [USER])
        self._append(cid, [ASSISTANT])
        window = [json.loads(r[0]) for r in self.session.execute(self.select, (cid,))][::-1]
        assert len(window) <= 20


def make_floor(server: ServerInfo) -> CassandraFloor:
    return CassandraFloor(server)


def make_guarded_floor(server: ServerInfo) -> GuardedCassandraFloor:
    return GuardedCassandraFloor(server)


if __name__ == "__main__":  # chatmem against both floors on one server: the price of the guard
    import statistics
    import tempfile
    import time
    from pathlib import Path

    from benchmarks.run import _chatmem_turn, _seed_messages
    from chatmem.core import MessageWindowChatMemory
    from conformance_tests.plugin import load_harness, provision

    harness = load_harness("cassandra")
    srv = provision(harness, Path(tempfile.mkdtemp(prefix="chatmem-bench-cassandra-")))
    turns, rounds = 200, 5
    try:
        floors = {"bare": make_floor(srv), "guarded": make_guarded_floor(srv)}
        for h in (10, 1_000, 10_000):
            repo = harness.make_repository(srv)
            repo.save_all(f"c{h}", _seed_messages(h))
            runs: dict[str, Any] = {
                "chatmem": _chatmem_turn(MessageWindowChatMemory(repo, max_messages=20), f"c{h}")
            }
            for name, floor in floors.items():
                floor.seed(f"f{h}", h)
                runs[name] = lambda floor=floor, cid=f"f{h}": floor.turn(cid)
            for run in runs.values():
                for _ in range(30):
                    run()
            rates: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(rounds):
                for name, run in runs.items():
                    t0 = time.perf_counter()
                    for _ in range(turns):
                        run()
                    rates[name].append(turns / (time.perf_counter() - t0))
            tps = {name: statistics.median(r) for name, r in rates.items()}
            print(
                f"H={h:<6} chatmem {tps['chatmem']:6.0f}  bare {tps['bare']:6.0f} "
                f"(ratio {tps['chatmem'] / tps['bare']:.2f})  guarded {tps['guarded']:6.0f} "
                f"(ratio {tps['chatmem'] / tps['guarded']:.2f}) turns/s",
                flush=True,
            )
            harness.cleanup(srv, repo)
        for floor in floors.values():
            floor.close()
    finally:
        srv.stop()
