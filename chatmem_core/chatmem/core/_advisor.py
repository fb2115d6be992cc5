"""``MessageChatMemoryAdvisor``: Spring AI's memory advisor around any model call
(docs/behaviour.md section 5).

Before the call (``before``): the conversation id comes from the call context under
``CONVERSATION_ID`` (there is no default; a missing id is an error); the stored memory goes in
front of the prompt unless the prompt already holds it as a contiguous run; the first system
message moves to the front; the last user or tool-response message is stored. After the call
(``after``): the model's outputs are stored. ``wrap`` applies both around a
``messages -> reply`` function, sync or async. The two kinds never mix: ``before``/``after``
(and ``wrap`` of a plain function) call a sync memory (``MessageWindowChatMemory``);
``abefore``/``aafter`` (and ``wrap`` of an ``async def`` function) await an async memory
(``AsyncMessageWindowChatMemory``). The other pairing is an ``InvalidArgumentError`` naming
``memory`` before any I/O, and a plain function that returns an awaitable is one naming
``fn`` (wrap an ``async def`` function instead).

Two deliberate details: when the prompt has no user or tool-response message outside the
memory run, nothing is stored before the call (Spring AI would store an empty user message or
the memory's own last message again); and the user message is stored before the call, so it
stays stored when the call fails, as in Spring AI.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from ._errors import InvalidArgumentError
from ._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)
from ._validation import validate_conversation_id, validate_messages

CONVERSATION_ID = "chat_memory_conversation_id"
"""The call-context key holding the conversation id (Spring AI's ``ChatMemory.CONVERSATION_ID``)."""

Reply = Message | Sequence[Message] | str
R = TypeVar("R")


@runtime_checkable
class ChatMemory(Protocol):
    """What the advisor needs of a memory: ``MessageWindowChatMemory`` is one."""

    def get(self, conversation_id: str) -> list[Message]: ...

    def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None: ...


@runtime_checkable
class AsyncChatMemory(Protocol):
    """The async twin of ``ChatMemory``: ``AsyncMessageWindowChatMemory`` is one."""

    async def get(self, conversation_id: str) -> list[Message]: ...

    async def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None: ...


def _is_async_memory(memory: object) -> bool:
    return inspect.iscoroutinefunction(getattr(memory, "get", None))


def conversation_id_of(context: Mapping[str, Any] | None) -> str:
    """The conversation id in a call context; InvalidArgumentError when it is missing."""
    if context is None or not isinstance(context, Mapping):
        raise InvalidArgumentError("context", f"must be a mapping holding {CONVERSATION_ID!r}")
    if context.get(CONVERSATION_ID) is None:
        raise InvalidArgumentError(
            "context", f"has no conversation id under {CONVERSATION_ID!r} (there is no default)"
        )
    return validate_conversation_id(
        context[CONVERSATION_ID], argument=f"context[{CONVERSATION_ID!r}]"
    )


def find_run(haystack: Sequence[Message], needle: Sequence[Message]) -> int:
    """Index where ``needle`` occurs contiguously in ``haystack`` (messages compare by
    content), or -1."""
    n = len(needle)
    if n == 0:
        return 0
    for i in range(len(haystack) - n + 1):
        if haystack[i] == needle[0] and list(haystack[i : i + n]) == list(needle):
            return i
    return -1


def advise(
    memory: Sequence[Message], prompt: Sequence[Message]
) -> tuple[list[Message], int | None]:
    """The pure part of ``before``: the advised prompt, and the index in it of the message to
    store (None when there is none outside the memory run)."""
    at = find_run(prompt, memory) if memory else -1
    if memory and at >= 0:
        advised, run = list(prompt), range(at, at + len(memory))
    else:
        advised, run = [*memory, *prompt], range(len(memory))
    run_set = set(run)
    for i, m in enumerate(advised):
        if isinstance(m, SystemMessage):
            if i:
                advised.insert(0, advised.pop(i))
                # indices before i shift by one; the run's membership follows its messages
                run_set = {j + 1 if j < i else (0 if j == i else j) for j in run_set}
            break
    for i in range(len(advised) - 1, -1, -1):
        if isinstance(advised[i], (UserMessage, ToolResponseMessage)):
            return advised, (None if i in run_set else i)
    return advised, None


def outputs_of(reply: Reply) -> list[Message]:
    """The messages to store for a model reply: a message, a sequence of them, or a str
    (stored as an ``AssistantMessage``)."""
    if isinstance(reply, str):
        return [AssistantMessage(reply)]
    return validate_messages(reply, argument="reply")


class MessageChatMemoryAdvisor:
    """Keeps a conversation's memory around model calls, the way Spring AI's
    ``MessageChatMemoryAdvisor`` does.

    ``advisor.before(prompt, context)`` returns the prompt to send; ``advisor.after(reply,
    context)`` stores the reply. ``@advisor.wrap`` does both around a function taking the
    message list; the wrapped function takes ``context=`` (keyword) in addition.
    """

    _async = False  # whether ``memory`` is async (a subclass may keep no memory)

    def __init__(self, memory: ChatMemory | AsyncChatMemory) -> None:
        if not isinstance(memory, (ChatMemory, AsyncChatMemory)):
            raise InvalidArgumentError("memory", "must have get(conversation_id) and add(...)")
        self.memory = memory
        self._async = _is_async_memory(memory)

    def _sync_memory(self) -> ChatMemory:
        if self._async:
            raise InvalidArgumentError(
                "memory", "is async: use abefore/aafter, or wrap an async function"
            )
        return cast(ChatMemory, self.memory)

    def _async_memory(self) -> AsyncChatMemory:
        if not self._async:
            raise InvalidArgumentError(
                "memory",
                "is sync: use before/after (or wrap a plain function), or pass an async memory "
                "(AsyncMessageWindowChatMemory) for abefore/aafter and async functions",
            )
        return cast(AsyncChatMemory, self.memory)

    def before(self, prompt: Sequence[Message], context: Mapping[str, Any]) -> list[Message]:
        """The prompt with memory, system message first; stores the new user/tool message."""
        cid = conversation_id_of(context)
        messages = validate_messages(prompt, argument="prompt")
        memory = self._sync_memory()
        advised, store = advise(memory.get(cid), messages)
        if store is not None:
            memory.add(cid, [advised[store]])
        return advised

    def after(self, reply: Reply, context: Mapping[str, Any]) -> None:
        """Store the model's outputs."""
        cid = conversation_id_of(context)
        outputs = outputs_of(reply)
        if outputs:
            self._sync_memory().add(cid, outputs)

    async def abefore(self, prompt: Sequence[Message], context: Mapping[str, Any]) -> list[Message]:
        """``before``, awaiting the async memory (a sync one is an ``InvalidArgumentError``
        naming ``memory``, before any I/O)."""
        memory = self._async_memory()
        cid = conversation_id_of(context)
        messages = validate_messages(prompt, argument="prompt")
        advised, store = advise(await memory.get(cid), messages)
        if store is not None:
            await memory.add(cid, [advised[store]])
        return advised

    async def aafter(self, reply: Reply, context: Mapping[str, Any]) -> None:
        """``after``, awaiting the async memory (see ``abefore``)."""
        memory = self._async_memory()
        cid = conversation_id_of(context)
        outputs = outputs_of(reply)
        if outputs:
            await memory.add(cid, outputs)

    def wrap(self, fn: Callable[..., R]) -> Callable[..., R]:
        """Decorate ``fn(messages, *args, **kwargs) -> reply`` (sync or async); call the
        result as ``wrapped(messages, *args, context={CONVERSATION_ID: id}, **kwargs)``.
        An ``async def`` function is advised with ``abefore``/``aafter`` (an async memory), a
        plain one with ``before``/``after`` (a sync memory); a plain function's reply must
        not be an awaitable (that is an ``InvalidArgumentError`` naming ``fn``, raised with
        the user message already stored, as when a call fails)."""
        if inspect.iscoroutinefunction(fn):
            afn = cast(Callable[..., Awaitable[Any]], fn)

            @functools.wraps(fn)
            async def awrapped(
                messages: Sequence[Message], *args: Any, context: Mapping[str, Any], **kwargs: Any
            ) -> Any:
                advised = await self.abefore(messages, context)
                reply = await afn(advised, *args, **kwargs)
                await self.aafter(reply, context)
                return reply

            return cast(Callable[..., R], awrapped)

        @functools.wraps(fn)
        def wrapped(
            messages: Sequence[Message], *args: Any, context: Mapping[str, Any], **kwargs: Any
        ) -> Any:
            advised = self.before(messages, context)
            reply = fn(advised, *args, **kwargs)
            if inspect.isawaitable(reply):
                if inspect.iscoroutine(reply):
                    reply.close()  # the model never ran; no "never awaited" warning either
                raise InvalidArgumentError(
                    "fn",
                    "returned an awaitable: wrap an `async def` function (with an async "
                    "memory such as AsyncMessageWindowChatMemory) so its reply is awaited",
                )
            self.after(cast(Reply, reply), context)
            return reply

        return cast(Callable[..., R], wrapped)

    __call__ = wrap
