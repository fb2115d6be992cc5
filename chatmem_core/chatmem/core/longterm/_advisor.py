"""``LongTermChatTurn``: the ``ChatTurn`` with long-term memory, for both kinds of code.

As with ``ChatTurn``, one class serves both: ``with LongTermChatTurn(repo, id,
long_term=LongTermMemory(...), user_id=...)`` takes a sync chat repository and record store,
``async with`` an async chat repository and an ``AsyncLongTermMemory``; the other pairings are
an ``InvalidArgumentError`` naming the argument, before any I/O (no store call runs in a
worker thread or blocks an event loop). At load the user's approved memories are rendered
once; ``turn.prompt`` is ``turn.messages`` with them in the system prompt; the stored
transcript never holds them. The user messages the turn appends are accepted for analysis:
at ``append`` in a ``with`` turn, once the transcript is stored in an ``async with`` turn
(``append`` cannot wait for a store; a durable queue entry is written before the turn ends).

``LongTermMemory`` and ``LongTermMemoryAdvisor`` are generated from their async twins in
``_async/`` (``memory.py``, ``advisor.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.core._async.repository import AsyncChatMemoryRepository
from chatmem.core._contract import is_async_repository
from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import Message, UserMessage
from chatmem.core._sync.repository import ChatMemoryRepository
from chatmem.core._turns import ChatTurn, Preprocessor
from chatmem.core._validation import validate_messages

from . import _rules as rules
from ._advice import USER_ID, last_user_message, user_id_of
from ._async.advisor import AsyncLongTermMemoryAdvisor
from ._async.memory import AsyncLongTermMemory
from ._render import inject as inject_block
from ._sync.advisor import LongTermMemoryAdvisor
from ._sync.memory import LongTermMemory

__all__ = [
    "USER_ID",
    "AsyncLongTermMemory",
    "AsyncLongTermMemoryAdvisor",
    "LongTermChatTurn",
    "LongTermMemory",
    "LongTermMemoryAdvisor",
    "last_user_message",
    "user_id_of",
]


class LongTermChatTurn(ChatTurn):
    """A ``ChatTurn`` with long-term memory (see the module docstring)."""

    def __init__(
        self,
        repository: ChatMemoryRepository | AsyncChatMemoryRepository,
        conversation_id: str,
        *,
        long_term: LongTermMemory | AsyncLongTermMemory,
        user_id: str,
        preprocessors: Sequence[Preprocessor] = (),
    ) -> None:
        super().__init__(repository, conversation_id, preprocessors=preprocessors)
        if not isinstance(long_term, (LongTermMemory, AsyncLongTermMemory)):
            raise InvalidArgumentError(
                "long_term", "must be a LongTermMemory or an AsyncLongTermMemory"
            )
        if isinstance(long_term, AsyncLongTermMemory) != is_async_repository(repository):
            kind = "an async" if is_async_repository(repository) else "a sync"
            want = "AsyncLongTermMemory" if is_async_repository(repository) else "LongTermMemory"
            raise InvalidArgumentError(
                "long_term", f"must be a {want}: the chat repository is {kind} one"
            )
        self.long_term = long_term
        self.user_id = rules.validate_id(user_id, "user_id")
        self.memory_block: str | None = None
        self._unobserved: list[tuple[int, UserMessage]] = []

    def _sync_memory(self) -> LongTermMemory:
        if not isinstance(self.long_term, LongTermMemory):
            raise InvalidArgumentError("long_term", "is an AsyncLongTermMemory: use `async with`")
        return self.long_term

    def _async_memory(self) -> AsyncLongTermMemory:
        if not isinstance(self.long_term, AsyncLongTermMemory):
            raise InvalidArgumentError("long_term", "is a LongTermMemory: use `with`")
        return self.long_term

    def load(self) -> list[Message]:
        history = super().load()
        self.memory_block = self._sync_memory().system_prompt_block(self.user_id)
        return history

    async def aload(self) -> list[Message]:
        history = await super().aload()
        self.memory_block = await self._async_memory().system_prompt_block(self.user_id)
        return history

    @property
    def prompt(self) -> list[Message]:
        """What to send to the model: the turn's messages plus the long-term memories."""
        return inject_block(self.messages, self.memory_block)

    def append(self, messages: Message | Sequence[Message]) -> None:
        added = validate_messages(messages)
        start = len(self.history) + len(self.added)
        super().append(added)
        users = [
            (start + offset, m)
            for offset, m in enumerate(added)
            if isinstance(m, UserMessage) and m.text
        ]
        if isinstance(self.long_term, AsyncLongTermMemory):
            self._unobserved.extend(users)  # observed by acommit, which can wait
            return
        for position, m in users:
            self.long_term.observe(
                self.user_id,
                m.text,
                conversation_id=self.conversation_id,
                message_position=position,
            )

    async def acommit(self) -> None:
        await super().acommit()
        memory = self._async_memory()
        while self._unobserved:
            position, m = self._unobserved.pop(0)
            await memory.observe(
                self.user_id,
                m.text,
                conversation_id=self.conversation_id,
                message_position=position,
            )
