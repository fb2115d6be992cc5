"""The bare-driver floor for Redis: redis-py, one list of JSON strings per conversation.

Same durability as chatmem (the same server and its persistence settings), store-assigned
order (``RPUSH`` appends at the tail atomically; one round trip per message, as in a chat
turn the reply arrives after the model call), the same JSON payload, and ``LRANGE`` of the
last 20, decoded. No documents, no index, no positions, no system-message rule.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from benchmarks._workload import WINDOW, Floor, payload
from chatmem.core import Message
from chatmem.testing.harness import ServerInfo


class RedisFloor(Floor):
    def __init__(self, server: ServerInfo) -> None:
        import redis

        assert server.url is not None
        self.client: Any = redis.Redis.from_url(server.url)
        self.keys: list[str] = []

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        key = f"bench-floor:{cid}"
        self.keys.append(key)
        self.client.delete(key)
        rows = [payload(m) for m in messages]
        for i in range(0, len(rows), 1000):
            self.client.rpush(key, *rows[i : i + 1000])

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        key = f"bench-floor:{cid}"
        self.client.rpush(key, payload(user))
        self.client.rpush(key, payload(reply))
        return [json.loads(x) for x in self.client.lrange(key, -WINDOW, -1)]

    def close(self) -> None:
        if self.keys:
            self.client.delete(*self.keys)
        self.client.close()


def make_floor(server: ServerInfo) -> RedisFloor:
    return RedisFloor(server)
