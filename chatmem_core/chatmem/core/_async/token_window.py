"""``AsyncTokenWindowChatMemory``: a window measured in tokens instead of messages.

The rule lives in ``_token_window`` (pure): system messages are never evicted; when the
non-system messages cost more than ``max_tokens`` minus the system messages' cost, the oldest
go, and the cut moves forward to the next user message so the kept part starts at a whole
turn. Every message costs at least one token.

Each message's count is taken once, at ``add``, by the caller's counter (tiktoken's
``cl100k_base`` by default) and stored with the message under the reserved metadata key
``TOKENS_KEY``, which ``get`` strips; a read never re-tokenises the history (a message some
other writer stored without a count is counted when read). Reads are bounded: the stored
system messages plus a run of the newest others that grows until it overflows the budget
or reaches the start of the log (never more than ``max_tokens + 1`` of them).

``keep_history=False`` (the default) stores like ``MessageWindowChatMemory`` with a window
of ``max_tokens`` messages (appends drop what no token window can show; a new system message
replaces the stored ones). ``keep_history=True`` keeps the whole transcript: every add is a
plain append, and a new system message supersedes the earlier ones in the window only (the
superseded ones stay in the log, where ``chatmem show`` or an export still find them).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from .._contract import window_source
from .._errors import InvalidArgumentError
from .._messages import Message, SystemMessage
from .._token_window import (
    DEFAULT_MAX_TOKENS,
    FIRST_READ,
    TokenCounter,
    count_with,
    next_read,
    strip,
    tag,
    tiktoken_counter,
    token_window_of,
    tokens_of,
    visible_systems,
)
from .._validation import validate_conversation_id, validate_messages, validate_positive_int
from .._window import add_to_window, resets_system
from .memory import memory_repository
from .repository import AsyncBaseChatMemoryRepository, AsyncChatMemoryRepository

__all__ = ["DEFAULT_MAX_TOKENS", "AsyncTokenWindowChatMemory"]


class AsyncTokenWindowChatMemory:
    """Keeps each conversation within ``max_tokens``, system messages always kept."""

    def __init__(
        self,
        repository: AsyncChatMemoryRepository | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        count_tokens: TokenCounter | None = None,
        keep_history: bool = False,
    ) -> None:
        validate_positive_int(max_tokens, "max_tokens")
        if count_tokens is not None and not callable(count_tokens):
            raise InvalidArgumentError("count_tokens", "must be a callable str -> int")
        self.repository = memory_repository(repository, keep_history, user=type(self).__name__)
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens if count_tokens is not None else tiktoken_counter()
        self.keep_history = keep_history

    def count(self, m: Message) -> int:
        """The cost of ``m``: its stored count, else the counter's (at least 1)."""
        stored = tokens_of(m)
        return stored if stored is not None else count_with(self.count_tokens, m)

    async def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None:
        """Add one message or several (counted now, once), then keep the window."""
        repo = self.repository
        cid = validate_conversation_id(conversation_id)
        new = validate_messages(messages)
        if not new:
            return
        if self.keep_history:
            await self._add_keeping_history(cid, new)
            return
        tagged = [tag(m, count_with(self.count_tokens, m)) for m in new]
        if isinstance(repo, AsyncBaseChatMemoryRepository):
            await repo.window_add(cid, tagged, self.max_tokens)
            return
        stored = await repo.find_by_conversation_id(cid)
        await repo.save_all(cid, add_to_window(stored, tagged, self.max_tokens))

    async def _add_keeping_history(self, cid: str, new: Sequence[Message]) -> None:
        systems = [m for m in await self._source(cid, 1) if isinstance(m, SystemMessage)]
        shown = [strip(systems[i]) for i in visible_systems(systems)]
        plain = [strip(m) for m in new]
        mark = uuid.uuid4().hex if resets_system(shown, plain) else None
        tagged = [
            tag(m, count_with(self.count_tokens, m), mark if isinstance(m, SystemMessage) else None)
            for m in new
            if mark is not None or not isinstance(m, SystemMessage)
        ]
        if not tagged:
            return
        repo = self.repository
        if isinstance(repo, AsyncBaseChatMemoryRepository):
            await repo.append(cid, tagged)
        else:
            await repo.save_all(cid, [*await repo.find_by_conversation_id(cid), *tagged])

    async def get(self, conversation_id: str) -> list[Message]:
        """The conversation's current token window, oldest first, from a bounded read."""
        cid = validate_conversation_id(conversation_id)
        repo = self.repository
        if not isinstance(repo, AsyncBaseChatMemoryRepository):
            source = await repo.find_by_conversation_id(cid)
        else:
            n: int | None = FIRST_READ
            while n is not None:
                source = await repo._load_window(cid, n)
                n = next_read(source, n, self.max_tokens, self.count)
        return [strip(m) for m in token_window_of(source, self.max_tokens, self.count)]

    async def _source(self, cid: str, n: int) -> list[Message]:
        """Every stored system message plus the last ``n`` others (bounded in the store)."""
        repo = self.repository
        if isinstance(repo, AsyncBaseChatMemoryRepository):
            return await repo._load_window(cid, n)
        return window_source(await repo.find_by_conversation_id(cid), n)

    async def clear(self, conversation_id: str) -> None:
        """Forget the conversation (its whole log, kept history included)."""
        await self.repository.delete_by_conversation_id(validate_conversation_id(conversation_id))
