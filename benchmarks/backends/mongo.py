"""The bare-driver floor for MongoDB: pymongo, one document per message.

The least work a hand-written MongoDB store does (Spring AI's and LangChain's layout): an
``insert_one`` per message (one round trip each, as in a chat turn the assistant reply
arrives after the model call) with a client-side sequence number, and ``find`` the last 20 by
``(cid, seq)`` through its compound index. No positions from the store, no atomic window rule,
no concurrency guard. (``$push`` with ``$slice`` on one document would be fewer bytes, but
the nx-27017 stand-in stores pushed documents as JSON strings, so it is no floor there.)
"""

from __future__ import annotations

from typing import Any

from conformance_tests.harness import ServerInfo

USER = {"role": "user", "content": "What is the weather like in Lisbon next week?"}
ASSISTANT = {"role": "assistant", "content": "Sunny and about 22 degrees, with a light breeze."}


class MongoFloor:
    def __init__(self, server: ServerInfo) -> None:
        from pymongo import ASCENDING, MongoClient

        assert server.url is not None
        self.client: MongoClient[dict[str, Any]] = MongoClient(server.url)
        self.messages = self.client.get_default_database()["bench_floor_messages"]
        self.messages.create_index([("cid", ASCENDING), ("seq", ASCENDING)])
        self.next: dict[str, int] = {}

    def seed(self, cid: str, h: int) -> None:
        self.messages.delete_many({"cid": cid})
        rows = [
            {
                "cid": cid,
                "seq": i,
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"seed message {i}",
            }
            for i in range(h)
        ]
        for i in range(0, h, 1000):
            self.messages.insert_many(rows[i : i + 1000])
        self.next[cid] = h

    def _append(self, cid: str, message: dict[str, str]) -> None:
        seq = self.next[cid]
        self.messages.insert_one({"cid": cid, "seq": seq, **message})
        self.next[cid] = seq + 1

    def turn(self, cid: str) -> None:
        self._append(cid, USER)
        self._append(cid, ASSISTANT)
        window = list(self.messages.find({"cid": cid}, {"_id": 0}).sort("seq", -1).limit(20))
        window.reverse()
        assert len(window) <= 20

    def close(self) -> None:
        self.messages.drop()
        self.client.close()


def make_floor(server: ServerInfo) -> MongoFloor:
    return MongoFloor(server)
