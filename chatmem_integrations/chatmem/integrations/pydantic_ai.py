"""Pydantic AI: a chatmem conversation as an agent's ``message_history``, stored after each
successful run, and the lossless conversions (``from_pydantic_ai`` / ``to_pydantic_ai``, see
``_pydantic_ai_codec`` for the mapping). Needs ``pip install "chatmem[pydantic-ai]"``.

``ChatmemMessageHistory(repository, conversation_id)`` wraps a run::

    result = await history.run(agent, "What next?")   # async repository
    result = history.run_sync(agent, "What next?")    # sync repository

or, for any other way of running the agent, a turn (``async with`` on an async repository,
``with`` on a sync one)::

    async with history.turn() as turn:
        result = await agent.run("What next?", message_history=turn.message_history)
        turn.add(result.new_messages())

The run's new messages are stored in one atomic append when the block (or run) completes; an
exception or a cancellation stores nothing (chatmem's ``ChatTurn`` rule). A failing store is
an error, never an empty history.

Bounded history: ``last=n`` loads only the newest ``n`` chatmem messages (a bounded read) and
``max_tokens=t`` the newest turns within ``t`` tokens (chatmem's token window rule, counted by
``count_tokens``). Either view starts at a user prompt and never between a tool call and its
return; a turn that does not fit whole is left out whole. The token window keeps system prompts
(put in front of the first request shown); ``last`` reads only the newest messages, so an
agent whose system prompt must survive it should use ``instructions=``, sent on every request.
The stored conversation itself always keeps everything.

Long-term memory: ``long_term=`` with ``user_id=`` adds the user's approved memories to the
run's ``instructions`` (``turn.instructions`` on a turn) and, once a run is stored, hands its
user prompts to analysis. The memories reach the model but are stripped from the stored
requests' ``instructions``, so a memory later rejected is never replayed. The memory is of the
repository's twin: a ``LongTermMemory`` with a sync repository, an ``AsyncLongTermMemory``
(awaited, never blocking the loop) with an async one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from types import TracebackType
from typing import Any, TypeVar

from chatmem.core import (
    AsyncChatMemoryRepository,
    ChatMemoryRepository,
    ChatTurn,
    InvalidArgumentError,
    Message,
)
from chatmem.core.backend import (
    is_async_repository,
    require,
    validate_conversation_id,
    validate_positive_int,
)
from chatmem.core.longterm import AsyncLongTermMemory, LongTermMemory

require("pydantic_ai", "pydantic-ai")

from pydantic_ai.agent import AbstractAgent  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelRequest  # noqa: E402
from pydantic_ai.run import AgentRunResult  # noqa: E402

from ._longterm import LongTerm  # noqa: E402
from ._pydantic_ai_codec import (  # noqa: E402
    TokenCounter,
    approximate_tokens,
    from_pydantic_ai,
    from_turn_start,
    groups_of,
    to_pydantic_ai,
    token_view,
)

__all__ = [
    "ChatmemMessageHistory",
    "MessageHistoryTurn",
    "approximate_tokens",
    "from_pydantic_ai",
    "to_pydantic_ai",
]

OutputT = TypeVar("OutputT")


class ChatmemMessageHistory:
    """One chatmem conversation as Pydantic AI message history (see the module docstring).

    ``repository`` is a sync repository (for ``run_sync`` and ``with history.turn()``) or an
    async one (for ``run`` and ``async with history.turn()``). ``last`` and ``max_tokens``
    bound what the agent is shown (both may be given: the token window of the last ``n``);
    ``count_tokens`` is a ``str -> int`` counter (default: ``approximate_tokens``).
    ``long_term`` and ``user_id`` inject that user's approved memories (module docstring).
    """

    def __init__(
        self,
        repository: ChatMemoryRepository | AsyncChatMemoryRepository,
        conversation_id: str,
        *,
        last: int | None = None,
        max_tokens: int | None = None,
        count_tokens: TokenCounter | None = None,
        long_term: LongTermMemory | AsyncLongTermMemory | None = None,
        user_id: str | None = None,
    ) -> None:
        if not isinstance(repository, ChatMemoryRepository | AsyncChatMemoryRepository):
            raise InvalidArgumentError(
                "repository", "must implement ChatMemoryRepository or AsyncChatMemoryRepository"
            )
        if count_tokens is not None and not callable(count_tokens):
            raise InvalidArgumentError("count_tokens", "must be a callable str -> int")
        self.repository = repository
        self.conversation_id = validate_conversation_id(conversation_id)
        self.last = None if last is None else validate_positive_int(last, "last")
        self.max_tokens = (
            None if max_tokens is None else validate_positive_int(max_tokens, "max_tokens")
        )
        self.count_tokens = count_tokens if count_tokens is not None else approximate_tokens
        self.long_term = LongTerm(long_term, user_id, want_async=is_async_repository(repository))

    def turn(self) -> MessageHistoryTurn:
        """A turn: ``with`` (sync repository) or ``async with`` (async repository)."""
        return MessageHistoryTurn(self)

    def view(self, stored: Sequence[Message]) -> list[ModelMessage]:
        """What the agent is shown of the chatmem messages ``stored`` (pure: the bounds)."""
        if self.max_tokens is not None:
            return token_view(stored, self.max_tokens, self.count_tokens)
        if self.last is not None:
            return from_turn_start(groups_of(stored))
        return to_pydantic_ai(stored)

    def load(self) -> list[ModelMessage]:
        """The message history as the agent is shown it (sync repository)."""
        with self.turn() as turn:
            return turn.message_history

    async def aload(self) -> list[ModelMessage]:
        """``load`` on an async repository."""
        async with self.turn() as turn:
            return turn.message_history

    async def run(
        self, agent: AbstractAgent[Any, OutputT], user_prompt: Any = None, **kwargs: Any
    ) -> AgentRunResult[OutputT]:
        """``agent.run(user_prompt, message_history=<this history>, **kwargs)``, its new
        messages stored when it succeeds (async repository). Pydantic AI's ``conversation_id``
        is the chatmem one unless given."""
        _run_arguments(self, kwargs)
        if not is_async_repository(self.repository):
            raise InvalidArgumentError(
                "repository", "is a sync repository: call run_sync, or pass an Async*Repository"
            )
        async with self.turn() as turn:
            result: AgentRunResult[OutputT] = await agent.run(
                user_prompt, message_history=turn.message_history, **_with(turn, kwargs)
            )
            turn.add(result.new_messages())
        return result

    def run_sync(
        self, agent: AbstractAgent[Any, OutputT], user_prompt: Any = None, **kwargs: Any
    ) -> AgentRunResult[OutputT]:
        """``agent.run_sync`` with this history, its new messages stored when it succeeds
        (sync repository)."""
        _run_arguments(self, kwargs)
        if is_async_repository(self.repository):
            raise InvalidArgumentError(
                "repository", "is an async repository: await run, or pass a sync repository"
            )
        with self.turn() as turn:
            result: AgentRunResult[OutputT] = agent.run_sync(
                user_prompt, message_history=turn.message_history, **_with(turn, kwargs)
            )
            turn.add(result.new_messages())
        return result


def _run_arguments(history: ChatmemMessageHistory, kwargs: dict[str, Any]) -> None:
    """Check the agent's arguments; Pydantic AI's ``conversation_id`` defaults to chatmem's."""
    for name in ("message_history", "conversation"):
        if name in kwargs:
            raise InvalidArgumentError(
                name, "is the stored conversation's: ChatmemMessageHistory passes it"
            )
    kwargs.setdefault("conversation_id", history.conversation_id)


