"""Google ADK: a chatmem store behind ADK's session service, and chatmem's reviewed long-term
memory behind its memory service. Needs ``pip install "chatmem[google-adk]"``.

``ChatmemSessionService(repository)`` on any async chatmem repository
(``await async_repository_from_url(url)``, or ``await ChatmemSessionService.from_url(url)``)::

    runner = Runner(agent=agent, app_name="shop", session_service=ChatmemSessionService(repo))

Layout and guarantees (``_adk_codec`` has the mapping):

- one chatmem conversation per session, ``adk/s/<app>/<user>/<session>`` (each segment
  percent-escaped), holding its events oldest first and, last, the session record (its own
  state and last update time); ``app:`` and ``user:`` state in one conversation per app and
  per app and user; ``temp:`` keys are never stored;
- ``append_event`` is one atomic edit of the session's conversation (the event and the new
  record together; concurrent appends all land). It is exactly once per event: a
  re-delivered event (same id, equal fields) found among the session's last
  ``dedupe_window`` events is not stored again, as ``InMemorySessionService`` does. ``app:``
  and ``user:`` deltas are then written to their conversations as key assignments (each an
  atomic edit), also for a re-delivery, so a retry completes what a crash interrupted;
- a session object read before another writer appended is merged into (the default), or
  refused with ADK's ``StaleSessionError`` under ``stale_sessions="raise"`` (what ADK's
  ``DatabaseSessionService`` does);
- ``get_session`` with ``num_recent_events=n`` reads ``n + 1`` messages (``find_last``); with
  ``after_timestamp`` it reads backwards in growing pages and stops at the first older event;
- ``list_sessions`` reads an index conversation per user (one entry per live session) and
  one bounded read (the record) per session: never the events. Conversation ids are not
  listed by prefix because the order of ``find_conversation_ids_page`` is store-defined
  (collations, cluster slots), so a prefix scan would cost a walk over every id.

``ChatmemMemoryService(records)`` on a long-term memory record store
(``record_store_from_url``): ``add_session_to_memory`` hands the user's messages to the
background analyser, whose candidates wait for review as pending; ``search_memory`` returns
approved memories only, by shared keywords, or by cosine similarity when ``embed`` is given.
The record store is an async one: ``search_memory`` awaits its reads of the approved records,
and only an ``embed`` model (the caller's, which may block) runs in a worker thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from chatmem.core import InvalidArgumentError, Message, async_repository_from_url
from chatmem.core.backend import (
    AsyncBaseChatMemoryRepository,
    WindowEdit,
    require,
    stamp,
    validate_positive_int,
)

require("google.adk", "google-adk")

from google.adk.errors import StaleSessionError  # noqa: E402
from google.adk.errors.already_exists_error import AlreadyExistsError  # noqa: E402
from google.adk.errors.session_not_found_error import SessionNotFoundError  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.platform import time as platform_time  # noqa: E402
from google.adk.platform import uuid as platform_uuid  # noqa: E402
from google.adk.sessions import _session_util  # noqa: E402
from google.adk.sessions.base_session_service import (  # noqa: E402
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session  # noqa: E402
from google.adk.sessions.state import State  # noqa: E402

from ._adk_codec import (  # noqa: E402
    SessionRecord,
    app_state_id,
    event_data,
    event_message,
    event_of,
    index_entry,
    index_message,
    session_conversation_id,
    session_index_id,
    session_record,
    state_message,
    stored_event,
    stored_state,
    user_index_id,
    user_state_id,
)
from ._adk_memory import ChatmemMemoryService  # noqa: E402

__all__ = [
    "DEFAULT_DEDUPE_WINDOW",
    "ChatmemMemoryService",
    "ChatmemSessionService",
    "session_conversation_id",
]

DEFAULT_DEDUPE_WINDOW = 64
"""How many of a session's newest events a re-delivered event is recognised among."""
_FIRST_PAGE = 64
"""Messages first read back for ``after_timestamp`` without ``num_recent_events``."""

