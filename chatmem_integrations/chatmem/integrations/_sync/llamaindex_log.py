# Generated from chatmem_integrations/chatmem/integrations/_async/llamaindex_log.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The I/O of the LlamaIndex stores: each operation reads or writes the conversation; what it
changes is decided by the pure functions of ``_llamaindex_entries``."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store.base_db import MessageStatus

from chatmem.core import ChatMemoryRepository

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

__all__ = ["ChatLog"]


class ChatLog:
    """A repository's conversations as LlamaIndex entry logs; a key is a conversation id."""

    def __init__(self, repository: ChatMemoryRepository) -> None:
        self.repository = repository

    def read(self, key: str) -> list[Entry]:
        return entries_of(self.repository.find_by_conversation_id(key))

    def write(self, key: str, entries: Sequence[Entry]) -> None:
        self.repository.save_all(key, messages_of(entries))

    def append(self, key: str, messages: Sequence[ChatMessage], status: MessageStatus) -> None:
        append_to(self.repository, key, messages_of([(x, status) for x in messages]))

    def insert(self, key: str, idx: int, message: ChatMessage) -> None:
        check_index(idx)
        entries = self.read(key)
        entries.insert(idx, (message, MessageStatus.ACTIVE))
        self.write(key, entries)

    def delete(self, key: str) -> None:
        self.repository.delete_by_conversation_id(key)

    def pop_all(self, key: str) -> list[ChatMessage] | None:
        """Delete the conversation; its messages, or None when it held none."""
        messages = [x for x, _ in self.read(key)]
        if not messages:
            return None
        self.delete(key)
        return messages

    def delete_status(self, key: str, status: MessageStatus) -> None:
        entries = self.read(key)
        self.write(key, [e for e in entries if e[1] != status])

    def delete_at(self, key: str, idx: int) -> ChatMessage | None:
        check_index(idx)
        entries = self.read(key)
        at = index_in(len(entries), idx)
        if at is None:
            return None
        removed = entries.pop(at)[0]
        self.write(key, entries)
        return removed

    def take_oldest(self, key: str, n: int, archive: bool) -> list[ChatMessage]:
        check_count(n)
        taken, kept = take_oldest(self.read(key), n, archive)
        if kept is not None:
            self.write(key, kept)
        return taken

    def keys(self) -> list[str]:
        return list(self.repository.find_conversation_ids())
