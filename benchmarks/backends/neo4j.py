"""The bare-driver floor for Neo4j: the official driver, one node per message.

``make_floor`` is the least work a hand-written Neo4j store does: each message is one
auto-commit ``CREATE`` of a node holding the conversation id, a client clock (nanoseconds)
and the message as a JSON string; the window is one ``MATCH ... ORDER BY ... LIMIT 20``
served in order by a composite index on (conversation id, clock), decoded. No session node,
no lock, no parts as nodes: concurrent writers with skewed clocks interleave, a reader can
see half of a replace, and nothing keeps system messages.
"""

from __future__ import annotations

import json
import time
from typing import Any

from conformance_tests.harness import ServerInfo, unique_suffix

USER = json.dumps({"role": "user", "content": "What is the weather like in Lisbon next week?"})
ASSISTANT = json.dumps(
    {"role": "assistant", "content": "Sunny and about 22 degrees, with a light breeze."}
)


class Neo4jFloor:
    def __init__(self, server: ServerInfo) -> None:
        self.driver: Any = server.extra["driver"]
        self.label = f"FloorMessage_{unique_suffix()}"
        self.index = f"floor_{self.label}"
        self.driver.execute_query(
            f"CREATE INDEX `{self.index}` IF NOT EXISTS FOR (m:`{self.label}`) ON (m.cid, m.ts)"
        )
        self.driver.execute_query("CALL db.awaitIndexes(300)")
        self.session = self.driver.session()
        self.create = f"CREATE (:`{self.label}` {{cid: $cid, ts: $ts, content: $content}})"
        self.select = (
            f"MATCH (m:`{self.label}`) WHERE m.cid = $cid AND m.ts >= 0 "
            "RETURN m.content AS content ORDER BY m.cid DESC, m.ts DESC LIMIT 20"
        )

    def seed(self, cid: str, h: int) -> None:
        rows = [
            {
                "ts": time.time_ns() + i,
                "content": json.dumps(
                    {"role": "user" if i % 2 == 0 else "assistant", "content": f"seed {i}"}
                ),
            }
            for i in range(h)
        ]
        for i in range(0, h, 1000):
            self.driver.execute_query(
                f"UNWIND $rows AS r CREATE (:`{self.label}` {{cid: $cid, ts: r.ts, "
                "content: r.content})",
                {"cid": cid, "rows": rows[i : i + 1000]},
            )

    def turn(self, cid: str) -> None:
        self.session.run(self.create, {"cid": cid, "ts": time.time_ns(), "content": USER}).consume()
        self.session.run(
            self.create, {"cid": cid, "ts": time.time_ns(), "content": ASSISTANT}
        ).consume()
        rows = list(self.session.run(self.select, {"cid": cid}))
        window = [json.loads(r["content"]) for r in reversed(rows)]
        assert len(window) <= 20

    def close(self) -> None:
        self.session.close()
        self.driver.execute_query(f"MATCH (m:`{self.label}`) DETACH DELETE m")
        self.driver.execute_query(f"DROP INDEX `{self.index}` IF EXISTS")


def make_floor(server: ServerInfo) -> Neo4jFloor:
    return Neo4jFloor(server)
