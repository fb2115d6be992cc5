# Generated from chatmem_core/chatmem/core/longterm/_async/repository.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The record store contract: ``MemoryRecordRepository`` (what core accepts), the base
class our stores extend (validates once, before any I/O, then calls a hook), with the state
primitive (``read_state`` ... ``list_state``, see ``_state``). The in-memory store is in
``in_memory``.

Hooks receive validated arguments and ``now`` from the store's clock; they hold I/O only.
Every rule (expiry, transitions, dedup key) comes from ``_rules`` and ``_state``, so a store's
two twins differ only in their I/O.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from chatmem.core._errors import ConcurrencyError, InvalidArgumentError

from .. import _queue as queue
from .. import _rules as rules
from .. import _state as state
from .._model import (
    AddResult,
    MemoryCandidate,
    MemoryNotFoundError,
    MemoryRecord,
    MemoryRecordPage,
    MemoryStatus,
    MemoryType,
)
from .._state import StateEntry


@runtime_checkable
class MemoryRecordRepository(Protocol):
    """Stores long-term memory records. Ids are the UUID strings ``add`` returns."""

    def add(
        self,
        agent_id: str,
        user_id: str,
        candidate: MemoryCandidate,
        *,
        conversation_id: str | None = None,
        message_position: int | None = None,
        pending_ttl: timedelta | None = None,
    ) -> AddResult:
        """Store a candidate as pending (expiring after ``pending_ttl``, else the store's
        own), unless the user already has a memory with the same normalised content (any
        status): then return that one with ``created=False``."""
        ...

    def find(
        self,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        status: MemoryStatus | str | None = None,
        memory_type: MemoryType | str | None = None,
        limit: int = rules.DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        text: str | None = None,
        min_confidence: float | None = None,
    ) -> MemoryRecordPage:
        """Records passing every given filter, oldest first, as they stand now (expired
        pending records read as rejected); ``text`` is a case-insensitive substring of the
        content, ``min_confidence`` an inclusive lower bound."""
        ...

    def get(self, record_id: str) -> MemoryRecord | None:
        """The record as it stands now, or None."""
        ...

    def approve(
        self,
        record_id: str,
        *,
        reviewer: str | None = None,
        reason: str | None = None,
        content: str | None = None,
    ) -> MemoryRecord:
        """Approve a pending record, with ``content`` as the reviewer's edited wording (the
        proposed one kept as ``original_content``); MemoryStateError if it is not pending any
        more (one winner when reviewers race), MemoryNotFoundError if there is no such record."""
        ...

    def reject(
        self, record_id: str, *, reviewer: str | None = None, reason: str | None = None
    ) -> MemoryRecord:
        """Reject (archive) a pending record; errors as ``approve``."""
        ...

    def delete(self, record_id: str) -> bool:
        """Remove a record of any status; False when there was none."""
        ...

    def expire_due(self) -> int:
        """Persist the expiry of every pending record past its deadline; how many."""
        ...

    def forget_user(self, user_id: str, *, agent_id: str | None = None) -> int:
        """A user's "forget me": delete every record of ``user_id`` (of one agent with
        ``agent_id``), of any status, and their messages waiting in the durable analysis
        queue; how many records were deleted."""
        ...

    def read_state(self, namespace: str, key: str) -> StateEntry | None:
        """The state entry stored under ``(namespace, key)``, or None."""
        ...

    def write_state(
        self, namespace: str, key: str, value: str, *, expected_version: int | None = None
    ) -> StateEntry | None:
        """Create the entry (``expected_version=None``: only if absent) or replace it (only if
        its version is ``expected_version``); the stored entry, or None when the condition
        failed. Of racing writers with the same condition exactly one succeeds."""
        ...

    def delete_state(
        self, namespace: str, key: str, *, expected_version: int | None = None
    ) -> bool:
        """Delete the entry (only at ``expected_version`` when given); whether one was."""
        ...

    def list_state(
        self,
        namespace: str,
        *,
        after: str | None = None,
        limit: int = state.DEFAULT_STATE_PAGE_SIZE,
    ) -> list[StateEntry]:
        """Up to ``limit`` entries of ``namespace`` with keys after ``after``, in ascending
        code-point order of key."""
        ...


