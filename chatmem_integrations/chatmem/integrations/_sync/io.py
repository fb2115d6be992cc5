# Generated from chatmem_integrations/chatmem/integrations/_async/io.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The one write every adapter shares: appending messages to a conversation."""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.core import ChatMemoryRepository, Message
from chatmem.core.backend import BaseChatMemoryRepository

__all__ = ["append_to"]


def append_to(
    repository: ChatMemoryRepository, conversation_id: str, messages: Sequence[Message]
) -> None:
    """Store ``messages`` after the conversation's: one atomic append on a chatmem repository,
    read-modify-write (one writer only) on any other."""
    if not messages:
        return
    if isinstance(repository, BaseChatMemoryRepository):
        repository.append(conversation_id, messages)
        return
    stored = repository.find_by_conversation_id(conversation_id)
    repository.save_all(conversation_id, [*stored, *messages])
