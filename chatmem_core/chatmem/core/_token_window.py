"""``TokenWindowChatMemory``: a window measured in tokens instead of messages.

The rule is the message window's (``_window``) with token counts as the measure: system
messages are never evicted; when the non-system messages cost more than ``max_tokens``
minus the system messages' cost, the oldest go, and the cut moves forward to the next user
message so the kept part starts at a whole turn. Every message costs at least one token.

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

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ._errors import InvalidArgumentError, MissingDependencyError
from ._messages import (
    AssistantMessage,
    Message,
    MessageType,
    SystemMessage,
    ToolResponseMessage,
)
from ._sync.repository import (
    BaseChatMemoryRepository,
    ChatMemoryRepository,
    InMemoryChatMemoryRepository,
    window_source,
)
from ._validation import validate_conversation_id, validate_messages
from ._window import add_to_window, resets_system

DEFAULT_MAX_TOKENS = 2000
TOKENS_KEY = "chatmem_token_window"
"""Reserved metadata key: ``{"tokens": n}`` (and ``"systems"``, the add a system message came
with, under ``keep_history=True``). Never returned by ``get``."""

TokenCounter = Callable[[str], int]
_FIRST_READ = 32


def message_text(m: Message) -> str:
    """What a message costs: its text, tool calls (name and arguments) and tool results."""
    parts: list[str] = []
    if isinstance(m, ToolResponseMessage):
        parts.extend(f"{r.name} {r.response_data}" for r in m.responses)
    elif m.text:
        parts.append(m.text)
    if isinstance(m, AssistantMessage):
        parts.extend(f"{c.name} {c.arguments}" for c in m.tool_calls)
    return "\n".join(parts)


def tiktoken_counter(encoding: str = "cl100k_base") -> TokenCounter:
    """A counter with tiktoken's ``encoding`` (``pip install "chatmem[tokens]"``)."""
    try:
        import tiktoken
    except ImportError as exc:
        raise MissingDependencyError("tokens", "tiktoken") from exc
    enc = tiktoken.get_encoding(encoding)
    return lambda text: len(enc.encode(text, disallowed_special=()))


# -- the rule as pure functions -----------------------------------------------------------
def tokens_of(m: Message) -> int | None:
    """The stored count of ``m``; None when it carries none."""
    info = m.metadata.get(TOKENS_KEY)
    if isinstance(info, dict) and isinstance(info.get("tokens"), int):
        return max(int(info["tokens"]), 1)
    return None


def visible_systems(log: Sequence[Message]) -> list[int]:
    """Indexes of the system messages the window shows: those of the latest add that
    brought system messages (all of them when none is marked)."""
    systems = [i for i, m in enumerate(log) if isinstance(m, SystemMessage)]
    marks = [_mark(log[i]) for i in systems]
    latest = next((k for k in reversed(marks) if k is not None), None)
    if latest is None:
        return systems
    return [i for i, k in zip(systems, marks, strict=True) if k == latest]


def token_window_of(
    log: Sequence[Message], max_tokens: int, cost: Callable[[Message], int]
) -> list[Message]:
    """The window ``log`` shows under ``max_tokens`` (order kept, superseded systems out):
    the longest run of the newest non-system messages that fits what the shown system
    messages leave and starts with a user message (all of them when all fit)."""
    systems = set(visible_systems(log))
    capacity = max_tokens - sum(cost(log[i]) for i in systems)
    others = [i for i, m in enumerate(log) if not isinstance(m, SystemMessage)]
    costs = [cost(log[i]) for i in others]
    start, total = 0, sum(costs)
    if total > capacity:
        while start < len(others) and total > capacity:
            total -= costs[start]
            start += 1
        while start < len(others) and log[others[start]].message_type is not MessageType.USER:
            start += 1
    keep = systems | set(others[start:])
    return [m for i, m in enumerate(log) if i in keep]


def _mark(m: Message) -> str | None:
    info = m.metadata.get(TOKENS_KEY)
    mark = info.get("systems") if isinstance(info, dict) else None
    return mark if isinstance(mark, str) else None


def _with_metadata(m: Message, metadata: dict[str, Any]) -> Message:
    return dataclasses.replace(m, metadata=metadata)


def strip(m: Message) -> Message:
    """``m`` without the reserved key."""
    if TOKENS_KEY not in m.metadata:
        return m
    return _with_metadata(m, {k: v for k, v in m.metadata.items() if k != TOKENS_KEY})


