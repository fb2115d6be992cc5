"""Any chatmem repository as a LlamaIndex chat store, plus the lossless conversions.

- ``ChatmemDBChatStore`` is an ``AsyncDBChatStore``: the store the current
  ``llama_index.core.memory.Memory`` requires (``Memory.from_defaults(chat_store=...)``).
  Its message status (active or archived, which ``Memory`` uses to move old messages out
  of the prompt) is kept on each stored message under the reserved metadata key
  ``STATUS_KEY``, so the conversation stays one ordered log that chatmem's own tools read
  whole; the key never comes back to LlamaIndex.
- ``ChatmemChatStore`` is a ``BaseChatStore`` for older code (``ChatMemoryBuffer``); it sees
  every message, active or archived.

Both take a repository, or a URL (``from_url``) that ``to_dict``/``from_dict`` rebuild
from. An index names a position in the whole log, oldest first; a negative one counts from
the end as in a Python list, and one out of range either way gives None (LlamaIndex's Redis
store returns None for every negative index; its SQL store takes a row id instead).

Appends are one atomic store operation. Inserting at an index, deleting or archiving
single messages and ``set_messages`` rewrite the conversation (read, change, ``save_all``):
atomic for readers, but an append landing between the read and the write is lost, as in
LlamaIndex's own stores. The async store runs the (synchronous) repository calls in a
worker thread so they never block the event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .._errors import InvalidArgumentError, require

require("llama_index.core", "llamaindex")

from llama_index.core.base.llms.types import ChatMessage  # noqa: E402
from llama_index.core.bridge.pydantic import PrivateAttr  # noqa: E402
from llama_index.core.storage.chat_store.base import BaseChatStore  # noqa: E402
from llama_index.core.storage.chat_store.base_db import (  # noqa: E402
    AsyncDBChatStore,
    MessageStatus,
)

from .._messages import Message  # noqa: E402
from .._registry import repository_from_url  # noqa: E402
from .._repository import BaseChatMemoryRepository, ChatMemoryRepository  # noqa: E402
from ._llamaindex_codec import from_llamaindex, split_items, to_llamaindex  # noqa: E402

__all__ = [
    "STATUS_KEY",
    "ChatmemChatStore",
    "ChatmemDBChatStore",
    "from_llamaindex",
    "to_llamaindex",
]

STATUS_KEY = "llamaindex_status"
"""Metadata key marking a stored message archived by LlamaIndex ``Memory`` (absent: active)."""

Entry = tuple[ChatMessage, MessageStatus]
T = TypeVar("T")


# -- the log as (LlamaIndex message, status) entries: pure functions ------------------------
def entries_of(stored: Sequence[Message]) -> list[Entry]:
    """Stored chatmem messages as LlamaIndex messages with their status (key stripped)."""
    plain: list[Message] = []
    statuses: list[MessageStatus] = []
    for m in stored:
        status = m.metadata.get(STATUS_KEY)
        if STATUS_KEY in m.metadata:
            rest = {k: v for k, v in m.metadata.items() if k != STATUS_KEY}
            m = dataclasses.replace(m, metadata=rest)
        plain.append(m)
        statuses.append(
            MessageStatus.ARCHIVED
            if status == MessageStatus.ARCHIVED.value
            else MessageStatus.ACTIVE
        )
    items = split_items(to_llamaindex(plain, group_tool_responses=False))
    return [(x, s) for item, s in zip(items, statuses, strict=True) for x in item]


def messages_of(entries: Sequence[Entry]) -> list[Message]:
    """Entries back to chatmem messages, archived ones marked under ``STATUS_KEY``."""
    xs = [x for x, _ in entries]
    decoded = from_llamaindex(xs, group_tool_responses=False)
    out: list[Message] = []
    at = 0
    for m, item in zip(decoded, split_items(xs), strict=True):
        if entries[at][1] == MessageStatus.ARCHIVED:
            tagged = {**m.metadata, STATUS_KEY: MessageStatus.ARCHIVED.value}
            m = dataclasses.replace(m, metadata=tagged)
        out.append(m)
        at += len(item)
    return out


def index_in(n: int, idx: int) -> int | None:
    """``idx`` as a position in a log of ``n`` (negative counts from the end); None when out
    of range either way."""
    if isinstance(idx, bool) or not isinstance(idx, int):
        raise InvalidArgumentError("idx", "must be an int")
    return idx % n if -n <= idx < n else None


def _status(value: object, argument: str = "status") -> MessageStatus:
    try:
        return MessageStatus(value)
    except ValueError:
        raise InvalidArgumentError(argument, f"must be a MessageStatus, got {value!r}") from None


def _check_messages(messages: object) -> list[ChatMessage]:
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise InvalidArgumentError("messages", "must be a list of ChatMessage")
    for i, x in enumerate(messages):
        if not isinstance(x, ChatMessage):
            raise InvalidArgumentError(f"messages[{i}]", f"is a {type(x).__name__}")
    return list(messages)


class _Log:
    """The synchronous operations both stores share, over one repository."""

    def __init__(self, repository: ChatMemoryRepository) -> None:
        self.repository = repository

    def read(self, key: str) -> list[Entry]:
        return entries_of(self.repository.find_by_conversation_id(key))

    def write(self, key: str, entries: Sequence[Entry]) -> None:
        self.repository.save_all(key, messages_of(entries))

    def append(self, key: str, messages: Sequence[ChatMessage], status: MessageStatus) -> None:
        new = messages_of([(x, status) for x in messages])
        if not new:
            return
        if isinstance(self.repository, BaseChatMemoryRepository):
            self.repository.append(key, new)
        else:
            self.repository.save_all(key, [*self.repository.find_by_conversation_id(key), *new])

    def delete_at(self, key: str, idx: int) -> ChatMessage | None:
        entries = self.read(key)
        at = index_in(len(entries), idx)
        if at is None:
            return None
        removed = entries.pop(at)[0]
        self.write(key, entries)
        return removed

    def take_oldest(self, key: str, n: int, archive: bool) -> list[ChatMessage]:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError("n", f"must be an int >= 0, got {n!r}")
        entries = self.read(key)
        picked = [i for i, (_, s) in enumerate(entries) if s == MessageStatus.ACTIVE][:n]
        if not picked:
            return []
        taken = [entries[i][0] for i in picked]
        if archive:
            for i in picked:
                entries[i] = (entries[i][0], MessageStatus.ARCHIVED)
        else:
            gone = set(picked)
            entries = [e for i, e in enumerate(entries) if i not in gone]
        self.write(key, entries)
        return taken


def _repository(repository: object, url: object, options: dict[str, Any]) -> ChatMemoryRepository:
    if (repository is None) == (url is None):
        raise InvalidArgumentError("url", "give a repository or a url (exactly one)")
    if url is not None:
        return repository_from_url(url, **options)  # type: ignore[arg-type]
    if options:
        raise InvalidArgumentError(next(iter(options)), "options go with a url only")
    if not isinstance(repository, ChatMemoryRepository):
        raise InvalidArgumentError("repository", "must implement ChatMemoryRepository")
    return repository


def _rebuild(cls: Callable[..., T], data: object, options: dict[str, Any]) -> T:
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        raise InvalidArgumentError(
            "data", "holds no url: only a store made with from_url(...) can be rebuilt"
        )
    return cls(url=data["url"], **options)


class ChatmemDBChatStore(AsyncDBChatStore):
    """The chat store ``llama_index.core.memory.Memory`` takes, on any chatmem repository;
    a key is a conversation id."""

    url: str | None = None
    _log: _Log = PrivateAttr()

    def __init__(
        self,
        repository: ChatMemoryRepository | None = None,
        *,
        url: str | None = None,
        **options: Any,
    ) -> None:
        repo = _repository(repository, url, options)
        super().__init__(url=url)  # type: ignore[call-arg]  # a pydantic field
        self._log = _Log(repo)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> ChatmemDBChatStore:
        """The store over ``repository_from_url(url, **options)``; ``to_dict`` keeps the URL."""
        return cls(url=url, **options)

    @classmethod
    def class_name(cls) -> str:
        return "ChatmemDBChatStore"

    @property
    def repository(self) -> ChatMemoryRepository:
        """The chatmem repository behind this store."""
        return self._log.repository

    def to_dict(self) -> dict[str, Any]:
        """``{"class_name", "url"}``: enough for ``from_dict`` to reopen the same store."""
        return {"class_name": self.class_name(), "url": self.url}

    @classmethod
    def from_dict(cls, data: dict[str, Any], **options: Any) -> ChatmemDBChatStore:
        """Reopen a store from ``to_dict``'s output (``options`` go to the backend)."""
        return _rebuild(cls, data, options)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        """Messages of ``key`` with ``status`` (None: all), oldest first, then ``offset``
        and ``limit`` applied as in LlamaIndex's SQL store."""
        wanted = None if status is None else _status(status)
        for name, value in (("limit", limit), ("offset", offset)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise InvalidArgumentError(name, f"must be an int >= 0 or None, got {value!r}")
        entries = await self._run(self._log.read, key)
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
        xs, s = _check_messages(messages), _status(status)
        await self._run(self._log.append, key, xs, s)

    async def set_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Replace every message of ``key`` (whatever its status) with ``messages``."""
        xs, s = _check_messages(messages), _status(status)
        await self._run(self._log.write, key, [(x, s) for x in xs])

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Remove the message at position ``idx`` of the whole log; None when out of range."""
        return await self._run(self._log.delete_at, key, idx)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete the messages of ``key`` with ``status`` (None: the whole conversation)."""
        if status is None:
            await self._run(self.repository.delete_by_conversation_id, key)
            return
        s = _status(status)
        entries = await self._run(self._log.read, key)
        await self._run(self._log.write, key, [e for e in entries if e[1] != s])

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the oldest ``n`` active messages and return them."""
        return await self._run(self._log.take_oldest, key, n, False)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Mark the oldest ``n`` active messages archived and return them."""
        return await self._run(self._log.take_oldest, key, n, True)

    async def get_keys(self) -> list[str]:
        """Every conversation id in the repository."""
        return await self._run(self.repository.find_conversation_ids)


class ChatmemChatStore(BaseChatStore):
    """A LlamaIndex ``BaseChatStore`` (for ``ChatMemoryBuffer`` and older code) over any
    chatmem repository; a key is a conversation id."""

    url: str | None = None
    _log: _Log = PrivateAttr()

    def __init__(
        self,
        repository: ChatMemoryRepository | None = None,
        *,
        url: str | None = None,
        **options: Any,
    ) -> None:
        repo = _repository(repository, url, options)
        super().__init__(url=url)  # type: ignore[call-arg]  # a pydantic field
        self._log = _Log(repo)

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

    @property
    def repository(self) -> ChatMemoryRepository:
        """The chatmem repository behind this store."""
        return self._log.repository

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the conversation ``key`` (an empty list deletes it)."""
        self._log.write(key, [(x, MessageStatus.ACTIVE) for x in _check_messages(messages)])

    def get_messages(self, key: str) -> list[ChatMessage]:
        """Every message of ``key``; ``[]`` when unknown."""
        return [x for x, _ in self._log.read(key)]

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append ``message`` (or insert it at ``idx`` as ``list.insert`` does, rewriting)."""
        x = _check_messages([message])[0]
        if idx is None:
            self._log.append(key, [x], MessageStatus.ACTIVE)
            return
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise InvalidArgumentError("idx", "must be an int or None")
        entries = self._log.read(key)
        entries.insert(idx, (x, MessageStatus.ACTIVE))
        self._log.write(key, entries)

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete ``key``; its messages, or None when it held none."""
        messages = self.get_messages(key)
        if not messages:
            return None
        self._log.repository.delete_by_conversation_id(key)
        return messages

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Remove the message at ``idx`` (negative counts from the end); None when out of
        range either way."""
        return self._log.delete_at(key, idx)

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Remove the last message; None when the conversation is empty."""
        return self._log.delete_at(key, -1)

    def get_keys(self) -> list[str]:
        """Every conversation id in the repository."""
        return list(self._log.repository.find_conversation_ids())
