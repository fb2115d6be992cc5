"""Putting long-term memory to work around a model call.

``LongTermMemory`` is the per-agent switch and settings: the record store, the agent id,
the analyser (extractor, dedup, queue) and the rendering caps and template.
``LongTermMemoryAdvisor`` uses it around a model call (inject approved memories into the
system prompt, hand the user's message to the analyser); ``LongTermChatTurn`` is the
``ChatTurn`` option: the turn's ``prompt`` carries the memories, the stored transcript never
does. Record stores are sync for now, so ``LongTermChatTurn`` is a ``with`` turn on a sync
chat repository (an async one, or ``async with``, is an ``InvalidArgumentError`` naming
``repository``: no record-store call runs in a worker thread or blocks an event loop).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from chatmem.core._advisor import CONVERSATION_ID
from chatmem.core._contract import is_async_repository
from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import Message, UserMessage
from chatmem.core._sync.repository import ChatMemoryRepository
from chatmem.core._turns import ChatTurn, Preprocessor
from chatmem.core._validation import validate_messages, validate_positive_int

from . import _rules as rules
from ._analyser import DEFAULT_QUEUE_SIZE, BackgroundAnalyser
from ._dedup import Deduplicator
from ._extract import Extractor
from ._model import MemoryStatus
from ._render import DEFAULT_MAX_CHARS, DEFAULT_MAX_RECORDS, DEFAULT_TEMPLATE, Template, render
from ._render import inject as inject_block
from ._repository import MemoryRecordRepository

USER_ID = "chat_memory_user_id"
"""The call-context key holding the user id whose long-term memory applies."""
R = TypeVar("R")


class LongTermMemory:
    """Long-term memory of one agent. ``enabled=False`` switches it off for that agent:
    nothing is analysed and nothing is injected. Without an ``extractor`` memories are only
    injected (extraction runs elsewhere)."""

    def __init__(
        self,
        repository: MemoryRecordRepository,
        *,
        agent_id: str,
        extractor: Extractor | None = None,
        enabled: bool = True,
        deduplicator: Deduplicator | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        template: Template = DEFAULT_TEMPLATE,
        max_records: int = DEFAULT_MAX_RECORDS,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        if not isinstance(repository, MemoryRecordRepository):
            raise InvalidArgumentError("repository", "must be a MemoryRecordRepository")
        if isinstance(template, str) and "{memories}" not in template:
            raise InvalidArgumentError("template", "must contain {memories}")
        self.repository = repository
        self.agent_id = rules.validate_id(agent_id, "agent_id")
        self.enabled = bool(enabled)
        self.template = template
        self.max_records = validate_positive_int(max_records, "max_records")
        self.max_chars = validate_positive_int(max_chars, "max_chars")
        self.analyser = (
            BackgroundAnalyser(
                repository, extractor, deduplicator=deduplicator, queue_size=queue_size
            )
            if extractor is not None
            else None
        )

    def system_prompt_block(self, user_id: str) -> str | None:
        """The rendered approved memories of ``user_id`` (None when there are none)."""
        if not self.enabled:
            return None
        page = self.repository.find(
            agent_id=self.agent_id,
            user_id=rules.validate_id(user_id, "user_id"),
            status=MemoryStatus.APPROVED,
            limit=min(rules.MAX_PAGE_SIZE, max(self.max_records * 5, 100)),
        )
        return render(
            page.records,
            template=self.template,
            max_records=self.max_records,
            max_chars=self.max_chars,
        )

    def inject(self, prompt: Sequence[Message], user_id: str) -> list[Message]:
        """``prompt`` with the user's approved memories in its system message."""
        messages = validate_messages(prompt, argument="prompt")
        return inject_block(messages, self.system_prompt_block(user_id))

    def observe(
        self,
        user_id: str,
        text: str,
        *,
        conversation_id: str | None = None,
        message_position: int | None = None,
    ) -> bool:
        """Queue a user message for background analysis; False when not queued."""
        if not self.enabled or self.analyser is None:
            return False
        return self.analyser.submit(
            self.agent_id,
            user_id,
            text,
            conversation_id=conversation_id,
            message_position=message_position,
        )

    def observe_messages(
        self, user_id: str, messages: Sequence[Message], *, conversation_id: str | None = None
    ) -> int:
        """Queue the text of each user message in ``messages`` (a stored turn) for analysis;
        how many were queued."""
        uid = rules.validate_id(user_id, "user_id")
        return sum(
            self.observe(uid, m.text, conversation_id=conversation_id)
            for m in validate_messages(messages)
            if isinstance(m, UserMessage) and m.text
        )

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for queued analysis to finish (True when nothing was left)."""
        return True if self.analyser is None else self.analyser.flush(timeout)

    def close(self) -> None:
        """Finish queued analysis and stop the worker."""
        if self.analyser is not None:
            self.analyser.close()


def user_id_of(context: Mapping[str, Any] | None) -> str:
    """The user id in a call context; InvalidArgumentError when missing."""
    if not isinstance(context, Mapping) or context.get(USER_ID) is None:
        raise InvalidArgumentError("context", f"has no user id under {USER_ID!r}")
    return rules.validate_id(context[USER_ID], f"context[{USER_ID!r}]")


def last_user_message(prompt: Sequence[Message]) -> tuple[int, UserMessage] | None:
    """The index and message of the prompt's last user message."""
    for i in range(len(prompt) - 1, -1, -1):
        m = prompt[i]
        if isinstance(m, UserMessage):
            return i, m
    return None


