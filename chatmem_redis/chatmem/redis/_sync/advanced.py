# Generated from chatmem_redis/chatmem/redis/_async/advanced.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``AdvancedRedisChatMemoryRepository``: the advanced queries as a protocol."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from chatmem.core import MessageType

from .._config import DEFAULT_SEARCH_LIMIT
from .._native.search import MessageWithConversation


@runtime_checkable
class AdvancedRedisChatMemoryRepository(Protocol):
    """Queries across conversations; each returns hits oldest first, at most ``limit``."""

    def find_by_type(
        self,
        message_type: MessageType | str,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages of one kind."""
        ...

    def find_by_content(
        self, text: str, *, conversation_id: str | None = None, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> list[MessageWithConversation]:
        """Messages whose content holds every word of ``text`` (full text)."""
        ...

    def find_by_time_range(
        self,
        start: datetime | None,
        end: datetime | None,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages created in ``[start, end]`` (None: open), optionally in one conversation."""
        ...

    def find_by_metadata(
        self,
        key: str,
        value: object,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages whose configured metadata field ``key`` matches ``value`` for its type."""
        ...

    def execute_query(
        self, query: str, *, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> list[MessageWithConversation]:
        """A raw RediSearch query (DIALECT 2) over this repository's index."""
        ...
