"""Microsoft Agent Framework: a chatmem store as an agent's history provider and session
store. Needs ``pip install "chatmem[agent-framework]"``.

``ChatmemHistoryProvider(repository)`` is the framework's ``HistoryProvider`` on any async
chatmem repository (``await async_repository_from_url(url)``); the framework's history calls
are coroutines, so there is no sync twin::

    agent = Agent(client=client, context_providers=[ChatmemHistoryProvider(repository)])
    session = AgentSession(session_id="user-42")
    await agent.run("What next?", session=session)

The session's id is the chatmem conversation id, verbatim, so ``chatmem show user-42`` prints
the conversation (``_agent_framework_codec`` has the mapping; every content type round-trips).
``save_messages`` is one atomic edit: it drops what the framework hands over again (its own
``filter_new_messages`` rule, as its in-memory and file providers apply) against a bounded
read of the newest stored messages, and appends the rest, so concurrent runs lose nothing.
``last=n`` makes ``get_messages`` return a window of the newest ``n`` messages read with a bound
in the store, starting at a user message (never an orphan tool result).

``ChatmemSessionStore(repository)`` is the framework's ``SessionStore``: an ``AgentSession``
snapshot (its id, service session id and provider state) per id in its own conversation
(``agent_framework/s/<id>``), replaced atomically by ``set``.

``ChatmemMemoryProvider(memory, user_id=...)`` is a ``ContextProvider`` on chatmem's reviewed
long-term memory (an ``AsyncLongTermMemory`` on an async record store, awaited: the framework's
runs are coroutines): before each run it adds the user's approved memories to the run's
instructions; after it, it hands the run's user messages to the analyser, whose candidates
wait for review (never injected before approval).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from chatmem.core import InvalidArgumentError, Message, SystemMessage
from chatmem.core.backend import (
    AsyncBaseChatMemoryRepository,
    WindowEdit,
    require,
    stamp,
    validate_conversation_id,
    validate_positive_int,
)
from chatmem.core.longterm import AsyncLongTermMemory

require("agent_framework", "agent-framework")

from agent_framework import (  # noqa: E402
    AgentSession,
    ContextProvider,
    HistoryProvider,
    SessionContext,
    SessionStore,
)
from agent_framework import Message as AFMessage  # noqa: E402

# the dedupe rule the framework's own providers apply to what they are handed
from agent_framework._sessions import filter_new_messages  # noqa: E402

from ._agent_framework_codec import (  # noqa: E402
    dict_of,
    message_of,
    session_message,
    session_of,
    session_record_id,
)
from ._openai_agents_codec import from_user_start  # noqa: E402
from ._payload import tool_names  # noqa: E402

__all__ = [
    "DEFAULT_SOURCE_ID",
    "MEMORY_SOURCE_ID",
    "ChatmemHistoryProvider",
    "ChatmemMemoryProvider",
    "ChatmemSessionStore",
]

DEFAULT_SOURCE_ID = "chatmem"
"""The provider's ``source_id`` unless one is given."""
MEMORY_SOURCE_ID = "chatmem_memory"
"""The memory provider's ``source_id`` unless one is given."""


def _check_async(repository: object) -> AsyncBaseChatMemoryRepository:
    if not isinstance(repository, AsyncBaseChatMemoryRepository):
        raise InvalidArgumentError(
            "repository",
            "must be an async chatmem repository (await async_repository_from_url(url)): "
            "the framework's history and session calls are coroutines",
        )
    return repository


def _messages_of(stored: list[Message]) -> list[AFMessage]:
    return [AFMessage.from_dict(dict_of(m)) for m in stored]