def _with(turn: MessageHistoryTurn, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the turn's memories added to the run's ``instructions``."""
    if turn.instructions is None:
        return kwargs
    given = kwargs.get("instructions")
    if given is None:
        return {**kwargs, "instructions": turn.instructions}
    extra = list(given) if isinstance(given, list | tuple) else [given]
    return {**kwargs, "instructions": [*extra, turn.instructions]}


def _strip(messages: Sequence[ModelMessage], block: str | None) -> list[ModelMessage]:
    """``messages`` with ``block`` taken out of each request's ``instructions``."""
    if block is None:
        return list(messages)
    out: list[ModelMessage] = []
    for m in messages:
        if isinstance(m, ModelRequest) and m.instructions and block in m.instructions:
            text = m.instructions.replace("\n\n" + block, "").replace(block + "\n\n", "")
            m = dataclasses.replace(m, instructions=text.replace(block, "") or None)
        out.append(m)
    return out


class MessageHistoryTurn:
    """One run's turn: ``message_history`` to pass to the agent, ``add`` for what the run
    produced, stored on a clean exit only (``stored`` says whether it was). ``instructions``
    is the user's rendered long-term memories (None without them), to add to the run's."""

    def __init__(self, history: ChatmemMessageHistory) -> None:
        self._history = history
        self._turn = ChatTurn(history.repository, history.conversation_id, last=history.last)
        self.message_history: list[ModelMessage] = []
        self.instructions: str | None = None

    @property
    def stored(self) -> bool:
        """True once the turn's messages were stored."""
        return self._turn.stored

    def add(self, messages: Sequence[ModelMessage]) -> None:
        """Add the run's messages (``result.new_messages()``), stored on a clean exit."""
        self._turn.append(from_pydantic_ai(_strip(messages, self.instructions)))

    def __enter__(self) -> MessageHistoryTurn:
        if is_async_repository(self._history.repository):
            raise InvalidArgumentError(
                "repository", "is an async repository: use `async with history.turn()`"
            )
        self._turn.__enter__()
        self.message_history = self._history.view(self._turn.history)
        self.instructions = self._history.long_term.block()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._turn.__exit__(exc_type, exc, tb)
        self._observe()

    def _observe(self) -> None:
        if self._turn.stored:
            self._history.long_term.observe(self._turn.added, self._history.conversation_id)

    async def __aenter__(self) -> MessageHistoryTurn:
        if not is_async_repository(self._history.repository):
            raise InvalidArgumentError(
                "repository", "is a sync repository: use `with history.turn()`"
            )
        await self._turn.__aenter__()
        self.message_history = self._history.view(self._turn.history)
        self.instructions = await self._history.long_term.ablock()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._turn.__aexit__(exc_type, exc, tb)
        if self._turn.stored:
            await self._history.long_term.aobserve(self._turn.added, self._history.conversation_id)
