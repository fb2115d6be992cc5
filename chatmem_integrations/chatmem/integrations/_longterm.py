"""Long-term memory in an agent framework's run: the arguments and the block (pure checks).

An integration takes ``long_term=LongTermMemory(...)`` and ``user_id=``; before a run it
renders the user's approved memories (``LongTermMemory.system_prompt_block``) into the
framework's instructions, and after the run is stored it queues the run's user messages for
analysis (``LongTermMemory.observe_messages``). Record stores are sync: the read is one
bounded query per run made on the calling thread, never in a worker thread (as
``LongTermMemoryAdvisor``'s wrap of an async function does).
"""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.core import InvalidArgumentError, Message
from chatmem.core.longterm import LongTermMemory

__all__ = ["LongTerm", "join_instructions"]


class LongTerm:
    """The long-term memory of one user in one integration (or none: ``enabled`` false)."""

    def __init__(self, long_term: LongTermMemory | None, user_id: str | None) -> None:
        if long_term is not None and not isinstance(long_term, LongTermMemory):
            raise InvalidArgumentError("long_term", "must be a chatmem LongTermMemory")
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
        """The user's approved memories, rendered (None when off or there are none)."""
        if self.memory is None or self.user_id is None:
            return None
        return self.memory.system_prompt_block(self.user_id)

    def observe(self, messages: Sequence[Message], conversation_id: str) -> int:
        """Queue the user messages of a stored run for analysis; how many were queued."""
        if self.memory is None or self.user_id is None:
            return 0
        return self.memory.observe_messages(self.user_id, messages, conversation_id=conversation_id)


def join_instructions(instructions: str | None, block: str) -> str:
    """``instructions`` with the memory block after a blank line (the block alone if none)."""
    return f"{instructions}\n\n{block}" if instructions else block