def tag(m: Message, tokens: int, systems: str | None = None) -> Message:
    """``m`` carrying its count (and its add's mark) under the reserved key."""
    if TOKENS_KEY in m.metadata:
        raise InvalidArgumentError("messages", f"metadata key {TOKENS_KEY!r} is reserved")
    info: dict[str, Any] = {"tokens": tokens}
    if systems is not None:
        info["systems"] = systems
    return _with_metadata(m, {**m.metadata, TOKENS_KEY: info})


class TokenWindowChatMemory:
    """Keeps each conversation within ``max_tokens``, system messages always kept."""

    def __init__(
        self,
        repository: ChatMemoryRepository | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        count_tokens: TokenCounter | None = None,
        keep_history: bool = False,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise InvalidArgumentError("max_tokens", "must be an int")
        if max_tokens <= 0:
            raise InvalidArgumentError("max_tokens", f"must be positive, got {max_tokens}")
        if count_tokens is not None and not callable(count_tokens):
            raise InvalidArgumentError("count_tokens", "must be a callable str -> int")
        if not isinstance(keep_history, bool):
            raise InvalidArgumentError("keep_history", "must be a bool")
        if repository is None:
            repository = InMemoryChatMemoryRepository()
        elif not isinstance(repository, ChatMemoryRepository):
            raise InvalidArgumentError("repository", "must implement ChatMemoryRepository")
        self.repository = repository
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens if count_tokens is not None else tiktoken_counter()
        self.keep_history = keep_history

    def count(self, m: Message) -> int:
        """The cost of ``m``: its stored count, else the counter's (at least 1)."""
        stored = tokens_of(m)
        return stored if stored is not None else self._count(m)

    def _count(self, m: Message) -> int:
        n = self.count_tokens(message_text(m))
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError("count_tokens", f"returned {n!r}, not an int >= 0")
        return max(n, 1)

    def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None:
        """Add one message or several (counted now, once), then keep the window."""
        repo = self.repository
        cid = validate_conversation_id(conversation_id)
        new = validate_messages(messages)
        if not new:
            return
        if self.keep_history:
            self._add_keeping_history(cid, new)
            return
        tagged = [tag(m, self._count(m)) for m in new]
        if isinstance(repo, BaseChatMemoryRepository):
            repo.window_add(cid, tagged, self.max_tokens)
            return
        stored = repo.find_by_conversation_id(cid)
        repo.save_all(cid, add_to_window(stored, tagged, self.max_tokens))

    def _add_keeping_history(self, cid: str, new: Sequence[Message]) -> None:
        systems = [m for m in self._source(cid, 1) if isinstance(m, SystemMessage)]
        shown = [strip(systems[i]) for i in visible_systems(systems)]
        plain = [strip(m) for m in new]
        mark = uuid.uuid4().hex if resets_system(shown, plain) else None
        tagged = [
            tag(m, self._count(m), mark if isinstance(m, SystemMessage) else None)
            for m in new
            if mark is not None or not isinstance(m, SystemMessage)
        ]
        if not tagged:
            return
        repo = self.repository
        if isinstance(repo, BaseChatMemoryRepository):
            repo.append(cid, tagged)
        else:
            repo.save_all(cid, [*repo.find_by_conversation_id(cid), *tagged])

    def get(self, conversation_id: str) -> list[Message]:
        """The conversation's current token window, oldest first, from a bounded read."""
        cid = validate_conversation_id(conversation_id)
        repo = self.repository
        if not isinstance(repo, BaseChatMemoryRepository):
            source = repo.find_by_conversation_id(cid)
        else:
            n = _FIRST_READ
            while True:
                source = repo._load_window(cid, n)
                others = [m for m in source if not isinstance(m, SystemMessage)]
                if len(others) < n or n > self.max_tokens:
                    break  # the whole log, or more than any window can show
                shown = [source[i] for i in visible_systems(source)]
                if sum(map(self.count, others)) > self.max_tokens - sum(map(self.count, shown)):
                    break  # the cut falls inside what was read
                n = min(n * 2, self.max_tokens + 1)
        return [strip(m) for m in token_window_of(source, self.max_tokens, self.count)]

    def _source(self, cid: str, n: int) -> list[Message]:
        """Every stored system message plus the last ``n`` others (bounded in the store)."""
        repo = self.repository
        if isinstance(repo, BaseChatMemoryRepository):
            return repo._load_window(cid, n)
        return window_source(repo.find_by_conversation_id(cid), n)

    def clear(self, conversation_id: str) -> None:
        """Forget the conversation (its whole log, kept history included)."""
        self.repository.delete_by_conversation_id(validate_conversation_id(conversation_id))
