"""The I/O of the LlamaIndex stores: each operation reads or writes the conversation; what it
changes is decided by the pure functions of ``_llamaindex_entries``."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store.base_db import MessageStatus

from chatmem.core import AsyncChatMemoryRepository

from .._llamaindex_entries import (
    Entry,
    check_count,
    check_index,
    entries_of,
    index_in,
    messages_of,
    take_oldest,
)
from .io import append_to

__all__ = ["AsyncChatLog"]


class AsyncChatLog:
    """A repository's conversations as LlamaIndex entry logs; a key is a conversation id."""

    def __init__(self, repository: AsyncChatMemoryRepository) -> None:
        self.repository = repository

    async def read(self, key: str) -> list[Entry]:
        return entries_of(await self.repository.find_by_conversation_id(key))

    async def write(self, key: str, entries: Sequence[Entry]) -> None:
        await self.repository.save_all(key, messages_of(entries))

    async def append(
        self, key: str, messages: Sequence[ChatMessage], status: MessageStatus
    ) -> None:
        await append_to(self.repository, key, messages_of([(x, status) for x in messages]))

    async def insert(self, key: str, idx: int, message: ChatMessage) -> None:
        check_index(idx)
        entries = await self.read(key)
        entries.insert(idx, (message, MessageStatus.ACTIVE))
        await self.write(key, entries)

    async def delete(self, key: str) -> None:
        await self.repository.delete_by_conversation_id(key)

    async def pop_all(self, key: str) -> list[ChatMessage] | None:
        """Delete the conversation; its messages, or None when it held none."""
        messages = [x for x, _ in await self.read(key)]
        if not messages:
            return None
        await self.delete(key)
        return messages

    async def delete_status(self, key: str, status: MessageStatus) -> None:
        entries = await self.read(key)
        await self.write(key, [e for e in entries if e[1] != status])

    async def delete_at(self, key: str, idx: int) -> ChatMessage | None:
        check_index(idx)
        entries = await self.read(key)
        at = index_in(len(entries), idx)
        if at is None:
            return None
        removed = entries.pop(at)[0]
        await self.write(key, entries)
        return removed

    async def take_oldest(self, key: str, n: int, archive: bool) -> list[ChatMessage]:
        check_count(n)
        taken, kept = take_oldest(await self.read(key), n, archive)
        if kept is not None:
            await self.write(key, kept)
        return taken

    async def keys(self) -> list[str]:
        return list(await self.repository.find_conversation_ids())
