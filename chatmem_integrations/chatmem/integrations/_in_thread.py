"""A sync repository seen as an async one, each call in a worker thread: what an adapter's
async methods run on when it was given only a sync repository (today's behaviour; give the
adapter an ``Async*Repository`` for I/O on the event loop itself).

``in_thread(repo)`` keeps what the adapters rely on: a chatmem repository stays an
``AsyncBaseChatMemoryRepository`` (atomic ``append``, bounded window reads: every hook runs
the sync twin's own hook), any other ``ChatMemoryRepository`` gets the four Protocol methods.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from chatmem.core import AsyncChatMemoryRepository, ChatMemoryRepository, Message
from chatmem.core.backend import (
    AsyncBaseChatMemoryRepository,
    BaseChatMemoryRepository,
    ConversationIdPage,
    WindowEdit,
)

__all__ = ["in_thread"]


def in_thread(repository: ChatMemoryRepository) -> AsyncChatMemoryRepository:
    """``repository`` with async methods that run its sync ones in a worker thread."""
    if isinstance(repository, BaseChatMemoryRepository):
        return _InThreadBase(repository)
    return _InThread(repository)


class _InThread:
    """The Protocol's four methods of any sync repository, in worker threads."""

    def __init__(self, repository: ChatMemoryRepository) -> None:
        self.sync = repository

    async def find_conversation_ids(self) -> list[str]:
        return await asyncio.to_thread(self.sync.find_conversation_ids)

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        return await asyncio.to_thread(self.sync.find_by_conversation_id, conversation_id)

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        await asyncio.to_thread(self.sync.save_all, conversation_id, messages)

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        await asyncio.to_thread(self.sync.delete_by_conversation_id, conversation_id)


class _InThreadBase(AsyncBaseChatMemoryRepository):
    """A chatmem repository: validation here, each hook the sync twin's own, in a thread."""

    def __init__(self, repository: BaseChatMemoryRepository) -> None:
        self.sync = repository
        self._init_pending = repository._init_pending

    def _cid(self, conversation_id: object) -> str:
        return self.sync._cid(conversation_id)  # the sync twin's own id rule (its max length)

    async def _initialize(self) -> None:
        await asyncio.to_thread(self.sync._ensure_initialized)

    async def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        return await asyncio.to_thread(self.sync._find_ids_page, limit, after)

    async def _find(self, cid: str) -> list[Message]:
        return await asyncio.to_thread(self.sync._find, cid)

    async def _save_all(self, cid: str, messages: list[Message]) -> None:
        await asyncio.to_thread(self.sync._save_all, cid, messages)

    async def _delete(self, cid: str) -> None:
        await asyncio.to_thread(self.sync._delete, cid)

    async def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        await asyncio.to_thread(self.sync._append, cid, messages, trim_to)

    async def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        await asyncio.to_thread(self.sync._edit_window, cid, non_system_limit, plan)

    async def _find_last(self, cid: str, n: int) -> list[Message]:
        return await asyncio.to_thread(self.sync._find_last, cid, n)

    async def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        return await asyncio.to_thread(self.sync._load_window, cid, non_system_limit)
