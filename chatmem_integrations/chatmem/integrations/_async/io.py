"""The one write every adapter shares: appending messages to a conversation."""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.core import AsyncChatMemoryRepository, Message
from chatmem.core.backend import AsyncBaseChatMemoryRepository

__all__ = ["append_to"]


async def append_to(
    repository: AsyncChatMemoryRepository, conversation_id: str, messages: Sequence[Message]
) -> None:
    """Store ``messages`` after the conversation's: one atomic append on a chatmem repository,
    read-modify-write (one writer only) on any other."""
    if not messages:
        return
    if isinstance(repository, AsyncBaseChatMemoryRepository):
        await repository.append(conversation_id, messages)
        return
    stored = await repository.find_by_conversation_id(conversation_id)
    await repository.save_all(conversation_id, [*stored, *messages])
