# Generated from chatmem_integrations/chatmem/integrations/_async/strands_sessions.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The I/O of the Strands session repository: sessions, agents and messages on a chatmem
repository (the layout and conversions are pure functions in ``_strands_codec``).

Every write is one atomic window edit of one conversation, so concurrent writers lose
nothing. A message's id decides its place: creating or updating one reads the newest messages
in growing pages (the newest alone for the usual append at the end) until the page reaches
below that id, then rewrites only what follows it, in id order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage

from chatmem.core import InvalidArgumentError, Message, SystemMessage
from chatmem.core.backend import BaseChatMemoryRepository, WindowEdit, stamp

from .._payload import tool_names
from .._strands_codec import (
    check_message_id,
    message_of,
    messages_id,
    record_message,
    record_of,
    records_id,
    session_message_of,
)

if TYPE_CHECKING:
    from strands.multiagent import MultiAgentBase

__all__ = ["StrandsSessions"]

Plan = Callable[[list[Message]], WindowEdit]
_GROWTH = 4


def _records(source: list[Message]) -> dict[tuple[str, str], tuple[Message, dict[str, Any]]]:
    out: dict[tuple[str, str], tuple[Message, dict[str, Any]]] = {}
    for m in source:
        record = record_of(m)
        if record is not None:
            out[record[0], record[1]] = (m, record[2])
    return out


def _ours(source: list[Message]) -> list[tuple[int, dict[str, Any], Message]]:
    """The session messages among ``source``, in stored order."""
    out = []
    for m in sorted(source, key=lambda m: m.position if m.position is not None else -1):
        data = session_message_of(m)
        if data is not None and isinstance(data.get("message_id"), int):
            out.append((int(data["message_id"]), data, m))
    return out


