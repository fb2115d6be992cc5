# Generated from chatmem_core/chatmem/core/longterm/_async/advisor.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``LongTermMemoryAdvisor``: long-term memory around a model call (one source for
both twins of the advisor).

Before the call it injects the user's approved memories into the system prompt and hands
the last user message to the analyser. The user id comes from the call context under
``USER_ID``; the conversation id, if present, under ``CONVERSATION_ID``. Apply it closest to
the model (inside ``MessageChatMemoryAdvisor``), so the memories reach the model but are
never stored in the conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from chatmem.core._advisor import CONVERSATION_ID
from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import Message
from chatmem.core._validation import validate_messages

from .._advice import last_user_message, user_id_of, wrap_sync
from .memory import LongTermMemory

R = TypeVar("R")


class LongTermMemoryAdvisor:
    """Injects memories and observes the user's message before each model call."""

    def __init__(self, memory: LongTermMemory) -> None:
        if not isinstance(memory, LongTermMemory):
            raise InvalidArgumentError("memory", "must be an LongTermMemory")
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
        """Decorate ``fn(messages, *args, **kwargs)``; call the result with
        ``context={USER_ID: ...}`` in addition. This twin wraps what its ``before`` can
        run ahead of (see ``_advice``: the one over a blocking store wraps both kinds)."""
        return wrap_sync(self.before, fn)

    __call__ = wrap
