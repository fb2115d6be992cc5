"""The bare-driver floor for Redis: redis-py, one list of JSON strings per conversation.

The least work a hand-written Redis store can do: RPUSH each message (one round trip each,
as in a chat turn the assistant reply arrives after the model call) and LRANGE the last 20,
decoded. No documents, no index, no positions, no atomic window rule.
"""

from __future__ import annotations

import json
from typing import Any

from conformance_tests.harness import ServerInfo

USER = json.dumps({"role": "user", "content": "What is the weather like in Lisbon next week?"})
ASSISTANT = json.dumps(
    {"role": "assistant", "content": "Sunny and about 22 degrees, with a light breeze."}
)


class RedisFloor:
    def __init__(self, server: ServerInfo) -> None:
        import redis

        assert server.url is not None
        self.client: Any = redis.Redis.from_url(server.url)
        self.keys: list[str] = []

    def _key(self, cid: str) -> str:
        return f"bench-floor:{cid}"

    def seed(self, cid: str, h: int) -> None:
        key = self._key(cid)
        self.keys.append(key)
        self.client.delete(key)
        rows = [
            json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"seed {i}"})
            for i in range(h)
        ]
        for i in range(0, h, 1000):
            self.client.rpush(key, *rows[i : i + 1000])

    def turn(self, cid: str) -> None:
        key = self._key(cid)
        self.client.rpush(key, USER)
        self.client.rpush(key, ASSISTANT)
        window = [json.loads(x) for x in self.client.lrange(key, -20, -1)]
        assert len(window) <= 20

    def close(self) -> None:
        if self.keys:
            self.client.delete(*self.keys)
        self.client.close()


def make_floor(server: ServerInfo) -> RedisFloor:
    return RedisFloor(server)