class ChatmemHistoryProvider(HistoryProvider):
    """The framework's ``HistoryProvider`` on a chatmem async repository (module docstring).

    ``source_id``, ``load_messages``, ``store_inputs``, ``store_context_messages``,
    ``store_context_from`` and ``store_outputs`` are the framework's own options;
    ``skip_excluded`` leaves out messages a compaction marked excluded, as its providers do.
    """

    def __init__(
        self,
        repository: AsyncBaseChatMemoryRepository,
        *,
        source_id: str = DEFAULT_SOURCE_ID,
        last: int | None = None,
        skip_excluded: bool = False,
        **options: Any,
    ) -> None:
        self.repository = _check_async(repository)
        self.last = None if last is None else validate_positive_int(last, "last")
        self.skip_excluded = bool(skip_excluded)
        super().__init__(source_id, **options)

    def _cid(self, session_id: object) -> str:
        return validate_conversation_id(
            session_id,
            argument="session_id",
            max_length=self.repository.max_conversation_id_length,
        )

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[AFMessage]:
        """The session's stored messages oldest first (the window with ``last``)."""
        cid = self._cid(session_id)
        if self.last is not None:
            read = await self.repository.find_last(cid, self.last + 1)
            stored = from_user_start(read[1:]) if len(read) > self.last else read
        else:
            stored = await self.repository.find_by_conversation_id(cid)
        messages = _messages_of(stored)
        if self.skip_excluded:
            messages = [m for m in messages if not m.additional_properties.get("_excluded")]
        return messages

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[AFMessage],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Append what is new in ``messages`` in one atomic edit (the module docstring)."""
        cid = self.repository._cid(self._cid(session_id))
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise InvalidArgumentError("messages", "must be a list of agent_framework Messages")
        incoming = list(messages)
        for i, m in enumerate(incoming):
            if not isinstance(m, AFMessage):
                raise InvalidArgumentError(f"messages[{i}]", "must be an agent_framework Message")
        data = [m.to_dict() for m in incoming]
        for d in data:
            message_of(d, {})  # JSON data, checked before any I/O
        if not incoming:
            return
        limit = len(incoming) + 1

        def plan(source: list[Message]) -> WindowEdit:
            # The framework's rule needs all of the history only when it may be a replay
            # within ``messages``; past ``limit`` messages it needs the newest ``limit``.
            others = [m for m in source if not isinstance(m, SystemMessage)]
            ordered = sorted(source, key=lambda m: m.position or 0)
            if len(others) >= limit:
                low = min(m.position or 0 for m in others)
                ordered = [m for m in ordered if (m.position or 0) >= low]
            new = filter_new_messages(_messages_of(ordered), incoming)  # a suffix of incoming
            names = tool_names(ordered)
            out: list[Message] = []
            for d in data[len(incoming) - len(new) :]:
                out.append(message_of(d, names))
                names.update(tool_names(out[-1:]))
            return WindowEdit(append=tuple(stamp(out)))

        if self.repository._init_pending:
            await self.repository._ensure_initialized()
        await self.repository._edit_window(cid, limit, plan)


# The framework marks SessionStore experimental and warns when it is subclassed: the warning
# is for whoever chooses the feature, so it is not raised by importing this module.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"\[SESSION_STORE\]")

    class ChatmemSessionStore(SessionStore):
        """The framework's ``SessionStore`` on a chatmem async repository (module docstring)."""

        def __init__(self, repository: AsyncBaseChatMemoryRepository) -> None:
            self.repository = _check_async(repository)

        async def get(self, session_id: str) -> AgentSession | None:
            """The stored session (a fresh copy), or None."""
            data = session_of(await self.repository.find_by_conversation_id(self._id(session_id)))
            return None if data is None else AgentSession.from_dict(data)

        async def set(self, session_id: str, session: AgentSession) -> None:
            """Store ``session`` under ``session_id``, replacing any earlier one atomically."""
            cid = self._id(session_id)
            if not isinstance(session, AgentSession):
                raise InvalidArgumentError("session", "must be an agent_framework AgentSession")
            await self.repository.save_all(cid, [session_message(session.to_dict())])

        async def delete(self, session_id: str) -> None:
            """Delete the stored session (a no-op when there is none)."""
            await self.repository.delete_by_conversation_id(self._id(session_id))

        def _id(self, session_id: object) -> str:
            cid = session_record_id(session_id)  # type: ignore[arg-type]  # validated inside
            return validate_conversation_id(
                cid, argument="session_id", max_length=self.repository.max_conversation_id_length
            )


class ChatmemMemoryProvider(ContextProvider):
    """Reviewed long-term memory as a framework ``ContextProvider`` (module docstring).

    ``user_id`` is the user's id, or a callable giving it for a run's ``AgentSession``.
    """

    def __init__(
        self,
        memory: AsyncLongTermMemory,
        *,
        user_id: str | Callable[[AgentSession], str],
        source_id: str = MEMORY_SOURCE_ID,
    ) -> None:
        if not isinstance(memory, AsyncLongTermMemory):
            raise InvalidArgumentError("memory", "must be a chatmem AsyncLongTermMemory")
        if not callable(user_id):
            validate_conversation_id(user_id, argument="user_id")
        super().__init__(source_id)
        self.memory = memory
        self.user_id = user_id

    def _user(self, session: AgentSession) -> str:
        user = self.user_id(session) if callable(self.user_id) else self.user_id
        return validate_conversation_id(user, argument="user_id")

    async def before_run(
        self, *, agent: Any, session: AgentSession, context: SessionContext, state: dict[str, Any]
    ) -> None:
        """Add the user's approved memories to the run's instructions."""
        block = await self.memory.system_prompt_block(self._user(session))
        if block is not None:
            context.extend_instructions(self.source_id, block)

    async def after_run(
        self, *, agent: Any, session: AgentSession, context: SessionContext, state: dict[str, Any]
    ) -> None:
        """Queue the run's user messages for analysis."""
        user = self._user(session)
        for m in context.input_messages:
            if m.role == "user" and m.text:
                await self.memory.observe(user, m.text, conversation_id=session.session_id)
