"""Long-term memory in an agent framework's run: the arguments and the block (pure checks).

An integration takes ``long_term=`` (a ``LongTermMemory`` where the framework's run is sync,
an ``AsyncLongTermMemory`` where it is a coroutine) and ``user_id=``; before a run it renders
the user's approved memories (``system_prompt_block``) into the framework's instructions,
and after the run is stored it hands the run's user messages to analysis
(``observe_messages``). Each path makes its own kind of store call: an async run awaits the
async record store, so no record-store call blocks an event loop or runs in a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.core import InvalidArgumentError, Message
from chatmem.core.longterm import AsyncLongTermMemory, LongTermMemory

__all__ = ["LongTerm", "join_instructions"]


class LongTerm:
    """The long-term memory of one user in one integration (or none: ``enabled`` false).

    ``want_async``: True when the integration's runs are coroutines (the memory must be an
    ``AsyncLongTermMemory``), False when they are sync, None when the repository decides
    per turn (each path then checks its own kind)."""

    def __init__(
        self,
        long_term: LongTermMemory | AsyncLongTermMemory | None,
        user_id: str | None,
        *,
        want_async: bool | None = None,
    ) -> None:
        if long_term is not None and not isinstance(
            long_term, LongTermMemory | AsyncLongTermMemory
        ):
            raise InvalidArgumentError(
                "long_term", "must be a chatmem LongTermMemory or AsyncLongTermMemory"
            )
        if want_async is not None and long_term is not None:
            _check_twin(long_term, want_async)
        if long_term is not None and user_id is None:
            raise InvalidArgumentError("user_id", "is needed with long_term: whose memories")
        if long_term is None and user_id is not None:
            raise InvalidArgumentError("long_term", "is needed with user_id")
        if long_term is not None and (not isinstance(user_id, str) or not user_id):
            raise InvalidArgumentError("user_id", "must be a non-empty str")
        self.memory = long_term
        self.user_id = user_id

    @property
    def enabled(self) -> bool:
        """True when memories are injected and observed."""
        return self.memory is not None

    def block(self) -> str | None:
        """The user's approved memories, rendered (None when off or there are none): the
        sync path."""
        if self.memory is None or self.user_id is None:
            return None
        return _sync(self.memory).system_prompt_block(self.user_id)

    async def ablock(self) -> str | None:
        """``block`` for a coroutine run: awaits the async record store."""
        if self.memory is None or self.user_id is None:
            return None
        return await _async(self.memory).system_prompt_block(self.user_id)

    def observe(self, messages: Sequence[Message], conversation_id: str) -> int:
        """Hand the user messages of a stored run to analysis; how many were accepted."""
        if self.memory is None or self.user_id is None:
            return 0
        return _sync(self.memory).observe_messages(
            self.user_id, messages, conversation_id=conversation_id
        )

    async def aobserve(self, messages: Sequence[Message], conversation_id: str) -> int:
        """``observe`` for a coroutine run."""
        if self.memory is None or self.user_id is None:
            return 0
        return await _async(self.memory).observe_messages(
            self.user_id, messages, conversation_id=conversation_id
        )


def _check_twin(memory: LongTermMemory | AsyncLongTermMemory, want_async: bool) -> None:
    if want_async and not isinstance(memory, AsyncLongTermMemory):
        raise InvalidArgumentError(
            "long_term", "must be an AsyncLongTermMemory: this integration's runs are coroutines"
        )
    if not want_async and not isinstance(memory, LongTermMemory):
        raise InvalidArgumentError("long_term", "must be a LongTermMemory: this run is sync")


def _sync(memory: LongTermMemory | AsyncLongTermMemory) -> LongTermMemory:
    _check_twin(memory, False)
    assert isinstance(memory, LongTermMemory)
    return memory


def _async(memory: LongTermMemory | AsyncLongTermMemory) -> AsyncLongTermMemory:
    _check_twin(memory, True)
    assert isinstance(memory, AsyncLongTermMemory)
    return memory


def join_instructions(instructions: str | None, block: str) -> str:
    """``instructions`` with the memory block after a blank line (the block alone if none)."""
    return f"{instructions}\n\n{block}" if instructions else block
