"""OpenAI Agents SDK: a chatmem conversation as an agent's session store. Needs
``pip install "chatmem[openai-agents]"``.

``ChatmemSession(repository, session_id)`` implements the SDK's ``Session`` protocol on an
async chatmem repository (any store: ``async_repository_from_url(...)``)::

    session = ChatmemSession(repository, "user-42")
    result = await Runner.run(agent, "What next?", session=session)

Each item is one chatmem message carrying the item's exact JSON (see
``_openai_agents_codec``), so every item kind round-trips and ``chatmem show`` reads the
conversation. ``add_items`` is one atomic append (items added in one call stay together and in
order, whatever else writes); ``get_items(limit)`` reads the newest ``limit`` in the store (a
bounded read); ``pop_item`` is the repository's atomic ``pop_last`` (concurrent callers get
distinct items); ``clear_session`` deletes the conversation.

The SDK writes a run's items as it goes: its input before the first model call, the model's
items after each turn. So a run that fails leaves its input (and any finished turn) stored,
and runs on one session at the same time interleave their writes. ``session.run(agent,
input)`` (or ``async with session.turn() as turn: await Runner.run(..., session=turn)``) is
chatmem's turn rule instead: the run sees the stored history plus its own items, and its items
are stored in one append when it succeeds, nothing when it fails or is cancelled.

A window (``last=n`` messages, ``max_tokens=t`` through chatmem's token window rule) bounds
what ``get_items()`` without a limit returns: it starts at a user message, so it never begins
with an orphan tool output or a call cut from its reasoning. A ``limit`` (the argument or
``session_settings.limit``) is the SDK's exact "newest ``limit`` items" instead.

Long-term memory: ``long_term=AsyncLongTermMemory(...)`` with ``user_id=`` adds the user's
approved memories to the agent's instructions in ``session.run`` (``session.with_memories(agent)``
for a plain ``Runner.run``) and hands the user messages the session stores to analysis. The SDK
keeps instructions out of the session's items, so the memories are never stored. The record
store is an async one, awaited when the SDK asks for the instructions: nothing blocks the loop.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import TracebackType
from typing import Any, cast

from chatmem.core import ChatTurn, InvalidArgumentError, Message
from chatmem.core.backend import (
    AsyncBaseChatMemoryRepository,
    is_async_repository,
    message_text,
    require,
    token_window_of,
    validate_conversation_id,
    validate_positive_int,
)
from chatmem.core.longterm import AsyncLongTermMemory

require("agents", "openai-agents")

from agents import Agent, Runner, RunResult, TResponseInputItem  # noqa: E402
from agents.memory import SessionSettings  # noqa: E402
from agents.memory.session_settings import coerce_session_settings  # noqa: E402

from ._longterm import LongTerm, join_instructions  # noqa: E402
from ._openai_agents_codec import (  # noqa: E402
    from_items,
    from_user_start,
    to_items,
    to_items_of,
)

__all__ = ["ChatmemSession", "SessionTurn", "approximate_tokens", "from_items", "to_items"]


TokenCounter = Callable[[str], int]


def approximate_tokens(text: str) -> int:
    """The default token counter: about four characters a token (no tokenizer needed)."""
    return max(1, (len(text) + 3) // 4)


def _limit(limit: object) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidArgumentError("limit", "must be None or an int >= 0")
    return limit


class ChatmemSession:
    """The SDK's ``Session`` on one chatmem conversation (see the module docstring).

    ``repository`` is an async chatmem repository (``AsyncBaseChatMemoryRepository``; the
    SDK's session calls are coroutines). ``session_settings`` is the SDK's, or a dict of its
    fields (its ``limit`` is the default ``get_items`` limit; default: no limit). ``last`` /
    ``max_tokens`` set the window (both: the token window of the last ``n``),
    ``count_tokens`` a ``str -> int`` counter; ``long_term`` and ``user_id`` that user's
    long-term memory (module docstring).
    """

    def __init__(
        self,
        repository: AsyncBaseChatMemoryRepository,
        session_id: str,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        last: int | None = None,
        max_tokens: int | None = None,
        count_tokens: TokenCounter | None = None,
        long_term: AsyncLongTermMemory | None = None,
        user_id: str | None = None,
    ) -> None:
        if inspect.isawaitable(repository):
            raise InvalidArgumentError(
                "repository", "is an awaitable: await async_repository_from_url(...) first"
            )
        if not is_async_repository(repository):
            raise InvalidArgumentError(
                "repository",
                "is a sync repository; ChatmemSession needs an async one (Async*Repository): "
                "the SDK's session calls are coroutines",
            )
        if not isinstance(repository, AsyncBaseChatMemoryRepository):
            raise InvalidArgumentError(
                "repository", "must be an AsyncBaseChatMemoryRepository (any Async*Repository)"
            )
        if session_settings is None:
            session_settings = SessionSettings()
        elif isinstance(session_settings, dict):  # normalised as the SDK's own sessions do
            try:
                session_settings = coerce_session_settings(session_settings)
            except (TypeError, ValueError) as exc:
                raise InvalidArgumentError("session_settings", str(exc)) from exc
        elif not isinstance(session_settings, SessionSettings):
            raise InvalidArgumentError(
                "session_settings", "must be an agents SessionSettings or a dict of its fields"
            )
        if count_tokens is not None and not callable(count_tokens):
            raise InvalidArgumentError("count_tokens", "must be a callable str -> int")
        self.repository = repository
        self.session_id: str = validate_conversation_id(
            session_id, max_length=repository.max_conversation_id_length
        )
        self.session_settings: SessionSettings | None = session_settings
        self.last = None if last is None else validate_positive_int(last, "last")
        self.max_tokens = (
            None if max_tokens is None else validate_positive_int(max_tokens, "max_tokens")
        )
        self.count_tokens = count_tokens if count_tokens is not None else approximate_tokens
        self.long_term = LongTerm(long_term, user_id, want_async=True)

    # -- the Session protocol ------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The newest ``limit`` items oldest first (a bounded read); without a limit, the
        window, or every item when no window is set."""
        n = _limit(limit)
        if n is None and self.session_settings is not None:
            n = _limit(self.session_settings.limit)
        if n is not None:
            if n == 0:
                return []
            items = to_items(await self.repository.find_last(self.session_id, n))
            return cast(list[TResponseInputItem], items[-n:])
        return cast(list[TResponseInputItem], to_items(await self.window()))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store ``items`` in one atomic append, in order."""
        messages = from_items(items)
        if messages:
            await self.repository.append(self.session_id, messages)
            await self.long_term.aobserve(messages, self.session_id)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (None when empty), atomically."""
        while True:
            m = await self.repository.pop_last(self.session_id)
            if m is None:
                return None
            items = to_items_of(m)
            if items:  # a foreign message that reads as several items gives its last
                return cast(TResponseInputItem, items[-1])

    async def clear_session(self) -> None:
        """Delete the conversation."""
        await self.repository.delete_by_conversation_id(self.session_id)

    # -- chatmem -------------------------------------------------------------------------
    async def window(self) -> list[Message]:
        """The chatmem messages ``get_items()`` shows: the window, or all of them."""
        cid = self.session_id
        if self.last is not None:
            read = await self.repository.find_last(cid, self.last + 1)
            stored = from_user_start(read[1:]) if len(read) > self.last else read
        else:
            stored = await self.repository.find_by_conversation_id(cid)
        if self.max_tokens is not None:
            count = self.count_tokens
            stored = token_window_of(
                stored, self.max_tokens, lambda m: max(count(message_text(m)), 1)
            )
        return stored

    def turn(self) -> SessionTurn:
        """A run's session that stores the run's items only when it succeeds (``async with``)."""
        return SessionTurn(self)

    async def run(
        self, agent: Agent[Any], input: str | list[TResponseInputItem], **kwargs: Any
    ) -> RunResult:
        """``Runner.run(agent, input, session=<a turn of this session>, **kwargs)``: the
        run's items stored in one append when it succeeds, nothing when it fails."""
        if "session" in kwargs:
            raise InvalidArgumentError("session", "is this ChatmemSession's turn: do not pass it")
        agent = self.with_memories(agent)
        async with self.turn() as turn:
            return await Runner.run(agent, input, session=turn, **kwargs)

    def with_memories(self, agent: Agent[Any]) -> Agent[Any]:
        """``agent`` with the user's approved memories after its instructions (a clone whose
        instructions read them when the SDK asks, awaiting the async record store; the agent
        itself when long-term memory is off)."""
        if not isinstance(agent, Agent):
            raise InvalidArgumentError("agent", "must be an agents Agent")
        if not self.long_term.enabled:
            return agent
        base = agent.instructions
        long_term = self.long_term

        async def instructions(context: Any, of: Agent[Any]) -> str | None:
            given = base(context, of) if callable(base) else base
            text = await given if inspect.isawaitable(given) else given
            block = await long_term.ablock()
            if block is None:
                return text
            return join_instructions(text, block)

        return agent.clone(instructions=instructions)


class SessionTurn:
    """One run's view of a ``ChatmemSession``: the stored history plus the run's own items,
    which are stored in one append on a clean exit of ``async with`` (``stored`` says whether
    they were; core's ``ChatTurn`` rule, on a turn that leaves the reading to ``get_items``).
    ``pop_item`` takes the run's own items first; past them, and for ``clear_session``, it acts
    on the store at once."""

    def __init__(self, session: ChatmemSession) -> None:
        self.session = session
        self.session_id: str = session.session_id
        self.session_settings: SessionSettings | None = session.session_settings
        self._turn = ChatTurn(session.repository, session.session_id, load=False)
        self._names: dict[str, str] = {}

    @property
    def pending(self) -> list[Message]:
        """The run's items as chatmem messages, not stored yet."""
        return self._turn.added

    @property
    def stored(self) -> bool:
        """True once the run's items were stored."""
        return self._turn.stored and bool(self._turn.added)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items (as ``ChatmemSession.get_items``) followed by the run's."""
        n = _limit(limit)
        if n is None and self.session_settings is not None:
            n = _limit(self.session_settings.limit)
        own = to_items(self.pending)
        if n is not None:
            if n == 0:
                return []
            stored = await self.session.get_items(max(n - len(own), 0)) if n > len(own) else []
            return cast(list[TResponseInputItem], [*stored, *own][-n:])
        stored = await self.session.get_items()
        return cast(list[TResponseInputItem], [*stored, *own])

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Keep ``items`` for the append at the end of the turn (checked now)."""
        self._turn.append(from_items(items, self._names))

    async def pop_item(self) -> TResponseInputItem | None:
        """The run's newest item, else the store's (atomically, at once)."""
        if self.pending:
            return cast(TResponseInputItem, to_items_of(self.pending.pop())[-1])
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        """Drop the run's items and delete the stored conversation."""
        self.pending.clear()
        await self.session.clear_session()

    async def __aenter__(self) -> SessionTurn:
        await self._turn.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._turn.__aexit__(exc_type, exc, tb)
        if self.stored:
            await self.session.long_term.aobserve(self.pending, self.session_id)