class BaseMemoryRecordRepository(ABC):
    """Validates every argument before any I/O, reads the clock once per call, and calls
    the ``_``-prefixed hook that a store implements."""

    def __init__(
        self,
        *,
        clock: rules.Clock = rules.utc_now,
        pending_ttl: timedelta = rules.DEFAULT_PENDING_TTL,
    ) -> None:
        if not callable(clock):
            raise InvalidArgumentError("clock", "must be callable")
        self.clock = clock
        self.pending_ttl = rules.validate_pending_ttl(pending_ttl)

    _schema_pending = False
    """True until the schema a store creates on first use exists (see ``_schema_on_first_use``)."""

    def _schema_on_first_use(self, wanted: bool) -> None:
        """Called by a store's constructor: with ``wanted``, create the schema now (the
        blocking twin) or on the first call that needs it (the non-blocking twin, whose
        constructor does no I/O)."""
        self._schema_pending = wanted
        self._ready()

    @abstractmethod
    def _create_schema(self) -> None:
        """Create what the store needs (tables, indexes, constraints), if missing."""

    def _ready(self) -> None:
        """Run ``_create_schema`` once, on the first call that needs the schema."""
        if self._schema_pending:
            lock = self.__dict__.setdefault("_schema_lock", threading.Lock())
            with lock:
                if self._schema_pending:
                    self._create_schema()
                    self._schema_pending = False

    def now(self) -> datetime:
        """The clock's time as aware UTC at microsecond precision (what stores keep)."""
        return rules.as_utc(self.clock(), "clock()")

    def add(
        self,
        agent_id: str,
        user_id: str,
        candidate: MemoryCandidate,
        *,
        conversation_id: str | None = None,
        message_position: int | None = None,
        pending_ttl: timedelta | None = None,
    ) -> AddResult:
        ttl = self.pending_ttl if pending_ttl is None else rules.validate_pending_ttl(pending_ttl)
        record = rules.new_record(
            agent_id=rules.validate_id(agent_id, "agent_id"),
            user_id=rules.validate_id(user_id, "user_id"),
            candidate=rules.validate_candidate(candidate),
            now=self.now(),
            pending_ttl=ttl,
            conversation_id=None
            if conversation_id is None
            else rules.validate_id(conversation_id, "conversation_id"),
            message_position=rules.validate_position(message_position),
        )
        key = rules.dedup_key(record.agent_id, record.user_id, record.content)
        result = self._add(record, key)
        return AddResult(rules.effective(result.record, record.created_at), result.created)

    def find(
        self,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        status: MemoryStatus | str | None = None,
        memory_type: MemoryType | str | None = None,
        limit: int = rules.DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        text: str | None = None,
        min_confidence: float | None = None,
    ) -> MemoryRecordPage:
        agent = None if agent_id is None else rules.validate_id(agent_id, "agent_id")
        user = None if user_id is None else rules.validate_id(user_id, "user_id")
        wanted = None if status is None else rules.validate_status(status)
        kind = None if memory_type is None else rules.validate_type(memory_type)
        size = rules.validate_limit(limit)
        after = rules.decode_cursor(cursor)
        search = None if text is None else rules.validate_search_text(text)
        floor = (
            None
            if min_confidence is None
            else rules.validate_confidence(min_confidence, "min_confidence")
        )
        now = self.now()
        rows: list[MemoryRecord] = []
        while True:  # read on past the records the content filters drop, until a page is full
            ask = size + 1 if search is None and floor is None else rules.MAX_PAGE_SIZE
            batch = self._find(agent, user, wanted, kind, ask, after, now)
            rows += [r for r in batch if rules.matches_search(r, search, floor)]
            if len(rows) > size or len(batch) < ask:
                break
            after = rules.sort_key(batch[-1])
        records = [rules.effective(r, now) for r in rows]
        page = records[:size]
        more = len(records) > size
        return MemoryRecordPage(page, rules.encode_cursor(page[-1]) if more else None)

    def get(self, record_id: str) -> MemoryRecord | None:
        rid = rules.validate_record_id(record_id)
        record = self._get(rid)
        return None if record is None else rules.effective(record, self.now())

    def approve(
        self,
        record_id: str,
        *,
        reviewer: str | None = None,
        reason: str | None = None,
        content: str | None = None,
    ) -> MemoryRecord:
        return self._decide(record_id, MemoryStatus.APPROVED, reviewer, reason, content)

    def reject(
        self, record_id: str, *, reviewer: str | None = None, reason: str | None = None
    ) -> MemoryRecord:
        return self._decide(record_id, MemoryStatus.REJECTED, reviewer, reason)

    def _decide(
        self,
        record_id: str,
        decision: MemoryStatus,
        reviewer: str | None,
        reason: str | None,
        content: str | None = None,
    ) -> MemoryRecord:
        rid = rules.validate_record_id(record_id)
        who = rules.validate_review_text(reviewer, "reviewer")
        why = rules.validate_review_text(reason, "reason")
        text = None if content is None else rules.validate_content(content)
        now = self.now()
        edit: tuple[str, str] | None = None
        if text is not None:  # the proposed wording, kept beside the edited one
            current = self._get(rid)
            if current is None:
                raise MemoryNotFoundError(f"no memory {rid}")
            rules.review(current, decision, now)  # raises MemoryStateError: not pending
            edit = None if text == current.content else (text, current.content)
        done = self._review(rid, decision, now, who, why, edit)
        if done is not None:
            return done
        current = self._get(rid)
        if current is None:
            raise MemoryNotFoundError(f"no memory {rid}")
        rules.review(current, decision, now)  # raises MemoryStateError: it was not pending
        # Still pending by the rules yet the store's condition failed: clocks disagree.
        raise ConcurrencyError(f"memory {rid} changed during review; try again")

    def delete(self, record_id: str) -> bool:
        return self._delete(rules.validate_record_id(record_id))

    def expire_due(self) -> int:
        return self._expire_due(self.now())

    def forget_user(self, user_id: str, *, agent_id: str | None = None) -> int:
        user = rules.validate_id(user_id, "user_id")
        agent = None if agent_id is None else rules.validate_id(agent_id, "agent_id")
        deleted = 0
        while True:  # from the start each time: records added meanwhile go too
            rows = self._find(agent, user, None, None, rules.MAX_PAGE_SIZE, None, self.now())
            if not rows:
                self._drop_queued(user, agent)
                return deleted
            for r in rows:
                deleted += self._delete(r.id)

    def _drop_queued(self, user_id: str, agent_id: str | None) -> None:
        """Delete the user's messages waiting in the durable analysis queue (``_queue``),
        so nothing of a forgotten user is analysed after ``forget_user``."""
        after = None
        while True:
            page = self._list_state(queue.QUEUE_NAMESPACE, after, state.MAX_STATE_PAGE_SIZE)
            for entry in page:
                if queue.queued_for(entry.value, user_id, agent_id):
                    self._delete_state(entry.namespace, entry.key, None)
            if len(page) < state.MAX_STATE_PAGE_SIZE:
                return
            after = page[-1].key

    # -- the state primitive ------------------------------------------------------------
    def read_state(self, namespace: str, key: str) -> StateEntry | None:
        return self._read_state(state.validate_namespace(namespace), state.validate_key(key))

    def write_state(
        self, namespace: str, key: str, value: str, *, expected_version: int | None = None
    ) -> StateEntry | None:
        ns, k = state.validate_namespace(namespace), state.validate_key(key)
        text = state.validate_value(value)
        version = state.validate_expected_version(expected_version)
        return self._write_state(ns, k, text, version, self.now())

    def delete_state(
        self, namespace: str, key: str, *, expected_version: int | None = None
    ) -> bool:
        ns, k = state.validate_namespace(namespace), state.validate_key(key)
        version = state.validate_expected_version(expected_version)
        return self._delete_state(ns, k, version)

    def list_state(
        self,
        namespace: str,
        *,
        after: str | None = None,
        limit: int = state.DEFAULT_STATE_PAGE_SIZE,
    ) -> list[StateEntry]:
        ns = state.validate_namespace(namespace)
        start = state.validate_after(after)
        return self._list_state(ns, start, state.validate_state_limit(limit))

    # -- hooks (I/O only) ------------------------------------------------------------
    @abstractmethod
    def _add(self, record: MemoryRecord, key: str) -> AddResult:
        """Insert ``record`` unless ``key`` exists (then return the stored one, created
        False); must be race-safe across processes."""

    @abstractmethod
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
        """Up to ``limit`` stored records, ordered by ``rules.sort_key``, after ``after``,
        whose *effective* status at ``now`` is ``status`` (expired pending counts as
        rejected)."""

    @abstractmethod
    def _get(self, record_id: str) -> MemoryRecord | None:
        """The stored record (not yet made effective)."""

    @abstractmethod
    def _review(
        self,
        record_id: str,
        decision: MemoryStatus,
        now: datetime,
        reviewer: str | None,
        reason: str | None,
        edit: tuple[str, str] | None,
    ) -> MemoryRecord | None:
        """Atomically set ``decision`` (and with ``edit`` = (content, original), those two
        fields) if the record is pending and unexpired at ``now``; the updated record, or
        None when the condition failed (the base explains why)."""

    @abstractmethod
    def _delete(self, record_id: str) -> bool:
        """Remove the record; whether it existed."""

    @abstractmethod
    def _expire_due(self, now: datetime) -> int:
        """Persist ``rules.effective`` for every stored pending record expired at ``now``."""

    @abstractmethod
    def _read_state(self, namespace: str, key: str) -> StateEntry | None:
        """The stored entry, or None."""

    @abstractmethod
    def _write_state(
        self, namespace: str, key: str, value: str, expected: int | None, now: datetime
    ) -> StateEntry | None:
        """Atomically store ``state.next_entry(...)`` if the entry is absent (``expected``
        None) or at version ``expected``; the stored entry, or None."""

    @abstractmethod
    def _delete_state(self, namespace: str, key: str, expected: int | None) -> bool:
        """Atomically delete the entry (only at version ``expected`` when set)."""

    @abstractmethod
    def _list_state(self, namespace: str, after: str | None, limit: int) -> list[StateEntry]:
        """Up to ``limit`` entries with key > ``after``, ascending by code point."""
