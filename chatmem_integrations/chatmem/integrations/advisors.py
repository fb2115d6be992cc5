"""Spring AI's other two memory advisors: memory rendered into the system prompt as text.

- ``PromptChatMemoryAdvisor``: the conversation's memory (``ChatMemory.get``), its user and
  assistant messages as ``TYPE:text`` lines, goes into the system message through a template
  with ``{instructions}`` (the prompt's own system text) and ``{memory}``.
- ``VectorStoreChatMemoryAdvisor``: the ``top_k`` past messages most similar to the user's
  message, from a vector store (``chatmem.integrations.vectorstore``) filtered to the
  conversation by default, go in through ``{instructions}`` and ``{long_term_memory}``.

Both follow Spring AI 1.0: the first system message is rewritten in place (one is put first
when there is none); before the call the last user (or, for the prompt advisor, tool
response) message is stored, after it the model's outputs. As in ``MessageChatMemoryAdvisor``
nothing is stored before the call when the prompt has no such message (Spring AI stores an
empty user message). Placeholders are replaced literally, so braces in a conversation are
never read as template syntax. The conversation id comes from the call context under
``CONVERSATION_ID``; ``wrap`` is ``MessageChatMemoryAdvisor.wrap``.

Async (``abefore``/``aafter``, and ``wrap`` of an async function) awaits the async twin: an
async memory (``AsyncMessageWindowChatMemory``) for the prompt advisor, an async vector store
(``AsyncInMemoryVectorStore``, ``AsyncRedisVectorStore``, ``AsyncPgVectorStore``) for the
vector store advisor. A sync one on an async path (or the reverse) is an
``InvalidArgumentError`` naming ``memory`` / ``vector_store``, raised before any I/O; nothing
runs in a worker thread.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from typing import Any, cast

from chatmem.core import (
    CONVERSATION_ID,
    AssistantMessage,
    AsyncChatMemory,
    ChatMemory,
    InvalidArgumentError,
    Message,
    MessageChatMemoryAdvisor,
    MessageType,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import (
    Reply,
    conversation_id_of,
    outputs_of,
    validate_messages,
    validate_positive_int,
)

from .vectorstore import AsyncVectorStore, Document, VectorStore

__all__ = [
    "CONVERSATION_ID",
    "DEFAULT_PROMPT_TEMPLATE",
    "DEFAULT_TOP_K",
    "DEFAULT_VECTOR_TEMPLATE",
    "TOP_K",
    "PromptChatMemoryAdvisor",
    "VectorStoreChatMemoryAdvisor",
]

DEFAULT_PROMPT_TEMPLATE = """{instructions}

Use the conversation memory from the MEMORY section to provide accurate answers.

---------------------
MEMORY:
{memory}
---------------------

"""
"""Spring AI's ``PromptChatMemoryAdvisor`` default system prompt template."""

DEFAULT_VECTOR_TEMPLATE = """{instructions}

Use the long term conversation memory from the LONG_TERM_MEMORY section to provide accurate answers.

---------------------
LONG_TERM_MEMORY:
{long_term_memory}
---------------------
"""
"""Spring AI's ``VectorStoreChatMemoryAdvisor`` default system prompt template."""

DEFAULT_TOP_K = 20
TOP_K = "chat_memory_vector_store_top_k"
"""Call-context key overriding ``top_k`` for one call (Spring AI's key)."""

CONVERSATION_KEY = "conversationId"
MESSAGE_TYPE_KEY = "messageType"


