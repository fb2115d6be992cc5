"""Any chatmem repository as a LlamaIndex chat store, plus the lossless conversions.

- ``ChatmemDBChatStore`` is an ``AsyncDBChatStore``: the store the current
  ``llama_index.core.memory.Memory`` requires (``Memory.from_defaults(chat_store=...)``).
  Its message status (active or archived, which ``Memory`` uses to move old messages out
  of the prompt) is kept on each stored message under the reserved metadata key
  ``STATUS_KEY``, so the conversation stays one ordered log that chatmem's own tools read
  whole; the key never comes back to LlamaIndex.
- ``ChatmemChatStore`` is a ``BaseChatStore`` for older code (``ChatMemoryBuffer``); it sees
  every message, active or archived.

Sync and async. ``AsyncDBChatStore`` has only async methods, so ``ChatmemDBChatStore`` takes
an async repository (an ``Async*Repository``, awaited; a sync one is an
``InvalidArgumentError`` naming ``repository``). ``BaseChatStore`` has both, and one object
serves both kinds of caller, so ``ChatmemChatStore`` takes ``repository=`` (its sync
methods), ``async_repository=`` (its ``a*`` methods) or both; with only a sync one the
``a*`` methods are LlamaIndex's own (``BaseChatStore`` runs the sync ones in a worker
thread), with only an async one the sync methods raise ``InvalidArgumentError``.

Both also open a URL (``from_url``) that ``to_dict``/``from_dict`` rebuild from: the DB store
opens the async twin (``async_repository_from_url``, on its first call), ``ChatmemChatStore``
the sync one. An index names a position in the whole log, oldest first; a negative one counts
from the end as in a Python list, and one out of range either way gives None (LlamaIndex's
Redis store returns None for every negative index; its SQL store takes a row id instead).

Appends are one atomic store operation. Inserting at an index, deleting or archiving
single messages and ``set_messages`` rewrite the conversation (read, change, ``save_all``):
atomic for readers, but an append landing between the read and the write is lost, as in
LlamaIndex's own stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from chatmem.core import (
    AsyncChatMemoryRepository,
    ChatMemoryRepository,
    InvalidArgumentError,
    async_repository_class_for_url,
    async_repository_from_url,
    repository_from_url,
)
from chatmem.core.backend import is_async_repository, require

require("llama_index.core", "llamaindex")

from llama_index.core.base.llms.types import ChatMessage  # noqa: E402
from llama_index.core.bridge.pydantic import PrivateAttr  # noqa: E402
from llama_index.core.storage.chat_store.base import BaseChatStore  # noqa: E402
from llama_index.core.storage.chat_store.base_db import (  # noqa: E402
    AsyncDBChatStore,
    MessageStatus,
)

from ._async.llamaindex_log import AsyncChatLog  # noqa: E402
from ._llamaindex_codec import from_llamaindex, to_llamaindex  # noqa: E402
from ._llamaindex_entries import (  # noqa: E402
    STATUS_KEY,
    check_messages,
    check_status,
)
from ._repos import TwinRepositories, Twins, check_async, pick  # noqa: E402
from ._sync.llamaindex_log import ChatLog  # noqa: E402

__all__ = [
    "STATUS_KEY",
    "ChatmemChatStore",
    "ChatmemDBChatStore",
    "from_llamaindex",
    "to_llamaindex",
]

T = TypeVar("T")


def _exactly_one(repository: object, url: object, options: dict[str, Any]) -> None:
    if (repository is None) == (url is None):
        raise InvalidArgumentError("url", "give a repository or a url (exactly one)")
    if repository is not None and options:
        raise InvalidArgumentError(next(iter(options)), "options go with a url only")


def _rebuild(cls: Callable[..., T], data: object, options: dict[str, Any]) -> T:
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        raise InvalidArgumentError(
            "data", "holds no url: only a store made with from_url(...) can be rebuilt"
        )
    return cls(url=data["url"], **options)


class ChatmemDBChatStore(AsyncDBChatStore):
    """The chat store ``llama_index.core.memory.Memory`` takes, on any async chatmem
    repository; a key is a conversation id."""

    url: str | None = None
    _log: AsyncChatLog | None = PrivateAttr(default=None)
    _options: dict[str, Any] = PrivateAttr(default_factory=dict)
    _opening: asyncio.Lock | None = PrivateAttr(default=None)
    _given: AsyncChatMemoryRepository | None = PrivateAttr(default=None)
    _close: Callable[[], Awaitable[None]] | None = PrivateAttr(default=None)

    def __init__(
        self,
        repository: AsyncChatMemoryRepository | None = None,
        *,
        url: str | None = None,
        **options: Any,
    ) -> None:
        _exactly_one(repository, url, options)
        log: AsyncChatLog | None = None
        if repository is not None:
            if isinstance(repository, ChatMemoryRepository) and not is_async_repository(repository):
                raise InvalidArgumentError(
                    "repository",
                    "is a sync repository, and every method of an AsyncDBChatStore is async: "
                    "pass an Async*Repository (await async_repository_from_url(url)), or "
                    "ChatmemDBChatStore.from_url(url)",
                )
            check_async(repository, "repository")
            log = AsyncChatLog(repository)
        else:
            async_repository_class_for_url(str(url))  # a bad scheme or driver fails here
        super().__init__(url=url)  # type: ignore[call-arg]  # a pydantic field
        self._log, self._options, self._given = log, options, repository

    @classmethod
    def from_url(cls, url: str, **options: Any) -> ChatmemDBChatStore:
        """The store over ``await async_repository_from_url(url, **options)``, opened on the
        first call; ``to_dict`` keeps the URL."""
        return cls(url=url, **options)

    @classmethod
    def class_name(cls) -> str:
        return "ChatmemDBChatStore"

    @property
    def repository(self) -> AsyncChatMemoryRepository | None:
        """The repository this store was given (None for a URL store)."""
        return self._given

    def to_dict(self) -> dict[str, Any]:
        """``{"class_name", "url"}``: enough for ``from_dict`` to reopen it."""
        return {"class_name": self.class_name(), "url": self.url}

    @classmethod
    def from_dict(cls, data: dict[str, Any], **options: Any) -> ChatmemDBChatStore:
        """Reopen a store from ``to_dict``'s output (``options`` go to the backend)."""
        return _rebuild(cls, data, options)

    async def _chat_log(self) -> AsyncChatLog:
        if self._log is None:  # a URL store: open its repository once, on the first call
            if self._opening is None:
                self._opening = asyncio.Lock()
            async with self._opening:
                if self._log is None:
                    repo = await async_repository_from_url(str(self.url), **self._options)
                    self._close = getattr(repo, "close", None)  # a store owning a client has one
                    self._log = AsyncChatLog(repo)
        return self._log

    async def aclose(self) -> None:
        """Close the repository a URL store opened (a given repository is the caller's); the
        next call opens it again."""
        close, self._close, self._log = self._close, None, self._log if self._given else None
        if close is not None:
            await close()

    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        """Messages of ``key`` with ``status`` (None: all), oldest first, then ``offset``
        and ``limit`` applied as in LlamaIndex's SQL store."""
        wanted = None if status is None else check_status(status)
        for name, value in (("limit", limit), ("offset", offset)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise InvalidArgumentError(name, f"must be an int >= 0 or None, got {value!r}")
        entries = await (await self._chat_log()).read(key)
        xs = [x for x, s in entries if wanted is None or s == wanted]
        start = offset or 0
        return xs[start : None if limit is None else start + limit]

    async def count_messages(
        self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE
    ) -> int:
        """How many messages of ``key`` have ``status`` (None: all)."""
        return len(await self.get_messages(key, status))

    async def add_message(
        self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append one message (one atomic append)."""
        await self.add_messages(key, [message], status)

    async def add_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append messages in one atomic append."""
        xs, s = check_messages(messages), check_status(status)
        await (await self._chat_log()).append(key, xs, s)

    async def set_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Replace every message of ``key`` (whatever its status) with ``messages``."""
        xs, s = check_messages(messages), check_status(status)
        await (await self._chat_log()).write(key, [(x, s) for x in xs])

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Remove the message at position ``idx`` of the whole log; None when out of range."""
        return await (await self._chat_log()).delete_at(key, idx)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete the messages of ``key`` with ``status`` (None: the whole conversation)."""
        log = await self._chat_log()
        if status is None:
            await log.delete(key)
        else:
            await log.delete_status(key, check_status(status))

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the oldest ``n`` active messages and return them."""
        return await (await self._chat_log()).take_oldest(key, n, False)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Mark the oldest ``n`` active messages archived and return them."""
        return await (await self._chat_log()).take_oldest(key, n, True)

    async def get_keys(self) -> list[str]:
        """Every conversation id in the repository."""
        return await (await self._chat_log()).keys()


class ChatmemChatStore(TwinRepositories, BaseChatStore):
    """A LlamaIndex ``BaseChatStore`` (for ``ChatMemoryBuffer`` and older code) over chatmem
    repositories: ``repository=`` for the sync methods, ``async_repository=`` for the ``a*``
    ones, or both (see the module docstring); a key is a conversation id."""

    url: str | None = None
    _twins: Twins = PrivateAttr()
    _log: ChatLog | None = PrivateAttr(default=None)
    _alog: AsyncChatLog | None = PrivateAttr(default=None)

    def __init__(
        self,
        repository: ChatMemoryRepository | None = None,
        *,
        async_repository: AsyncChatMemoryRepository | None = None,
        url: str | None = None,
        **options: Any,
    ) -> None:
        if url is not None or options:
            _exactly_one(repository, url, options)
            repository = repository_from_url(str(url), **options)
        twins = pick(repository, async_repository, user="ChatmemChatStore")
        super().__init__(url=url)  # type: ignore[call-arg]  # a pydantic field
        self._twins = twins
        self._log = None if twins.sync is None else ChatLog(twins.sync)
        self._alog = None if twins.aio is None else AsyncChatLog(twins.aio)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> ChatmemChatStore:
        """The store over ``repository_from_url(url, **options)``; ``to_dict`` keeps the URL."""
        return cls(url=url, **options)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **options: Any) -> ChatmemChatStore:
        """Reopen a store from ``to_dict``'s output (``options`` go to the backend)."""
        return _rebuild(cls, data, options)

    @classmethod
    def class_name(cls) -> str:
        return "ChatmemChatStore"

    def _sync(self) -> ChatLog:
        if self._log is None:
            raise self._twins.no_sync()
        return self._log

    # -- sync ---------------------------------------------------------------------------
    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the conversation ``key`` (an empty list deletes it)."""
        entries = [(x, MessageStatus.ACTIVE) for x in check_messages(messages)]
        self._sync().write(key, entries)

    def get_messages(self, key: str) -> list[ChatMessage]:
        """Every message of ``key``; ``[]`` when unknown."""
        return [x for x, _ in self._sync().read(key)]

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append ``message`` (or insert it at ``idx`` as ``list.insert`` does, rewriting)."""
        x = check_messages([message])[0]
        if idx is None:
            self._sync().append(key, [x], MessageStatus.ACTIVE)
        else:
            self._sync().insert(key, idx, x)

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete ``key``; its messages, or None when it held none."""
        return self._sync().pop_all(key)

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Remove the message at ``idx`` (negative counts from the end); None when out of
        range either way."""
        return self._sync().delete_at(key, idx)

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Remove the last message; None when the conversation is empty."""
        return self._sync().delete_at(key, -1)

    def get_keys(self) -> list[str]:
        """Every conversation id in the repository."""
        return self._sync().keys()

    # -- async: the same operations awaited on the async repository; without one, each is
    # -- LlamaIndex's own BaseChatStore method (the sync one in a worker thread) ----------
    async def aset_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """``set_messages``, awaited."""
        if self._alog is None:
            return await super().aset_messages(key, messages)
        entries = [(x, MessageStatus.ACTIVE) for x in check_messages(messages)]
        await self._alog.write(key, entries)

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        """``get_messages``, awaited."""
        if self._alog is None:
            return await super().aget_messages(key)
        return [x for x, _ in await self._alog.read(key)]

    async def async_add_message(
        self, key: str, message: ChatMessage, idx: int | None = None
    ) -> None:
        """``add_message``, awaited (an ``idx`` needs ``async_repository``: LlamaIndex's own
        method takes none)."""
        if self._alog is None:
            if idx is not None:
                raise self._twins.no_async()
            return await super().async_add_message(key, message)
        x = check_messages([message])[0]
        if idx is None:
            await self._alog.append(key, [x], MessageStatus.ACTIVE)
        else:
            await self._alog.insert(key, idx, x)

    async def adelete_messages(self, key: str) -> list[ChatMessage] | None:
        """``delete_messages``, awaited."""
        if self._alog is None:
            return await super().adelete_messages(key)
        return await self._alog.pop_all(key)

    async def adelete_message(self, key: str, idx: int) -> ChatMessage | None:
        """``delete_message``, awaited."""
        if self._alog is None:
            return await super().adelete_message(key, idx)
        return await self._alog.delete_at(key, idx)

    async def adelete_last_message(self, key: str) -> ChatMessage | None:
        """``delete_last_message``, awaited."""
        if self._alog is None:
            return await super().adelete_last_message(key)
        return await self._alog.delete_at(key, -1)

    async def aget_keys(self) -> list[str]:
        """``get_keys``, awaited."""
        if self._alog is None:
            return await super().aget_keys()
        return await self._alog.keys()
