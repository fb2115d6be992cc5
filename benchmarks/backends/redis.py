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

from benchmarks._workload import (
    WINDOW,
    Floor,
    GuardedFloor,
    PipelinedFloor,
    is_system,
    merge_window,
    payload,
)
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


# A system message is filed under the number of other messages before it, atomically.
_SYSTEM = "return redis.call('RPUSH', KEYS[2], redis.call('LLEN', KEYS[1]) .. ':' .. ARGV[1])"


class RedisGuardedFloor(GuardedFloor):
    """``RPUSH`` is already the cheapest correct order (one thread applies commands in
    order, and a replace as ``MULTI``/``EXEC`` is never interleaved). What this floor adds
    is the read shape: the other messages in one list, the system ones in a second list
    each tagged with how many others preceded it (one script, so the tag is exact), and
    the window read in one ``MULTI``: the log's length, its newest 20 and the system list,
    merged by position in the client."""

    def __init__(self, server: ServerInfo) -> None:
        import redis

        assert server.url is not None
        self.client: Any = redis.Redis.from_url(server.url)
        self.system = self.client.register_script(_SYSTEM)
        self.keys: list[str] = []

    def _keys(self, cid: str) -> tuple[str, str]:
        return f"bench-guarded:{cid}", f"bench-guarded-sys:{cid}"

    def _append(self, cid: str, message: Message) -> None:
        log, system = self._keys(cid)
        if is_system(message):
            self.system(keys=[log, system], args=[payload(message)])
        else:
            self.client.rpush(log, payload(message))

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        keys = self._keys(cid)
        self.keys += keys
        self.client.delete(*keys)
        for m in messages:  # untimed; the bench seeds no system message, so this is rare
            if is_system(m):
                self._append(cid, m)
        rows = [payload(m) for m in messages if not is_system(m)]
        for i in range(0, len(rows), 1000):
            self.client.rpush(keys[0], *rows[i : i + 1000])

    def _window(self, pipe: Any, cid: str) -> list[Any]:
        log, system = self._keys(cid)
        pipe.llen(log)
        pipe.lrange(log, -WINDOW, -1)
        pipe.lrange(system, 0, -1)
        *_, length, tail, systems = pipe.execute()
        first = length - len(tail)
        # a system message filed under k others sits just before other message k
        tagged = [(2 * int(k) - 1, c) for k, _, c in (s.partition(b":") for s in systems)]
        return merge_window(tagged, [(2 * (first + i), c) for i, c in enumerate(tail)])

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append(cid, user)
        self._append(cid, reply)
        return self._window(self.client.pipeline(transaction=True), cid)

    def close(self) -> None:
        if self.keys:
            self.client.delete(*self.keys)
        self.client.close()


class RedisPipelinedFloor(RedisGuardedFloor, PipelinedFloor):
    """The guarded floor with the second append inside the window read's ``MULTI``: one
    round trip for both."""

    name = PipelinedFloor.name
    kind = PipelinedFloor.kind

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        self._append(cid, user)
        pipe = self.client.pipeline(transaction=True)
        if is_system(reply):
            self.system(keys=list(self._keys(cid)), args=[payload(reply)], client=pipe)
        else:
            pipe.rpush(self._keys(cid)[0], payload(reply))
        return self._window(pipe, cid)


def make_guarded_floor(server: ServerInfo) -> RedisGuardedFloor:
    return RedisGuardedFloor(server)


def make_pipelined_floor(server: ServerInfo) -> RedisPipelinedFloor:
    return RedisPipelinedFloor(server)
