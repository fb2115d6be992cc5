# Generated from chatmem_core/chatmem/core/_async/repository.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The repository contract (a Protocol) and the base class every chatmem backend extends.

Public methods of ``BaseChatMemoryRepository`` validate their arguments once, before any
I/O, then call one ``_hook``. A backend implements the hooks only; it never re-validates.

Hooks a backend must implement (all receive validated arguments):

- ``_find_ids_page(limit, after)``: ids in a stable order, strictly after cursor ``after``.
- ``_find(cid)``: the whole stored log, oldest first, with ``created_at`` and ``position``.
- ``_save_all(cid, messages)``: atomically replace the log (positions 0..n-1); ``messages``
  is non-empty and every message already has ``created_at``.
- ``_delete(cid)``: remove the conversation (no-op when unknown).
- ``_append(cid, messages, trim_to)``: atomically append with store-assigned positions after
  every existing one; concurrent appends all land. When ``trim_to`` is set the store may drop
  non-system rows older than the newest ``trim_to`` ones, in the same round trip or later.
- ``_edit_window(cid, non_system_limit, plan)``: atomically (no write may interleave) read
  every system message plus the last ``non_system_limit`` non-system messages, call
  ``plan(source)`` (pure, no I/O) and apply the returned ``WindowEdit``.

Hooks with defaults built on ``_find`` (override to push the bound into the store):
``_find_last(cid, n)`` and ``_load_window(cid, non_system_limit)``.

Deferred set-up: a repository whose constructor must not do I/O (one built on a client whose
calls cannot run in a constructor) sets ``_init_pending = True``; the first public call then
runs ``_initialize()`` (for example ``create_schema()``) once.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar, Protocol, TypeVar, runtime_checkable

from .._contract import (
    DEFAULT_PAGE_SIZE,
    Capability,
    ConversationIdPage,
    backoff,
    stamp,
    validate_cursor,
    window_source,
)
from .._errors import ConcurrencyError
from .._messages import Message, SystemMessage
from .._observe import log, record_retry
from .._validation import validate_conversation_id, validate_messages, validate_positive_int
from .._window import WindowEdit, apply_window_edit, plan_window_edit, window_of

T = TypeVar("T")
MANY_RETRIES = 10
"""Retries after which a write that still succeeded is logged at INFO (contention)."""

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "BaseChatMemoryRepository",
    "Capability",
    "ChatMemoryRepository",
    "ConversationIdPage",
    "InMemoryChatMemoryRepository",
    "retry",
    "stamp",
    "window_source",
]


