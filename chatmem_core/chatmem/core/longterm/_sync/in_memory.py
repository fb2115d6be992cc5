# Generated from chatmem_core/chatmem/core/longterm/_async/in_memory.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The in-memory record store: records and state entries in dicts under one lock, for
tests, demos and single-process apps."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime, timedelta

from .. import _rules as rules
from .. import _state as state
from .._model import AddResult, MemoryRecord, MemoryStatus, MemoryType
from .._state import StateEntry
from .repository import BaseMemoryRecordRepository


class InMemoryMemoryRecordRepository(BaseMemoryRecordRepository):
    """Records in a dict under one lock: for tests, demos and single-process apps."""

    def __init__(
        self,
        *,
        clock: rules.Clock = rules.utc_now,
        pending_ttl: timedelta = rules.DEFAULT_PENDING_TTL,
    ) -> None:
        super().__init__(clock=clock, pending_ttl=pending_ttl)
        self._records: dict[str, MemoryRecord] = {}
        self._keys: dict[str, str] = {}
        self._state: dict[tuple[str, str], StateEntry] = {}
        self._lock = threading.Lock()

    def _create_schema(self) -> None:
        return None  # dicts need no schema

    def _add(self, record: MemoryRecord, key: str) -> AddResult:
        with self._lock:
            existing = self._keys.get(key)
            if existing is not None:
                return AddResult(self._records[existing], False)
            self._records[record.id] = record
            self._keys[key] = record.id
            return AddResult(record, True)

    def _find(
        self,
        agent_id: str | None,
        user_id: str | None,
        status: MemoryStatus | None,
        memory_type: MemoryType | None,
        limit: int,
        after: tuple[datetime, str] | None,
        now: datetime,
    ) -> list[MemoryRecord]:
        with self._lock:
            stored = list(self._records.values())
        out = [
            r
            for r in sorted(stored, key=rules.sort_key)
            if (after is None or rules.sort_key(r) > after)
            and rules.matches(
                rules.effective(r, now),
                agent_id=agent_id,
                user_id=user_id,
                status=status,
                memory_type=memory_type,
            )
        ]
        return out[:limit]

    def _get(self, record_id: str) -> MemoryRecord | None:
        with self._lock:
            return self._records.get(record_id)

    def _review(
        self,
        record_id: str,
        decision: MemoryStatus,
        now: datetime,
        reviewer: str | None,
        reason: str | None,
        edit: tuple[str, str] | None,
    ) -> MemoryRecord | None:
        with self._lock:
            current = self._records.get(record_id)
            if current is None or rules.effective(current, now).status is not MemoryStatus.PENDING:
                return None
            done = rules.review(current, decision, now, reviewer=reviewer, reason=reason)
            if edit is not None:
                done = replace(done, content=edit[0], original_content=edit[1])
            self._records[record_id] = done
            return done

    def _delete(self, record_id: str) -> bool:
        with self._lock:
            record = self._records.pop(record_id, None)
            if record is None:
                return False
            key = rules.dedup_key(record.agent_id, record.user_id, rules.proposed(record))
            self._keys.pop(key, None)
            return True

    def _expire_due(self, now: datetime) -> int:
        with self._lock:
            due = [r for r in self._records.values() if rules.is_expired(r, now)]
            for r in due:
                self._records[r.id] = rules.effective(r, now)
            return len(due)

    def _read_state(self, namespace: str, key: str) -> StateEntry | None:
        with self._lock:
            return self._state.get((namespace, key))

    def _write_state(
        self, namespace: str, key: str, value: str, expected: int | None, now: datetime
    ) -> StateEntry | None:
        with self._lock:
            current = self._state.get((namespace, key))
            if (None if current is None else current.version) != expected:
                return None
            entry = state.next_entry(namespace, key, value, current, now)
            self._state[namespace, key] = entry
            return entry

    def _delete_state(self, namespace: str, key: str, expected: int | None) -> bool:
        with self._lock:
            current = self._state.get((namespace, key))
            if current is None or expected not in (None, current.version):
                return False
            del self._state[namespace, key]
            return True

    def _list_state(self, namespace: str, after: str | None, limit: int) -> list[StateEntry]:
        with self._lock:
            keys = sorted(
                k for ns, k in self._state if ns == namespace and (after is None or k > after)
            )
            return [self._state[namespace, k] for k in keys[:limit]]
