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

from benchmarks._workload import WINDOW, Floor
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