Plan = Callable[[list[Message]], WindowEdit]
STALE_SESSIONS = ("merge", "raise")


class ChatmemSessionService(BaseSessionService):
    """ADK sessions on a chatmem async repository (see the module docstring)."""

    def __init__(
        self,
        repository: AsyncBaseChatMemoryRepository,
        *,
        dedupe_window: int = DEFAULT_DEDUPE_WINDOW,
        stale_sessions: str = "merge",
    ) -> None:
        if not isinstance(repository, AsyncBaseChatMemoryRepository):
            raise InvalidArgumentError(
                "repository",
                "must be an async chatmem repository (await async_repository_from_url(url))",
            )
        if stale_sessions not in STALE_SESSIONS:
            raise InvalidArgumentError("stale_sessions", "must be 'merge' or 'raise'")
        self.repository = repository
        self.dedupe_window = validate_positive_int(dedupe_window, "dedupe_window")
        self.stale_sessions = stale_sessions

    @classmethod
    async def from_url(
        cls,
        url: str,
        *,
        dedupe_window: int = DEFAULT_DEDUPE_WINDOW,
        stale_sessions: str = "merge",
        **options: Any,
    ) -> ChatmemSessionService:
        """A service on the async repository of ``url`` (``options`` go to the store)."""
        repository = await async_repository_from_url(url, **options)
        if not isinstance(repository, AsyncBaseChatMemoryRepository):
            raise InvalidArgumentError("url", "names a store without chatmem's base repository")
        return cls(repository, dedupe_window=dedupe_window, stale_sessions=stale_sessions)

    # -- sessions ------------------------------------------------------------------------------
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        sid = session_id.strip() if isinstance(session_id, str) and session_id else None
        sid = sid or platform_uuid.new_uuid()
        cid = session_conversation_id(app_name, user_id, sid)
        if state is not None and not isinstance(state, Mapping):
            raise InvalidArgumentError("state", "must be a dict of state keys")
        deltas = _json_deltas(dict(state or {}))
        record = SessionRecord(app_name, user_id, sid, deltas["session"], platform_time.get_time())
        # The indexes first: an entry without its session is skipped by list_sessions.
        await self._index_add(user_index_id(app_name), user_id)
        await self._index_add(session_index_id(app_name, user_id), sid)
        existed: list[bool] = []

        def plan(source: list[Message]) -> WindowEdit:
            existed[:] = [any(session_record(m) is not None for m in source)]
            return (
                WindowEdit() if existed[0] else WindowEdit(append=tuple(stamp([record.message()])))
            )

        await self._edit(cid, 1, plan)
        if existed[0]:
            raise AlreadyExistsError(f"Session with id {sid} already exists.")
        await self._write_scoped(app_name, user_id, deltas)
        return await self._session(record, [])

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        sid = session_id.strip() if isinstance(session_id, str) else session_id
        cid = session_conversation_id(app_name, user_id, sid)
        if config is not None and not isinstance(config, GetSessionConfig):
            raise InvalidArgumentError("config", "must be a GetSessionConfig")
        n = None if config is None else config.num_recent_events
        after = None if config is None else config.after_timestamp
        messages = await self._read_events(cid, n, after)
        record = await self._record_of(cid, messages)
        if record is None:
            return None
        events = [event_of(d) for m in messages if (d := stored_event(m)) is not None]
        if n is not None:
            events = events[-n:] if n else []
        if after is not None:
            events = _since(events, after)
        return await self._session(record, events)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        app_state_id(app_name)  # validates app_name
        if user_id is None:
            users = await self._index(user_index_id(app_name))
        else:
            user_state_id(app_name, user_id)
            users = [user_id]
        app_state = await self._state(app_state_id(app_name))
        sessions: list[Session] = []
        for user in users:
            user_state = await self._state(user_state_id(app_name, user))
            for sid in await self._index(session_index_id(app_name, user)):
                cid = session_conversation_id(app_name, user, sid)
                record = await self._record_of(cid, await self.repository.find_last(cid, 1))
                if record is not None:
                    sessions.append(_merged(record, [], app_state, user_state))
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        sid = session_id.strip() if isinstance(session_id, str) else session_id
        cid = session_conversation_id(app_name, user_id, sid)
        await self.repository.delete_by_conversation_id(cid)
        await self._index_remove(session_index_id(app_name, user_id), sid)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self._state(user_state_id(app_name, user_id))

    async def append_event(self, session: Session, event: Event) -> Event:
        if not isinstance(session, Session):
            raise InvalidArgumentError("session", "must be an ADK Session")
        if not isinstance(event, Event):
            raise InvalidArgumentError("event", "must be an ADK Event")
        if event.partial:
            return event
        app, user = session.app_name, session.user_id
        cid = session_conversation_id(app, user, session.id)
        delta = event.actions.state_delta if event.actions and event.actions.state_delta else {}
        kept = {k: v for k, v in delta.items() if not k.startswith(State.TEMP_PREFIX)}
        safe = _session_util.make_json_safe_state(kept)
        deltas = _json_deltas(safe)
        data = event_data(event, safe)
        message = event_message(data, event)
        outcome: list[str] = []
        check_stale = self.stale_sessions == "raise"

        def plan(source: list[Message]) -> WindowEdit:
            current = next((m for m in reversed(source) if session_record(m) is not None), None)
            if current is None:
                outcome[:] = ["missing"]
                return WindowEdit()
            if any(stored_event(m) == data for m in source):
                outcome[:] = ["duplicate"]
                return WindowEdit()
            if check_stale and _stale(session, source):
                outcome[:] = ["stale"]
                return WindowEdit()
            record = session_record(current)
            assert record is not None and current.position is not None
            updated = dataclasses.replace(
                record,
                state={**record.state, **deltas["session"]},
                last_update_time=event.timestamp,
            )
            outcome[:] = ["stored"]
            return WindowEdit(
                delete_positions=frozenset({current.position}),
                append=tuple(stamp([message, updated.message()])),
            )

        await self._edit(cid, self.dedupe_window, plan)
        if outcome[0] == "missing":
            raise SessionNotFoundError(f"Session {session.id} not found.")
        if outcome[0] == "stale":
            raise StaleSessionError(
                f"Session {session.id} was changed in storage after this copy was read "
                "(another writer appended an event): get_session again, then retry"
            )
        # Key assignments: repeating them for a re-delivery is harmless and repairs a crash
        # between the event's edit and these.
        await self._write_scoped(app, user, deltas)
        if outcome[0] == "duplicate":
            return event
        await super().append_event(session, event)
        session.last_update_time = event.timestamp
        return event

    # -- reads ---------------------------------------------------------------------------------
    async def _read_events(self, cid: str, n: int | None, after: float | None) -> list[Message]:
        """The session's messages needed for ``n`` and ``after`` (record included), read with
        a bound in the store whenever either is given."""
        repo = self.repository
        if n is None and after is None:
            return await repo.find_by_conversation_id(cid)
        if after is None:
            assert n is not None
            return await repo.find_last(cid, n + 1)
        size = _FIRST_PAGE if n is None else n + 1
        while True:
            messages = await repo.find_last(cid, size)
            stamps = [float(d["timestamp"]) for m in messages if (d := stored_event(m))]
            if len(messages) < size or (n is not None) or (stamps and stamps[0] < after):
                return messages
            size *= 4

    async def _record_of(self, cid: str, messages: list[Message]) -> SessionRecord | None:
        """The session record: the last message read, else (a foreign message was appended
        after it) found among the conversation's system messages."""
        for m in reversed(messages):
            record = session_record(m)
            if record is not None:
                return record
        if not messages:
            return None
        for m in reversed(await self.repository.window_get(cid, 1)):
            record = session_record(m)
            if record is not None:
                return record
        return None

    async def _state(self, cid: str) -> dict[str, Any]:
        return stored_state(await self.repository.find_by_conversation_id(cid))

    async def _index(self, cid: str) -> list[str]:
        entries = [index_entry(m) for m in await self.repository.find_by_conversation_id(cid)]
        return list(dict.fromkeys(e for e in entries if e is not None))

    async def _session(self, record: SessionRecord, events: list[Event]) -> Session:
        app_state = await self._state(app_state_id(record.app_name))
        user_state = await self._state(user_state_id(record.app_name, record.user_id))
        return _merged(record, events, app_state, user_state)

    # -- writes --------------------------------------------------------------------------------
    async def _edit(self, cid: str, limit: int, plan: Plan) -> None:
        """One atomic read-plan-write of ``cid`` (the store's window edit: every system message
        plus the last ``limit`` others are read, no write interleaves, ``plan`` is pure)."""
        repo = self.repository
        checked = repo._cid(cid)
        if repo._init_pending:
            await repo._ensure_initialized()
        await repo._edit_window(checked, limit, plan)

    async def _write_scoped(self, app: str, user: str, deltas: dict[str, dict[str, Any]]) -> None:
        if deltas["app"]:
            await self._assign(app_state_id(app), "app", deltas["app"])
        if deltas["user"]:
            await self._assign(user_state_id(app, user), "user", deltas["user"])

    async def _assign(self, cid: str, scope: str, delta: dict[str, Any]) -> None:
        def plan(source: list[Message]) -> WindowEdit:
            old = frozenset(m.position for m in source if m.position is not None)
            state = {**stored_state(source), **delta}
            return WindowEdit(old, append=tuple(stamp([state_message(scope, state)])))

        await self._edit(cid, 1, plan)

    async def _index_add(self, cid: str, entry: str) -> None:
        def plan(source: list[Message]) -> WindowEdit:
            if any(index_entry(m) == entry for m in source):
                return WindowEdit()
            return WindowEdit(append=tuple(stamp([index_message(entry)])))

        await self._edit(cid, 1, plan)

    async def _index_remove(self, cid: str, entry: str) -> None:
        def plan(source: list[Message]) -> WindowEdit:
            gone = frozenset(
                m.position for m in source if index_entry(m) == entry and m.position is not None
            )
            return WindowEdit(gone)

        await self._edit(cid, 1, plan)


