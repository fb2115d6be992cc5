# Generated from chatmem_integrations/chatmem/integrations/_async/history.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The I/O of ``ChatmemChatMessageHistory`` (LangChain): only the store calls; the
conversions are pure functions in ``_langchain_codec``."""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.core import ChatMemoryRepository, Message, MessageWindowChatMemory

from .io import append_to

__all__ = ["HistoryLog"]


class HistoryLog:
    """One conversation as a history: the whole log, or a window with ``max_messages``."""

    def __init__(
        self,
        repository: ChatMemoryRepository,
        conversation_id: str,
        max_messages: int | None,
    ) -> None:
        self.repository = repository
        self.conversation_id = conversation_id
        self.memory = (
            None
            if max_messages is None
            else MessageWindowChatMemory(repository, max_messages=max_messages)
        )

    def get(self) -> list[Message]:
        if self.memory is not None:
            return self.memory.get(self.conversation_id)
        return self.repository.find_by_conversation_id(self.conversation_id)

    def add(self, messages: Sequence[Message]) -> None:
        if not messages:
            return
        if self.memory is not None:
            self.memory.add(self.conversation_id, messages)
        else:
            append_to(self.repository, self.conversation_id, messages)

    def clear(self) -> None:
        self.repository.delete_by_conversation_id(self.conversation_id)
