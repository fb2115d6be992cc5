# Generated from chatmem_mongo/chatmem/mongo/_async/leases.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The lease and seqlock of one conversation in a side collection, for stores without
multi-document transactions: a writer holds ``{_id: "lock:<id>"}`` (an insert with a unique
``_id``; deleted when done, or taken over once expired) and marks ``{_id: "seq:<id>"}`` busy
while it changes documents; a reader reads the mark before and after and retries when a
writer was busy or finished in between. A mixin of the Spring AI layout's repository."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pymongo.errors import DuplicateKeyError
from pymongo.synchronous.collection import Collection

from chatmem.core.backend import retry

from .._errors import translate_errors
from .._native.spring_ai import LEASE_MS, busy, lock_key, new_token, now_ms, seq_key

LOCK_ATTEMPTS = 1_000
"""Tries for a conversation's lease, up to 50 ms apart: longer than ``LEASE_MS`` in all."""
READ_ATTEMPTS = 1_000
T = TypeVar("T")


class ConversationLeases:
    """Leases and seqlock reads over ``locks`` (``ai_chat_memory_lock``)."""

    locks: Collection[dict[str, Any]]

    def _guarded(self, cid: str, read: Callable[[], T]) -> T:
        """``read()`` between two reads of the sequence document, retried until no writer
        was busy and none finished in between."""

        def attempt() -> tuple[T] | None:
            before = self.locks.find_one({"_id": seq_key(cid)})
            if busy(before, now_ms()):
                return None
            value = read()
            after = self.locks.find_one({"_id": seq_key(cid)})
            same = (before or {}).get("token") == (after or {}).get("token")
            return (value,) if same and not busy(after, now_ms()) else None

        with translate_errors("read conversation"):
            (value,) = retry(
                attempt, attempts=READ_ATTEMPTS, what="read", base_sleep=0.001, max_sleep=0.05
            )
        return value

    def _locked(
        self, cid: str, change: Callable[[], None], what: str, deleting: bool = False
    ) -> None:
        """Run ``change`` holding the conversation's lease, with its sequence document busy
        from before the first change to after the last (removed when ``deleting``)."""
        with translate_errors(what):
            owner = self._acquire(cid, what)
            try:
                seq = {"_id": seq_key(cid)}
                mark = {"token": owner, "busy": True, "expires": now_ms() + LEASE_MS}
                self.locks.update_one(seq, {"$set": mark}, upsert=True)
                try:
                    change()
                finally:  # a failed change still ends the busy mark (what it left is stored)
                    if deleting:
                        self.locks.delete_one(seq)
                    else:
                        done = {"token": new_token(), "busy": False}
                        self.locks.update_one(seq, {"$set": done})
            finally:
                self.locks.delete_one({"_id": lock_key(cid), "owner": owner})

    def _acquire(self, cid: str, what: str) -> str:
        """Take the conversation's lease: insert its lock document (``_id`` is unique), or
        remove an expired one's and try again."""
        owner, key = new_token(), lock_key(cid)

        def attempt() -> str | None:
            now = now_ms()
            try:
                self.locks.insert_one({"_id": key, "owner": owner, "expires": now + LEASE_MS})
                return owner
            except DuplicateKeyError:
                held = self.locks.find_one({"_id": key})
                if held is not None and int(held.get("expires", 0)) <= now:
                    self.locks.delete_one({"_id": key, "owner": held.get("owner")})
                return None

        return retry(attempt, attempts=LOCK_ATTEMPTS, what=what, base_sleep=0.001, max_sleep=0.05)