@runtime_checkable
class ChatMemoryRepository(Protocol):
    """What chatmem needs of a store: Spring AI's four operations, with Python names."""

    def find_conversation_ids(self) -> list[str]:
        """Every conversation id with at least one message, each once."""
        ...

    def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """The stored messages of one conversation, oldest first; empty when unknown."""
        ...

    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace the conversation's history atomically; an empty list deletes it."""
        ...

    def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete the conversation; a no-op when it is unknown."""
        ...


def retry(
    fn: Callable[[], T | None],
    *,
    attempts: int = 50,
    what: str = "update",
    max_sleep: float = 0.05,
    base_sleep: float = 0.0005,
    retry_on: Callable[[Exception], bool] | None = None,
) -> T:
    """Call ``fn`` until it returns non-None, at most ``attempts`` times; then ConcurrencyError.

    The one retry loop of chatmem. ``None`` means ``fn`` lost a race; so does an exception
    for which ``retry_on`` is true (a store error that guarantees nothing was written, such as
    a deadlock); any other exception propagates at once. Waits follow ``backoff``.
    """
    last: Exception | None = None
    for attempt in range(attempts):
        try:
            result = fn()
        except Exception as exc:
            if retry_on is None or not retry_on(exc):
                raise
            last, result = exc, None
        if result is not None:
            if attempt >= MANY_RETRIES:
                log.info("%s needed %d retries (contention on one conversation)", what, attempt)
            return result
        record_retry(what, attempt + 1)
        if attempt:
            time.sleep(backoff(attempt, base_sleep, max_sleep))
    log.warning("%s gave up after %d tries against concurrent writers", what, attempts)
    raise ConcurrencyError(
        f"{what} kept conflicting with concurrent writers ({attempts} tries)"
    ) from last


class BaseChatMemoryRepository(ABC):
    """Validates once, then delegates to backend hooks; also the window operations."""

    capabilities: ClassVar[frozenset[str]] = frozenset()
    max_conversation_id_length: ClassVar[int] = 255
    schema_statement_terminator: ClassVar[str] = ";"
    """What ends each statement of ``schema_statements_for_url`` in a script (``chatmem
    schema``): ``";"`` for SQL, CQL and Cypher; a store printing commands sets ``""``."""
    _init_pending: bool = False

    @classmethod
    def require_driver(cls, url: str) -> None:
        """Import whatever driver ``url`` needs beyond the store package's own imports,
        raising ``MissingDependencyError`` naming the extra (SQL stores check the DB-API
        module the URL names). Called before any I/O; the default needs nothing."""
        return None

    # -- public API --------------------------------------------------------------
    def find_conversation_ids(self) -> list[str]:
        """Every conversation id, read page by page (never all messages at once)."""
        return [cid for cid in self.iter_conversation_ids()]

    def iter_conversation_ids(self, *, page_size: int = DEFAULT_PAGE_SIZE) -> Iterator[str]:
        """Stream every conversation id, one bounded page per round trip."""
        after: str | None = None
        while True:
            page = self.find_conversation_ids_page(limit=page_size, after=after)
            yield from page.ids
            if page.next_after is None:
                return
            after = page.next_after

    def find_conversation_ids_page(
        self, *, limit: int = DEFAULT_PAGE_SIZE, after: str | None = None
    ) -> ConversationIdPage:
        """One page of at most ``limit`` ids after cursor ``after`` (None: from the start)."""
        validate_positive_int(limit, "limit")
        cursor = validate_cursor(after)
        if self._init_pending:
            self._ensure_initialized()
        return self._find_ids_page(limit, cursor)

    def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """The whole stored log, oldest first; ``[]`` for an unknown id."""
        cid = self._cid(conversation_id)
        if self._init_pending:
            self._ensure_initialized()
        return self._find(cid)

    def find_last(self, conversation_id: str, n: int) -> list[Message]:
        """The last ``n`` stored messages, oldest first, read with a bound in the store."""
        cid = self._cid(conversation_id)
        validate_positive_int(n, "n")
        if self._init_pending:
            self._ensure_initialized()
        return self._find_last(cid, n)

    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace the history atomically; ``[]`` deletes the conversation."""
        cid = self._cid(conversation_id)
        msgs = validate_messages(messages)
        if self._init_pending:
            self._ensure_initialized()
        if not msgs:
            self._delete(cid)
            return
        self._save_all(cid, stamp(msgs))

    def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete the conversation; a no-op when unknown."""
        cid = self._cid(conversation_id)
        if self._init_pending:
            self._ensure_initialized()
        self._delete(cid)

    def append(self, conversation_id: str, messages: Sequence[Message] | Message) -> None:
        """Append messages atomically after every stored one (concurrent appends all land)."""
        cid = self._cid(conversation_id)
        msgs = validate_messages(messages)
        if self._init_pending:
            self._ensure_initialized()
        if msgs:
            self._append(cid, stamp(msgs), None)

    def pop_last(self, conversation_id: str) -> Message | None:
        """Remove and return the newest stored message (None when there is none), in one
        atomic edit: concurrent callers each get a different message, and nothing else goes.

        Built on ``_edit_window``, whose bounded read (every system message plus the last
        non-system one) always holds the newest message. A store may re-run the plan in its
        retry loop; the message chosen by the run that committed is the one returned."""
        cid = self._cid(conversation_id)
        if self._init_pending:
            self._ensure_initialized()
        chosen: list[Message | None] = [None]

        def plan(source: list[Message]) -> WindowEdit:
            positioned = [m for m in source if m.position is not None]
            newest = max(positioned, key=lambda m: m.position or 0, default=None)
            chosen[0] = newest
            if newest is None or newest.position is None:
                return WindowEdit()
            return WindowEdit(delete_positions=frozenset({newest.position}))

        self._edit_window(cid, 1, plan)
        return chosen[0]

    # -- window operations (used by MessageWindowChatMemory) ------------------------
    def window_add(
        self,
        conversation_id: str,
        messages: Sequence[Message] | Message,
        max_messages: int,
        *,
        keep_history: bool = False,
    ) -> None:
        """Add under the window rule: a plain append unless ``messages`` holds a system one.

        With ``keep_history`` the store keeps every message (no trim) and only a new system
        message edits the log; ``window_get`` still returns the window."""
        cid = self._cid(conversation_id)
        msgs = validate_messages(messages)
        validate_positive_int(max_messages, "max_messages")
        if not msgs:
            return
        if self._init_pending:
            self._ensure_initialized()
        msgs = stamp(msgs)
        if not any(isinstance(m, SystemMessage) for m in msgs):
            self._append(cid, msgs, None if keep_history else max_messages + 1)
            return
        self._edit_window(
            cid,
            max_messages + 1,
            lambda source: plan_window_edit(source, msgs, max_messages, keep_history=keep_history),
        )

    def window_add_and_get(
        self,
        conversation_id: str,
        messages: Sequence[Message] | Message,
        max_messages: int,
        *,
        keep_history: bool = False,
    ) -> list[Message]:
        """``window_add`` then ``window_get``, with the same result. An append and the window
        read after it go to ``_append_and_load_window`` (one round trip where a store
        overrides it); an add with a system message, or none, is ``window_add`` then
        ``window_get``."""
        cid = self._cid(conversation_id)
        msgs = validate_messages(messages)
        validate_positive_int(max_messages, "max_messages")
        limit = max_messages + 1
        if msgs and not any(isinstance(m, SystemMessage) for m in msgs):
            if self._init_pending:
                self._ensure_initialized()
            trim_to = None if keep_history else limit
            window = self._append_and_load_window(cid, stamp(msgs), trim_to, limit)
            return window_of(window, max_messages)
        self.window_add(cid, msgs, max_messages, keep_history=keep_history)
        return self.window_get(cid, max_messages)

    def window_get(self, conversation_id: str, max_messages: int) -> list[Message]:
        """The current window, computed from a bounded read (systems + last L+1 others)."""
        cid = self._cid(conversation_id)
        validate_positive_int(max_messages, "max_messages")
        if self._init_pending:
            self._ensure_initialized()
        return window_of(self._load_window(cid, max_messages + 1), max_messages)

    # -- hooks ----------------------------------------------------------------------
    @abstractmethod
    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage: ...

    @abstractmethod
    def _find(self, cid: str) -> list[Message]: ...

    @abstractmethod
    def _save_all(self, cid: str, messages: list[Message]) -> None: ...

    @abstractmethod
    def _delete(self, cid: str) -> None: ...

    @abstractmethod
    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None: ...

    @abstractmethod
    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None: ...

    def _find_last(self, cid: str, n: int) -> list[Message]:
        return (self._find(cid))[-n:]

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        return window_source(self._find(cid), non_system_limit)

    def _append_and_load_window(
        self, cid: str, messages: list[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message]:
        """``_append`` then ``_load_window``; a store overrides it to do both at once."""
        self._append(cid, messages, trim_to)
        return self._load_window(cid, non_system_limit)

    def _initialize(self) -> None:  # noqa: B027 (optional hook)
        """Deferred set-up run once by the first public call (see the module docstring)."""

    # -- helpers ----------------------------------------------------------------------
    def _ensure_initialized(self) -> None:
        lock = self.__dict__.setdefault("_init_lock", threading.Lock())
        with lock:
            if self._init_pending:
                self._initialize()
                self._init_pending = False

    def _cid(self, conversation_id: object) -> str:
        return validate_conversation_id(conversation_id, max_length=self.max_conversation_id_length)


class InMemoryChatMemoryRepository(BaseChatMemoryRepository):
    """A thread-safe repository in a dict; messages are immutable, lists copied in and out.

    Nothing here waits (every operation is a few list operations under a lock held for
    microseconds), so the same code serves both twins. Appends extend the log in place and
    window reads walk back from its end (system messages are also kept in their own list),
    so neither costs more with a longer history."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._logs: dict[str, list[Message]] = {}
        self._systems: dict[str, list[Message]] = {}
        self._next: dict[str, int] = {}

    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        with self._lock:
            ids = sorted(k for k in self._logs if after is None or k > after)
        page = ids[:limit]
        return ConversationIdPage(page, page[-1] if len(ids) > limit else None)

    def _find(self, cid: str) -> list[Message]:
        with self._lock:
            return list(self._logs.get(cid, ()))

    def _find_last(self, cid: str, n: int) -> list[Message]:
        with self._lock:
            return self._logs.get(cid, [])[-n:]

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        with self._lock:
            log = self._logs.get(cid, [])
            tail: list[Message] = []
            i = len(log) - 1
            while i >= 0 and len(tail) < non_system_limit:
                if not isinstance(log[i], SystemMessage):
                    tail.append(log[i])
                i -= 1
            systems = self._systems.get(cid, [])
        tail.reverse()
        if not systems:
            return tail
        return sorted([*systems, *tail], key=lambda m: m.position or 0)

    def _save_all(self, cid: str, messages: list[Message]) -> None:
        log = [
            m.with_store_fields(created_at=m.created_at, position=i) for i, m in enumerate(messages)
        ]
        with self._lock:
            self._set(cid, log, len(log))

    def _delete(self, cid: str) -> None:
        with self._lock:
            self._logs.pop(cid, None)
            self._systems.pop(cid, None)
            self._next.pop(cid, None)

    def _set(self, cid: str, log: list[Message], next_position: int) -> None:
        """Install ``log`` (positions set) as the conversation (under the lock)."""
        self._next[cid] = next_position
        if log:
            self._logs[cid] = log
            self._systems[cid] = [m for m in log if isinstance(m, SystemMessage)]
        else:
            self._logs.pop(cid, None)
            self._systems.pop(cid, None)

    def _positioned(self, cid: str, new: Sequence[Message]) -> list[Message]:
        pos = self._next.get(cid, 0)
        return [
            m.with_store_fields(created_at=m.created_at, position=pos + i)
            for i, m in enumerate(new)
        ]

    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        with self._lock:
            new = self._positioned(cid, messages)
            log = self._logs.get(cid)
            if log is None:
                self._set(cid, new, len(new))
                return
            if trim_to is not None:
                others = [m for m in log if not isinstance(m, SystemMessage)]
                if len(others) > trim_to:
                    cut = others[-trim_to].position
                    assert cut is not None
                    log = [
                        m for m in log if isinstance(m, SystemMessage) or (m.position or 0) >= cut
                    ]
                    self._logs[cid] = log
            log.extend(new)
            self._systems.setdefault(cid, []).extend(m for m in new if isinstance(m, SystemMessage))
            self._next[cid] = self._next.get(cid, 0) + len(new)

    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        with self._lock:
            log = list(self._logs.get(cid, ()))
            edit = plan(window_source(log, non_system_limit))
            kept = apply_window_edit(
                log, WindowEdit(edit.delete_positions, edit.delete_non_system_below)
            )
            appended = self._positioned(cid, edit.append)
            self._set(cid, kept + appended, self._next.get(cid, 0) + len(appended))
