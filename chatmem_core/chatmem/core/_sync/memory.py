# Generated from chatmem_core/chatmem/core/_async/memory.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``MessageWindowChatMemory``: a sliding window over a repository (docs/behaviour.md
section 3).

With a chatmem repository, ``add`` is one atomic store operation (an append unless the added
messages carry a system message) and ``get`` reads only the window; concurrent adds on one
conversation lose nothing. With any other ``ChatMemoryRepository`` it falls back to Spring
AI's read-modify-write, which is correct for one writer only.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._contract import SYNC_TWIN, require_twin
from .._errors import InvalidArgumentError
from .._messages import Message
from .._validation import validate_conversation_id, validate_messages, validate_positive_int
from .._window import add_to_window
from .repository import (
    BaseChatMemoryRepository,
    ChatMemoryRepository,
    InMemoryChatMemoryRepository,
)

DEFAULT_MAX_MESSAGES = 20


def memory_repository(
    repository: ChatMemoryRepository | None, keep_history: object, *, user: str
) -> ChatMemoryRepository:
    """A memory's repository checked before any I/O: an in-memory one when None, else one
    of this twin's kind; ``keep_history`` must be a bool (``user`` names the memory class)."""
    if not isinstance(keep_history, bool):
        raise InvalidArgumentError("keep_history", "must be a bool")
    if repository is None:
        return InMemoryChatMemoryRepository()
    if not isinstance(repository, ChatMemoryRepository):
        raise InvalidArgumentError("repository", "must implement ChatMemoryRepository")
    require_twin(repository, want_async=SYNC_TWIN, user=user)
    return repository


class MessageWindowChatMemory:
    """Keeps the newest ``max_messages`` of each conversation, system messages always kept.

    ``keep_history=True`` stores every message (the transcript stays whole for ``chatmem
    show``, exports and audits) while ``get`` still returns the window, read with the same
    bound; a new system message still replaces the stored ones."""

    def __init__(
        self,
        repository: ChatMemoryRepository | None = None,
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        keep_history: bool = False,
    ) -> None:
        validate_positive_int(max_messages, "max_messages")
        repository = memory_repository(repository, keep_history, user=type(self).__name__)
        if keep_history and not isinstance(repository, BaseChatMemoryRepository):
            raise InvalidArgumentError(
                "keep_history", "needs a chatmem repository (its window read is bounded)"
            )
        self.repository = repository
        self.max_messages = max_messages
        self.keep_history = keep_history

    def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None:
        """Add one message or several, then keep the window (see the module docstring)."""
        repo = self.repository
        if isinstance(repo, BaseChatMemoryRepository):
            repo.window_add(
                conversation_id, messages, self.max_messages, keep_history=self.keep_history
            )
            return
        cid = validate_conversation_id(conversation_id)
        new = validate_messages(messages)
        stored = repo.find_by_conversation_id(cid)
        repo.save_all(cid, add_to_window(stored, new, self.max_messages))

    def get(self, conversation_id: str) -> list[Message]:
        """The conversation's current window, oldest first."""
        repo = self.repository
        if isinstance(repo, BaseChatMemoryRepository):
            return repo.window_get(conversation_id, self.max_messages)
        return repo.find_by_conversation_id(validate_conversation_id(conversation_id))

    def add_and_get(
        self, conversation_id: str, messages: Message | Sequence[Message]
    ) -> list[Message]:
        """``add`` then ``get`` in one call, with exactly their result: the window after the
        add. A chatmem store does both in one round trip where it can."""
        repo = self.repository
        if isinstance(repo, BaseChatMemoryRepository):
            return repo.window_add_and_get(
                conversation_id, messages, self.max_messages, keep_history=self.keep_history
            )
        self.add(conversation_id, messages)
        return self.get(conversation_id)

    def clear(self, conversation_id: str) -> None:
        """Forget the conversation."""
        self.repository.delete_by_conversation_id(validate_conversation_id(conversation_id))
