"""The bare-driver floor for MongoDB: pymongo, one document per message.

Same durability as chatmem (the same server, the default write concern), the same JSON
payload (``message_to_dict``, as a sub-document), and ``find`` of the last 20 by
``(cid, seq)`` through its compound index. The one place it does less than chatmem: MongoDB
has no store-assigned sequence in one round trip (a counter costs a second one per message,
and ``$push`` is unusable on the nx-27017 stand-in), so ``seq`` is counted by this client,
which is correct for one writer only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks._workload import WINDOW, Floor, GuardedFloor, is_system
from chatmem.core import Message, message_to_dict
from chatmem.testing.harness import ServerInfo


class MongoFloor(Floor):
    def __init__(self, server: ServerInfo) -> None:
        from pymongo import ASCENDING, MongoClient

        assert server.url is not None
        self.client: MongoClient[dict[str, Any]] = MongoClient(server.url)
        self.messages = self.client.get_default_database()["bench_floor_messages"]
        self.messages.create_index([("cid", ASCENDING), ("seq", ASCENDING)])
        self.next: dict[str, int] = {}

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.messages.delete_many({"cid": cid})
        rows = [{"cid": cid, "seq": i, "m": message_to_dict(m)} for i, m in enumerate(messages)]
        for i in range(0, len(rows), 1000):
            self.messages.insert_many(rows[i : i + 1000])
        self.next[cid] = len(rows)

    def _append(self, cid: str, message: Message) -> None:
        seq = self.next[cid]
        self.messages.insert_one({"cid": cid, "seq": seq, "m": message_to_dict(message)})
        self.next[cid] = seq + 1

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append(cid, user)
        self._append(cid, reply)
        rows = self.messages.find({"cid": cid}, {"_id": 0, "m": 1}).sort("seq", -1).limit(WINDOW)
        return [r["m"] for r in reversed(list(rows))]

    def close(self) -> None:
        self.messages.drop()
        self.client.close()


def make_floor(server: ServerInfo) -> MongoFloor:
    return MongoFloor(server)


class MongoGuardedFloor(GuardedFloor):
    """Positions without a commit-order anomaly in one round trip per append: a unique
    index on (cid, seq) and each insert at the position this client expects next; a
    writer that lost the position to another gets a duplicate key, reads the maximum and
    retries, so no position is taken twice and none is taken below a committed one while
    nothing is deleted (this floor never trims; a replace that deleted would need a
    transaction or a conversation document, which is what chatmem keeps). The read shape
    costs two finds here: the system messages, and the newest 20 others by (cid, sys, seq)."""

    def __init__(self, server: ServerInfo) -> None:
        from pymongo import ASCENDING, MongoClient
        from pymongo.errors import DuplicateKeyError

        assert server.url is not None
        self.duplicate = DuplicateKeyError
        self.client: MongoClient[dict[str, Any]] = MongoClient(server.url)
        self.messages = self.client.get_default_database()["bench_guarded_messages"]
        self.messages.create_index([("cid", ASCENDING), ("seq", ASCENDING)], unique=True)
        self.messages.create_index([("cid", ASCENDING), ("sys", ASCENDING), ("seq", ASCENDING)])
        self.next: dict[str, int] = {}

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.messages.delete_many({"cid": cid})
        rows = [
            {"cid": cid, "seq": i, "sys": is_system(m), "m": message_to_dict(m)}
            for i, m in enumerate(messages)
        ]
        for i in range(0, len(rows), 1000):
            self.messages.insert_many(rows[i : i + 1000])
        self.next[cid] = len(rows)

    def _append(self, cid: str, message: Message) -> None:
        doc = {"cid": cid, "sys": is_system(message), "m": message_to_dict(message)}
        while True:
            seq = self.next.get(cid, 0)
            try:
                self.messages.insert_one({**doc, "seq": seq})
            except self.duplicate:
                top = self.messages.find_one({"cid": cid}, {"seq": 1}, sort=[("seq", -1)])
                self.next[cid] = (top or {"seq": -1})["seq"] + 1
                continue
            self.next[cid] = seq + 1
            return

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append(cid, user)
        self._append(cid, reply)
        only = {"_id": 0, "seq": 1, "m": 1}
        systems = list(self.messages.find({"cid": cid, "sys": True}, only))
        tail = self.messages.find({"cid": cid, "sys": False}, only).sort("seq", -1).limit(WINDOW)
        rows = sorted([*systems, *tail], key=lambda r: r["seq"])
        return [r["m"] for r in rows]

    def close(self) -> None:
        self.messages.drop()
        self.client.close()


def make_guarded_floor(server: ServerInfo) -> MongoGuardedFloor:
    return MongoGuardedFloor(server)