def _stale(session: Session, source: list[Message]) -> bool:
    """Whether the store holds an event newer than ``session`` that it does not know: the
    copy was read before another writer appended (ADK's ``StaleSessionError`` rule)."""
    known = {e.id for e in session.events}
    return any(
        d["id"] not in known and float(d["timestamp"]) > session.last_update_time
        for m in source
        if (d := stored_event(m)) is not None
    )


def _json_deltas(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``state`` split by scope (``app``, ``user``, ``session``; temp keys dropped), as JSON."""
    return _session_util.extract_json_safe_state_delta(state)


def _since(events: list[Event], after: float) -> list[Event]:
    """The newest run of events at or after ``after`` (``InMemorySessionService``'s rule)."""
    i = len(events) - 1
    while i >= 0 and events[i].timestamp >= after:
        i -= 1
    return events[i + 1 :]


def _merged(
    record: SessionRecord,
    events: list[Event],
    app_state: Mapping[str, Any],
    user_state: Mapping[str, Any],
) -> Session:
    """The session as ADK returns it: its own state, then ``app:`` and ``user:`` keys."""
    state = dict(record.state)
    state.update({State.APP_PREFIX + k: v for k, v in app_state.items()})
    state.update({State.USER_PREFIX + k: v for k, v in user_state.items()})
    return Session(
        id=record.id,
        app_name=record.app_name,
        user_id=record.user_id,
        state=state,
        events=events,
        last_update_time=record.last_update_time,
    )
