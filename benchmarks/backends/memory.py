"""The floor for the in-memory backend: a dict of lists of dicts, under one lock.

Store-assigned order is the list's; the window is the last 20. It exists so the bench's own
test can run the whole pipeline with no server at all.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from benchmarks._workload import WINDOW, Floor, GuardedFloor, is_system
from chatmem.core import Message, message_to_dict
from chatmem.testing.harness import ServerInfo


class MemoryFloor(Floor):
    def __init__(self, server: ServerInfo) -> None:
        self.lock = threading.Lock()
        self.logs: dict[str, list[dict[str, Any]]] = {}

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.logs[cid] = [message_to_dict(m) for m in messages]

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        with self.lock:
            self.logs[cid].append(message_to_dict(user))
        with self.lock:
            self.logs[cid].append(message_to_dict(reply))
        with self.lock:
            return self.logs[cid][-WINDOW:]


def make_floor(server: ServerInfo) -> MemoryFloor:
    return MemoryFloor(server)


class MemoryGuardedFloor(GuardedFloor):
    """The naive floor plus the read shape: the system messages and the newest 20 others."""

    def __init__(self, server: ServerInfo) -> None:
        self.lock = threading.Lock()
        self.logs: dict[str, list[tuple[bool, dict[str, Any]]]] = {}

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.logs[cid] = [(is_system(m), message_to_dict(m)) for m in messages]

    def turn(self, cid: str, user: Message, reply: Message) -> list[Any]:
        for m in (user, reply):
            with self.lock:
                self.logs[cid].append((is_system(m), message_to_dict(m)))
        with self.lock:
            log = self.logs[cid]
            keep = {i for i, (sys, _) in enumerate(log) if sys}
            others = [i for i in range(len(log) - 1, -1, -1) if i not in keep][:WINDOW]
            return [log[i][1] for i in sorted(keep.union(others))]


def make_guarded_floor(server: ServerInfo) -> MemoryGuardedFloor:
    return MemoryGuardedFloor(server)