def render(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` replaced by its value, literally, in one pass."""
    out, i = [], 0
    while i < len(template):
        for name, value in values.items():
            token = "{" + name + "}"
            if template.startswith(token, i):
                out.append(value)
                i += len(token)
                break
        else:
            out.append(template[i])
            i += 1
    return "".join(out)


def _template(template: object, required: Sequence[str]) -> str:
    if not isinstance(template, str):
        raise InvalidArgumentError("system_prompt_template", "must be a str")
    missing = [name for name in required if "{" + name + "}" not in template]
    if missing:
        raise InvalidArgumentError("system_prompt_template", f"has no {{{missing[0]}}}")
    return template


def with_system_text(prompt: Sequence[Message], text: str) -> list[Message]:
    """``prompt`` with its first system message's text replaced (metadata and media kept),
    or with a new system message first when it has none (Spring's augmentSystemMessage)."""
    out = list(prompt)
    for i, m in enumerate(out):
        if isinstance(m, SystemMessage):
            out[i] = dataclasses.replace(m, text=text)
            return out
    return [SystemMessage(text), *out]


def _system_text(prompt: Sequence[Message]) -> str:
    return next((m.text for m in prompt if isinstance(m, SystemMessage)), "")


def render_memory(messages: Sequence[Message]) -> str:
    """Spring's memory text: one ``USER:text`` or ``ASSISTANT:text`` line a message."""
    return "\n".join(
        f"{m.message_type.value}:{m.text or ''}"
        for m in messages
        if m.message_type in (MessageType.USER, MessageType.ASSISTANT)
    )


def prompt_advice(
    memory: Sequence[Message], prompt: Sequence[Message], template: str
) -> tuple[list[Message], Message | None]:
    """The pure part of the prompt advisor's ``before``: the prompt with ``memory`` rendered
    into its system message, and the last user or tool-response message to store (or None)."""
    text = render(template, {"instructions": _system_text(prompt), "memory": render_memory(memory)})
    advised = with_system_text(prompt, text)
    last = next(
        (m for m in reversed(advised) if isinstance(m, (UserMessage, ToolResponseMessage))),
        None,
    )
    return advised, last


class PromptChatMemoryAdvisor(MessageChatMemoryAdvisor):
    """Memory as text in the system prompt (Spring AI's ``PromptChatMemoryAdvisor``); the
    memory is a ``ChatMemory`` (``before``/``after``) or its async twin (``abefore``/``aafter``)."""

    def __init__(
        self,
        memory: ChatMemory | AsyncChatMemory,
        *,
        system_prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
    ) -> None:
        super().__init__(memory)
        self.system_prompt_template = _template(system_prompt_template, ["memory"])
        self._awaits = inspect.iscoroutinefunction(getattr(memory, "get", None))

    def before(self, prompt: Sequence[Message], context: Mapping[str, Any]) -> list[Message]:
        """The prompt with the rendered memory in its system message; stores the last user
        or tool-response message."""
        cid = conversation_id_of(context)
        messages = validate_messages(prompt, argument="prompt")
        if self._awaits:
            raise InvalidArgumentError(
                "memory", "is async: use abefore/aafter, or wrap an async function"
            )
        memory = cast(ChatMemory, self.memory)
        advised, last = prompt_advice(memory.get(cid), messages, self.system_prompt_template)
        if last is not None:
            memory.add(cid, [last])
        return advised

    async def abefore(self, prompt: Sequence[Message], context: Mapping[str, Any]) -> list[Message]:
        """``before``, awaiting the async memory."""
        cid = conversation_id_of(context)
        messages = validate_messages(prompt, argument="prompt")
        if not self._awaits:
            raise InvalidArgumentError(
                "memory",
                "is a sync memory: call before/after, or give the advisor an async memory "
                "(AsyncMessageWindowChatMemory) for abefore/aafter",
            )
        memory = cast(AsyncChatMemory, self.memory)
        stored = await memory.get(cid)
        advised, last = prompt_advice(stored, messages, self.system_prompt_template)
        if last is not None:
            await memory.add(cid, [last])
        return advised


@dataclasses.dataclass(frozen=True)
class _Search:
    """What one ``before`` call searches for: the checked prompt and context, the query."""

    cid: str
    prompt: list[Message]
    user: UserMessage | None
    top_k: int
    filter: dict[str, str] | None


class VectorStoreChatMemoryAdvisor(MessageChatMemoryAdvisor):
    """Relevant past messages from a vector store as text in the system prompt (Spring AI's
    ``VectorStoreChatMemoryAdvisor``); every user and assistant message is written to it.
    The store is a ``VectorStore`` (``before``/``after``) or an ``AsyncVectorStore``
    (``abefore``/``aafter``)."""

    def __init__(
        self,
        vector_store: VectorStore | AsyncVectorStore,
        *,
        top_k: int = DEFAULT_TOP_K,
        similarity_threshold: float = 0.0,
        system_prompt_template: str = DEFAULT_VECTOR_TEMPLATE,
        filter_by_conversation: bool = True,
    ) -> None:
        if not isinstance(vector_store, (VectorStore, AsyncVectorStore)):
            raise InvalidArgumentError("vector_store", "must implement VectorStore")
        threshold = similarity_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise InvalidArgumentError("similarity_threshold", "must be a number")
        if not 0.0 <= threshold <= 1.0:
            raise InvalidArgumentError(
                "similarity_threshold", f"must be in [0, 1], got {threshold}"
            )
        if not isinstance(filter_by_conversation, bool):
            raise InvalidArgumentError("filter_by_conversation", "must be a bool")
        self.vector_store = vector_store
        self.top_k = validate_positive_int(top_k, "top_k")
        self.similarity_threshold = float(threshold)
        self.system_prompt_template = _template(system_prompt_template, ["long_term_memory"])
        self.filter_by_conversation = filter_by_conversation
        self._awaits = inspect.iscoroutinefunction(vector_store.similarity_search)

    def _sync_store(self) -> VectorStore:
        if self._awaits:
            raise InvalidArgumentError(
                "vector_store", "is async: use abefore/aafter, or wrap an async function"
            )
        return cast(VectorStore, self.vector_store)

    def _async_store(self) -> AsyncVectorStore:
        if not self._awaits:
            raise InvalidArgumentError(
                "vector_store",
                "is a sync vector store: call before/after, or give the advisor its async "
                "twin (AsyncInMemoryVectorStore, AsyncRedisVectorStore, AsyncPgVectorStore) "
                "for abefore/aafter",
            )
        return cast(AsyncVectorStore, self.vector_store)

    def _search(self, prompt: Sequence[Message], context: Mapping[str, Any]) -> _Search:
        cid = conversation_id_of(context)
        messages = validate_messages(prompt, argument="prompt")
        top_k = validate_positive_int(context.get(TOP_K, self.top_k), f"context[{TOP_K!r}]")
        user = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
        wanted = {CONVERSATION_KEY: cid} if self.filter_by_conversation else None
        return _Search(cid, messages, user, top_k, wanted)

    def _advised(self, q: _Search, found: Sequence[Document]) -> list[Message]:
        values = {
            "instructions": _system_text(q.prompt),
            "long_term_memory": "\n".join(d.text for d in found),
        }
        return with_system_text(q.prompt, render(self.system_prompt_template, values))

    def before(self, prompt: Sequence[Message], context: Mapping[str, Any]) -> list[Message]:
        """The prompt with the most similar past messages in its system message; writes the
        last user message to the store."""
        q = self._search(prompt, context)
        store = self._sync_store()
        found = store.similarity_search(
            q.user.text if q.user is not None else "",
            top_k=q.top_k,
            similarity_threshold=self.similarity_threshold,
            filter=q.filter,
        )
        advised = self._advised(q, found)
        if q.user is not None:
            store.add(documents(q.cid, [q.user]))
        return advised

    def after(self, reply: Reply, context: Mapping[str, Any]) -> None:
        """Write the model's assistant outputs to the store."""
        cid = conversation_id_of(context)
        outputs = [m for m in outputs_of(reply) if isinstance(m, AssistantMessage)]
        store = self._sync_store()
        if outputs:
            store.add(documents(cid, outputs))

    async def abefore(self, prompt: Sequence[Message], context: Mapping[str, Any]) -> list[Message]:
        """``before``, awaiting the async vector store."""
        q = self._search(prompt, context)
        store = self._async_store()
        found = await store.similarity_search(
            q.user.text if q.user is not None else "",
            top_k=q.top_k,
            similarity_threshold=self.similarity_threshold,
            filter=q.filter,
        )
        advised = self._advised(q, found)
        if q.user is not None:
            await store.add(documents(q.cid, [q.user]))
        return advised

    async def aafter(self, reply: Reply, context: Mapping[str, Any]) -> None:
        """``after``, awaiting the async vector store."""
        cid = conversation_id_of(context)
        outputs = [m for m in outputs_of(reply) if isinstance(m, AssistantMessage)]
        store = self._async_store()
        if outputs:
            await store.add(documents(cid, outputs))


def documents(conversation_id: str, messages: Sequence[Message]) -> list[Document]:
    """Spring's documents for messages: the text, the message's metadata plus
    ``conversationId`` and ``messageType``."""
    return [
        Document(
            text=m.text or "",
            metadata={
                **m.metadata,
                CONVERSATION_KEY: conversation_id,
                MESSAGE_TYPE_KEY: m.message_type.value,
            },
        )
        for m in messages
    ]
