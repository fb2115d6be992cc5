"""What both advisor twins share, pure: the call context's user id, the prompt's last user
message, and the decorators that run an advisor's ``before`` ahead of the wrapped call."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import Message, UserMessage

from . import _rules as rules

USER_ID = "chat_memory_user_id"
"""The call-context key holding the user id whose long-term memory applies."""
R = TypeVar("R")
Before = Callable[[Sequence[Message], Mapping[str, Any]], list[Message]]
AsyncBefore = Callable[[Sequence[Message], Mapping[str, Any]], Awaitable[list[Message]]]


def is_async_records(repository: object) -> bool:
    """True for an async record store (its ``find`` is a coroutine function)."""
    return inspect.iscoroutinefunction(getattr(repository, "find", None))


def require_records(repository: object, protocol: type, *, want_async: bool) -> None:
    """``InvalidArgumentError`` naming ``repository`` unless it is a record store of the
    twin ``want_async`` says (the Protocols alone cannot tell the twins apart)."""
    if not isinstance(repository, protocol) or is_async_records(repository) != want_async:
        raise InvalidArgumentError(
            "repository", f"must be a {protocol.__name__} (a record store of this twin)"
        )


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


def wrap_sync(before: Before, fn: Callable[..., R]) -> Callable[..., R]:
    """``fn`` (sync or async) called with ``before(messages, context)`` as its messages."""
    if inspect.iscoroutinefunction(fn):
        afn = cast(Callable[..., Awaitable[Any]], fn)

        @functools.wraps(fn)
        async def awrapped(
            messages: Sequence[Message], *args: Any, context: Mapping[str, Any], **kw: Any
        ) -> Any:
            return await afn(before(messages, context), *args, **kw)

        return cast(Callable[..., R], awrapped)

    @functools.wraps(fn)
    def wrapped(
        messages: Sequence[Message], *args: Any, context: Mapping[str, Any], **kw: Any
    ) -> Any:
        return fn(before(messages, context), *args, **kw)

    return cast(Callable[..., R], wrapped)


def wrap_async(before: AsyncBefore, fn: Callable[..., R]) -> Callable[..., R]:
    """Coroutine function ``fn`` awaited with ``await before(messages, context)`` as its
    messages; a sync ``fn`` is an ``InvalidArgumentError`` naming ``fn``."""
    if not inspect.iscoroutinefunction(fn):
        raise InvalidArgumentError(
            "fn", "is not a coroutine function: wrap it with LongTermMemoryAdvisor"
        )
    afn = cast(Callable[..., Awaitable[Any]], fn)

    @functools.wraps(fn)
    async def awrapped(
        messages: Sequence[Message], *args: Any, context: Mapping[str, Any], **kw: Any
    ) -> Any:
        return await afn(await before(messages, context), *args, **kw)

    return cast(Callable[..., R], awrapped)
