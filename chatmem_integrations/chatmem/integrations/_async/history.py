"""The I/O of ``ChatmemChatMessageHistory`` (LangChain): only the store calls; the
conversions are pure functions in ``_langchain_codec``."""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.core import AsyncChatMemoryRepository, AsyncMessageWindowChatMemory, Message

from .io import append_to

__all__ = ["AsyncHistoryLog"]


class AsyncHistoryLog:
    """One conversation as a history: the whole log, or a window with ``max_messages``."""

    def __init__(
        self,
        repository: AsyncChatMemoryRepository,
        conversation_id: str,
        max_messages: int | None,
    ) -> None:
        self.repository = repository
        self.conversation_id = conversation_id
        self.memory = (
            None
            if max_messages is None
            else AsyncMessageWindowChatMemory(repository, max_messages=max_messages)
        )

    async def get(self) -> list[Message]:
        if self.memory is not None:
            return await self.memory.get(self.conversation_id)
        return await self.repository.find_by_conversation_id(self.conversation_id)

    async def add(self, messages: Sequence[Message]) -> None:
        if not messages:
            return
        if self.memory is not None:
            await self.memory.add(self.conversation_id, messages)
        else:
            await append_to(self.repository, self.conversation_id, messages)

    async def clear(self) -> None:
        await self.repository.delete_by_conversation_id(self.conversation_id)
