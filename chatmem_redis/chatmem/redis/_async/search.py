"""The advanced queries (``AsyncAdvancedRedisChatMemoryRepository``) over the search index:
each writes the documents earlier writes left pending, then runs one ``FT.SEARCH`` per index
through a script that maps every hit to its log entry."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chatmem.core import MessageType
from chatmem.core.backend import (
    AsyncBaseChatMemoryRepository,
    AsyncSchemaCheck,
    InvalidArgumentError,
    validate_positive_int,
)

from .._config import DEFAULT_SEARCH_LIMIT, RedisConfig
from .._errors import translate_errors
from .._native.search import (
    MessageWithConversation,
    Search,
    by_content,
    by_metadata,
    by_time_range,
    by_type,
    in_conversation,
    parse_reply,
    search_args,
)
from .._schema import Layout
from . import scripts
from .clients import Client
from .schema_ops import AsyncSearchIndexes

_FLUSH_BATCH = 1000
"""Pending index documents one ``FLUSH`` writes at most (a few ms of the server's time)."""


class AsyncSearchMixin(AsyncBaseChatMemoryRepository):
    """The five search APIs and ``index_pending``, for a repository that sets the
    attributes declared here."""

    config: RedisConfig
    _client: Client
    _cluster: bool
    _layout: Layout
    _indexes: AsyncSearchIndexes
    _schema_check: AsyncSchemaCheck

    async def index_pending(self) -> None:
        """Write the search documents that earlier writes left pending (each search does
        this first; call it before querying the index with other tools, e.g. redis-cli)."""
        with translate_errors("indexing pending messages"):
            await self._index_pending()

    async def _index_pending(self) -> None:
        if self._cluster:  # a cluster writes its documents at once
            return
        layout = self._layout
        args = [layout.conversation_prefix, layout.doc_prefix, _FLUSH_BATCH]
        while int(await scripts.FLUSH(self._client, [layout.pending], args)):
            pass  # batch by batch: other clients' commands run in between

    async def _search(
        self, search: Search | None, conversation_id: str | None, limit: object
    ) -> list[MessageWithConversation]:
        n = validate_positive_int(limit, "limit")
        cid = None if conversation_id is None else self._cid(conversation_id)
        if search is None:
            return []
        search = in_conversation(search, cid)
        if self._init_pending:  # the queries are not base methods: run the deferred set-up
            await self._ensure_initialized()
        await self._schema_check()
        layout = self._layout
        reply: list[Any] = []
        with translate_errors("searching messages"):
            await self._index_pending()
            # on a cluster: every master's index, each oldest first, merged by parse_reply
            for name in await self._indexes.names():
                args = [
                    layout.doc_prefix,
                    layout.conversation_prefix,
                    *search_args(name, search.query, n),
                ]
                route = self._indexes.route(name)
                reply += await scripts.SEARCH_MESSAGES(self._client, route, args)
        return parse_reply(reply, search.check)[:n]

    async def find_by_type(
        self,
        message_type: MessageType | str,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages of one kind, oldest first."""
        return await self._search(by_type(message_type), conversation_id, limit)

    async def find_by_content(
        self, text: str, *, conversation_id: str | None = None, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> list[MessageWithConversation]:
        """Messages whose content (text; a tool message's response data) holds every word
        of ``text``; punctuation only separates words."""
        return await self._search(by_content(text), conversation_id, limit)

    async def find_by_time_range(
        self,
        start: datetime | None,
        end: datetime | None,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages created in ``[start, end]`` (inclusive; None leaves that end open)."""
        return await self._search(by_time_range(start, end), conversation_id, limit)

    async def find_by_metadata(
        self,
        key: str,
        value: object,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages whose indexed metadata ``key`` matches ``value``: exact for tag fields,
        equal for numeric fields, every word for text fields."""
        field = self.config.metadata_field(key)
        return await self._search(by_metadata(field, value), conversation_id, limit)

    async def execute_query(
        self, query: str, *, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> list[MessageWithConversation]:
        """A RediSearch query (DIALECT 2) over this repository's index; read-only."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgumentError("query", "must be a non-empty str")
        return await self._search(Search(query), None, limit)