class StrandsSessions:
    """Strands' ``SessionRepository`` operations on a chatmem repository (any store)."""

    def __init__(self, repository: BaseChatMemoryRepository) -> None:
        if not isinstance(repository, BaseChatMemoryRepository):
            raise InvalidArgumentError(
                "repository", "must be a chatmem repository (repository_from_url(url))"
            )
        self.repository = repository

    # -- sessions ------------------------------------------------------------------------------
    def create_session(self, session: Session, **kwargs: Any) -> Session:
        """Store a new session; ``SessionException`` when its id is taken."""
        if not isinstance(session, Session):
            raise InvalidArgumentError("session", "must be a strands Session")
        record = record_message("session", session.session_id, session.to_dict())
        cid = records_id(session.session_id)
        taken: list[bool] = []

        def plan(source: list[Message]) -> WindowEdit:
            taken[:] = [any(kind == "session" for kind, _ in _records(source))]
            return WindowEdit() if taken[0] else WindowEdit(append=tuple(stamp([record])))

        self._edit(cid, 1, plan)
        if taken[0]:
            raise SessionException(f"Session {session.session_id} already exists")
        return session

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        """The session, or None when there is none."""
        records = _records(self.repository.find_by_conversation_id(records_id(session_id)))
        found = records.get(("session", session_id))
        return None if found is None else Session.from_dict(found[1])

    def delete_session(self, session_id: str, **kwargs: Any) -> None:
        """Delete the session, its agents and their messages (``SessionException`` when there
        is no such session, as Strands' file store does)."""
        cid = records_id(session_id)
        records = _records(self.repository.find_by_conversation_id(cid))
        if ("session", session_id) not in records:
            raise SessionException(f"Session {session_id} does not exist")
        for kind, agent_id in records:
            if kind == "agent":
                self.repository.delete_by_conversation_id(messages_id(session_id, agent_id))
        self.repository.delete_by_conversation_id(cid)

    # -- agents and multi-agents ------------------------------------------------------------------
    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Add an agent to an existing session (``SessionException`` if it is there already)."""
        if not isinstance(session_agent, SessionAgent):
            raise InvalidArgumentError("session_agent", "must be a strands SessionAgent")
        self._put_record(
            session_id, "agent", session_agent.agent_id, session_agent.to_dict(), "create"
        )

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        """The agent, or None when the session has no such agent."""
        data = self._record(session_id, "agent", agent_id)
        return None if data is None else SessionAgent.from_dict(data)

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Replace a stored agent, keeping its ``created_at`` (``SessionException`` if absent)."""
        if not isinstance(session_agent, SessionAgent):
            raise InvalidArgumentError("session_agent", "must be a strands SessionAgent")
        created = self._put_record(
            session_id, "agent", session_agent.agent_id, session_agent.to_dict(), "update"
        )
        session_agent.created_at = created

    def create_multi_agent(
        self, session_id: str, multi_agent: MultiAgentBase, **kwargs: Any
    ) -> None:
        """Store a multi-agent's state in an existing session (replacing an earlier one)."""
        self._put_record(
            session_id, "multi_agent", multi_agent.id, multi_agent.serialize_state(), "put"
        )

    def read_multi_agent(
        self, session_id: str, multi_agent_id: str, **kwargs: Any
    ) -> dict[str, Any] | None:
        """A multi-agent's stored state, or None."""
        return self._record(session_id, "multi_agent", multi_agent_id)

    def update_multi_agent(
        self, session_id: str, multi_agent: MultiAgentBase, **kwargs: Any
    ) -> None:
        """Replace a multi-agent's stored state (``SessionException`` if absent)."""
        self._put_record(
            session_id, "multi_agent", multi_agent.id, multi_agent.serialize_state(), "update"
        )

    # -- messages ------------------------------------------------------------------------------
    def create_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        """Store a new message (``SessionException`` when its id is taken)."""
        self._put_message(session_id, agent_id, session_message, update=False)

    def update_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        """Replace a stored message, keeping its ``created_at`` (``SessionException`` if absent)."""
        self._put_message(session_id, agent_id, session_message, update=True)

    def read_message(
        self, session_id: str, agent_id: str, message_id: int, **kwargs: Any
    ) -> SessionMessage | None:
        """One message by id, or None (reads back from the newest in growing pages)."""
        cid = messages_id(session_id, agent_id)
        wanted = check_message_id(message_id)
        n = 1
        while True:
            read = self.repository.find_last(cid, n)
            ours = _ours(read)
            for mid, data, _ in ours:
                if mid == wanted:
                    return SessionMessage.from_dict(data)
            if len(read) < n or (ours and ours[0][0] < wanted):
                return None
            n *= _GROWTH

    def list_messages(
        self,
        session_id: str,
        agent_id: str,
        limit: int | None = None,
        offset: int = 0,
        **kwargs: Any,
    ) -> list[SessionMessage]:
        """The agent's messages by id from ``offset``, at most ``limit`` of them."""
        cid = messages_id(session_id, agent_id)
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidArgumentError("limit", "must be None or an int >= 0")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidArgumentError("offset", "must be an int >= 0")
        ours = sorted(_ours(self.repository.find_by_conversation_id(cid)), key=lambda t: t[0])
        page = ours[offset:] if limit is None else ours[offset : offset + limit]
        return [SessionMessage.from_dict(data) for _, data, _ in page]

    # -- helpers -------------------------------------------------------------------------------
    def _edit(self, cid: str, limit: int, plan: Plan) -> None:
        """One atomic read-plan-write of ``cid`` (every system message plus the last
        ``limit`` others are read, no write interleaves, ``plan`` is pure)."""
        repo = self.repository
        checked = repo._cid(cid)
        if repo._init_pending:
            repo._ensure_initialized()
        repo._edit_window(checked, limit, plan)

    def _record(self, session_id: str, kind: str, key: str) -> dict[str, Any] | None:
        cid = records_id(session_id)
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"{kind}_id", "must be a non-empty str")
        records = _records(self.repository.find_by_conversation_id(cid))
        if ("session", session_id) not in records:
            return None
        found = records.get((kind, key))
        return None if found is None else found[1]

    def _put_record(
        self, session_id: str, kind: str, key: str, data: dict[str, Any], mode: str
    ) -> str:
        """Create (``mode`` "create"), replace ("update") or write ("put") one record; the
        stored ``created_at`` is returned."""
        cid = records_id(session_id)
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"{kind}_id", "must be a non-empty str")
        outcome: list[str] = []

        def plan(source: list[Message]) -> WindowEdit:
            records = _records(source)
            if ("session", session_id) not in records:
                outcome[:] = ["no session"]
                return WindowEdit()
            old = records.get((kind, key))
            if (old is not None and mode == "create") or (old is None and mode == "update"):
                outcome[:] = ["exists" if old else "missing"]
                return WindowEdit()
            body = dict(data)
            if old is not None and "created_at" in old[1]:
                body["created_at"] = old[1]["created_at"]
            outcome[:] = ["done", str(body.get("created_at", ""))]
            gone = (
                frozenset({old[0].position}) if old and old[0].position is not None else frozenset()
            )
            return WindowEdit(gone, append=tuple(stamp([record_message(kind, key, body)])))

        self._edit(cid, 1, plan)
        where = f"in session {session_id}"
        if outcome[0] == "no session":
            raise SessionException(f"Session {session_id} does not exist")
        if outcome[0] == "exists":
            raise SessionException(f"{kind} {key} already exists {where}")
        if outcome[0] == "missing":
            raise SessionException(f"{kind} {key} does not exist {where}")
        return outcome[1]

    def _put_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, *, update: bool
    ) -> None:
        cid = messages_id(session_id, agent_id)
        if not isinstance(session_message, SessionMessage):
            raise InvalidArgumentError("session_message", "must be a strands SessionMessage")
        wanted = check_message_id(session_message.message_id)
        data = session_message.to_dict()
        message_of(data, {})  # JSON data, checked before any I/O
        outcome: list[str] = []
        limit = 1
        while True:

            def plan(source: list[Message], limit: int = limit) -> WindowEdit:
                ours = _ours(source)
                complete = sum(1 for m in source if not isinstance(m, SystemMessage)) < limit
                if not complete and (not ours or ours[0][0] >= wanted):
                    outcome[:] = ["more"]
                    return WindowEdit()
                old = next((t for t in ours if t[0] == wanted), None)
                if (old is not None) != update:
                    outcome[:] = ["exists" if old else "missing"]
                    return WindowEdit()
                body = dict(data)
                if old is not None:
                    body["created_at"] = old[1].get("created_at", body.get("created_at"))
                later = [t for t in ours if t[0] > wanted]
                gone = [t for t in ours if t[0] >= wanted]
                new = message_of(body, tool_names([t[2] for t in ours]))
                outcome[:] = ["done", str(body.get("created_at", ""))]
                return WindowEdit(
                    frozenset(t[2].position for t in gone if t[2].position is not None),
                    append=(*stamp([new]), *(t[2] for t in later)),
                )

            self._edit(cid, limit, plan)
            if outcome[0] != "more":
                break
            limit *= _GROWTH
        if outcome[0] == "exists":
            raise SessionException(f"Message {wanted} already exists in agent {agent_id}")
        if outcome[0] == "missing":
            raise SessionException(f"Message {wanted} does not exist in agent {agent_id}")
        if update:
            session_message.created_at = outcome[1]