class LongTermMemoryAdvisor:
    """Before a model call: inject the user's approved memories into the system prompt and
    queue the last user message for analysis. The user id comes from the call context under
    ``USER_ID``; the conversation id, if present, under ``CONVERSATION_ID``.

    Apply it closest to the model (inside ``MessageChatMemoryAdvisor``), so the memories
    reach the model but are never stored in the conversation."""

    def __init__(self, memory: LongTermMemory) -> None:
        if not isinstance(memory, LongTermMemory):
            raise InvalidArgumentError("memory", "must be a LongTermMemory")
        self.memory = memory

    def before(self, prompt: Sequence[Message], context: Mapping[str, Any]) -> list[Message]:
        """The prompt to send; the analysis happens later, on the worker."""
        user_id = user_id_of(context)
        messages = validate_messages(prompt, argument="prompt")
        found = last_user_message(messages)
        if found is not None and found[1].text:
            index, message = found
            cid = context.get(CONVERSATION_ID)
            self.memory.observe(
                user_id,
                message.text,
                conversation_id=cid if isinstance(cid, str) and cid else None,
                message_position=message.position if message.position is not None else index,
            )
        return self.memory.inject(messages, user_id)

    def wrap(self, fn: Callable[..., R]) -> Callable[..., R]:
        """Decorate ``fn(messages, *args, **kwargs)`` (sync or async); call the result with
        ``context={USER_ID: ...}`` in addition."""
        if inspect.iscoroutinefunction(fn):
            afn = cast(Callable[..., Awaitable[Any]], fn)

            @functools.wraps(fn)
            async def awrapped(
                messages: Sequence[Message], *args: Any, context: Mapping[str, Any], **kw: Any
            ) -> Any:
                return await afn(self.before(messages, context), *args, **kw)

            return cast(Callable[..., R], awrapped)

        @functools.wraps(fn)
        def wrapped(
            messages: Sequence[Message], *args: Any, context: Mapping[str, Any], **kw: Any
        ) -> Any:
            return fn(self.before(messages, context), *args, **kw)

        return cast(Callable[..., R], wrapped)

    __call__ = wrap


class LongTermChatTurn(ChatTurn):
    """A ``ChatTurn`` with long-term memory: at load the user's approved memories are
    rendered once; ``turn.prompt`` is ``turn.messages`` with them in the system prompt;
    user messages appended to the turn are queued for analysis. The stored transcript is
    ``turn.messages`` as before, without the memories. Sync only (see the module
    docstring)."""

    def __init__(
        self,
        repository: ChatMemoryRepository,
        conversation_id: str,
        *,
        long_term: LongTermMemory,
        user_id: str,
        preprocessors: Sequence[Preprocessor] = (),
    ) -> None:
        if is_async_repository(repository):
            raise InvalidArgumentError(
                "repository",
                "is an async repository; LongTermChatTurn is sync (record stores are): pass a "
                "sync repository and use `with`",
            )
        super().__init__(repository, conversation_id, preprocessors=preprocessors)
        if not isinstance(long_term, LongTermMemory):
            raise InvalidArgumentError("long_term", "must be a LongTermMemory")
        self.long_term = long_term
        self.user_id = rules.validate_id(user_id, "user_id")
        self.memory_block: str | None = None

    def load(self) -> list[Message]:
        history = super().load()
        self.memory_block = self.long_term.system_prompt_block(self.user_id)
        return history

    @property
    def prompt(self) -> list[Message]:
        """What to send to the model: the turn's messages plus the long-term memories."""
        return inject_block(self.messages, self.memory_block)

    def append(self, messages: Message | Sequence[Message]) -> None:
        added = validate_messages(messages)
        start = len(self.history) + len(self.added)
        super().append(added)
        for offset, m in enumerate(added):
            if isinstance(m, UserMessage) and m.text:
                self.long_term.observe(
                    self.user_id,
                    m.text,
                    conversation_id=self.conversation_id,
                    message_position=start + offset,
                )
