"""The bare-driver floor for Neo4j: the official driver, one node per message.

Same durability as chatmem (the same server, auto-commit transactions), store-assigned order
(each append is one query that bumps a counter on the conversation's node, whose write lock
orders concurrent appends, and creates the message node with that position), the same JSON
payload as a string property, and the window as one ``MATCH ... ORDER BY ... LIMIT 20``
served by a composite index on (conversation id, position), decoded. No parts as nodes, no
replace, no system-message rule.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from benchmarks._workload import WINDOW, Floor, GuardedFloor, PipelinedFloor, is_system, payload
from chatmem.core import Message
from chatmem.testing.harness import ServerInfo, unique_suffix


class Neo4jFloor(Floor):
    def __init__(self, server: ServerInfo) -> None:
        self.driver: Any = server.extra["driver"]
        suffix = unique_suffix()
        self.label, self.conv = f"FloorMessage_{suffix}", f"FloorConversation_{suffix}"
        self.indexes = (f"floor_m_{suffix}", f"floor_c_{suffix}")
        self.driver.execute_query(
            f"CREATE INDEX `{self.indexes[0]}` IF NOT EXISTS FOR (m:`{self.label}`) "
            "ON (m.cid, m.pos)"
        )
        self.driver.execute_query(
            f"CREATE INDEX `{self.indexes[1]}` IF NOT EXISTS FOR (c:`{self.conv}`) ON (c.cid)"
        )
        self.driver.execute_query("CALL db.awaitIndexes(300)")
        self.session = self.driver.session()
        self.append = (
            f"MERGE (c:`{self.conv}` {{cid: $cid}}) SET c.next = coalesce(c.next, 0) + 1 "
            f"CREATE (:`{self.label}` {{cid: $cid, pos: c.next, content: $content}})"
        )
        self.select = (
            f"MATCH (m:`{self.label}`) WHERE m.cid = $cid AND m.pos >= 0 "
            f"RETURN m.content AS content ORDER BY m.cid DESC, m.pos DESC LIMIT {WINDOW}"
        )

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        # untimed: positions counted here, the counter set once per batch
        rows = [{"pos": i + 1, "content": payload(m)} for i, m in enumerate(messages)]
        for i in range(0, len(rows), 1000):
            batch = rows[i : i + 1000]
            self.driver.execute_query(
                f"MERGE (c:`{self.conv}` {{cid: $cid}}) SET c.next = $next WITH c "
                f"UNWIND $rows AS r CREATE (:`{self.label}` {{cid: $cid, pos: r.pos, "
                "content: r.content})",
                {"cid": cid, "rows": batch, "next": batch[-1]["pos"]},
            )

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self.session.run(self.append, {"cid": cid, "content": payload(user)}).consume()
        self.session.run(self.append, {"cid": cid, "content": payload(reply)}).consume()
        rows = list(self.session.run(self.select, {"cid": cid}))
        return [json.loads(r["content"]) for r in reversed(rows)]

    def close(self) -> None:
        # tens of thousands of nodes: deleted in batches, one transaction each (an auto-commit
        # query, which CALL ... IN TRANSACTIONS needs), or the server's transaction memory
        # limit is reached
        for label in (self.label, self.conv):
            self.session.run(
                f"MATCH (n:`{label}`) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF 5000 ROWS"
            ).consume()
        self.session.close()
        for index in self.indexes:
            self.driver.execute_query(f"DROP INDEX `{index}` IF EXISTS")


def make_floor(server: ServerInfo) -> Neo4jFloor:
    return Neo4jFloor(server)


class Neo4jGuardedFloor(GuardedFloor):
    """The naive floor's order is already the cheapest correct one: the counter on the
    conversation node is bumped under that node's write lock, so positions are taken in
    commit order, and a replace that takes the same lock first cannot be interleaved. What
    this floor adds is the read shape: system messages carry a label of their own (with its
    own (cid, pos) index), and the window is one query, their union with the newest 20
    others."""

    def __init__(self, server: ServerInfo) -> None:
        self.driver: Any = server.extra["driver"]
        suffix = unique_suffix()
        self.label, self.system = f"GuardedMessage_{suffix}", f"GuardedSystem_{suffix}"
        self.conv = f"GuardedConversation_{suffix}"
        self.indexes = (f"guarded_m_{suffix}", f"guarded_s_{suffix}", f"guarded_c_{suffix}")
        labels = (self.label, self.system, self.conv)
        props = ("n.cid, n.pos", "n.cid, n.pos", "n.cid")
        for index, label, on in zip(self.indexes, labels, props, strict=True):
            self.driver.execute_query(
                f"CREATE INDEX `{index}` IF NOT EXISTS FOR (n:`{label}`) ON ({on})"
            )
        self.driver.execute_query("CALL db.awaitIndexes(300)")
        self.session = self.driver.session()
        bump = f"MERGE (c:`{self.conv}` {{cid: $cid}}) SET c.next = coalesce(c.next, 0) + 1 "
        self.append = {
            sys: bump + f"CREATE (:`{label}` {{cid: $cid, pos: c.next, content: $content}})"
            for sys, label in ((False, self.label), (True, self.system))
        }
        self.window = (
            f"CALL () {{ MATCH (s:`{self.system}`) WHERE s.cid = $cid AND s.pos >= 0 "
            "RETURN s.pos AS pos, s.content AS content UNION ALL "
            f"MATCH (m:`{self.label}`) WHERE m.cid = $cid AND m.pos >= 0 "
            "RETURN m.pos AS pos, m.content AS content "
            f"ORDER BY m.cid DESC, m.pos DESC LIMIT {WINDOW} }} "
            "RETURN content ORDER BY pos"
        )

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        # untimed: positions counted here, the counter set once per batch
        rows = [
            (is_system(m), {"pos": i + 1, "content": payload(m)}) for i, m in enumerate(messages)
        ]
        for i in range(0, len(rows), 1000):
            batch = rows[i : i + 1000]
            for sys, label in ((False, self.label), (True, self.system)):
                self.driver.execute_query(
                    f"MERGE (c:`{self.conv}` {{cid: $cid}}) SET c.next = $next WITH c "
                    f"UNWIND $rows AS r CREATE (:`{label}` {{cid: $cid, pos: r.pos, "
                    "content: r.content})",
                    {"cid": cid, "rows": [r for s, r in batch if s is sys], "next": i + len(batch)},
                )

    def _append(self, cid: str, message: Message) -> None:
        query = self.append[is_system(message)]
        self.session.run(query, {"cid": cid, "content": payload(message)}).consume()

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append(cid, user)
        self._append(cid, reply)
        rows = list(self.session.run(self.window, {"cid": cid}))
        return [json.loads(r["content"]) for r in rows]

    def close(self) -> None:
        for label in (self.label, self.system, self.conv):
            self.session.run(
                f"MATCH (n:`{label}`) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF 5000 ROWS"
            ).consume()
        self.session.close()
        for index in self.indexes:
            self.driver.execute_query(f"DROP INDEX `{index}` IF EXISTS")


class Neo4jPipelinedFloor(Neo4jGuardedFloor, PipelinedFloor):
    """The guarded floor with the second append and the window read as one query (a later
    clause sees what an earlier one wrote): one round trip for both."""

    name = PipelinedFloor.name
    kind = PipelinedFloor.kind

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append(cid, user)
        query = f"{self.append[is_system(reply)]} WITH count(*) AS added {self.window}"
        rows = list(self.session.run(query, {"cid": cid, "content": payload(reply)}))
        return [json.loads(r["content"]) for r in rows]


def make_guarded_floor(server: ServerInfo) -> Neo4jGuardedFloor:
    return Neo4jGuardedFloor(server)


def make_pipelined_floor(server: ServerInfo) -> Neo4jPipelinedFloor:
    return Neo4jPipelinedFloor(server)
