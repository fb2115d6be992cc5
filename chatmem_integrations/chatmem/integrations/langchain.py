"""LangChain: any chatmem repository as a chat message history, and the lossless message
conversions (``from_langchain`` / ``to_langchain``, see ``_langchain_codec`` for the
mapping). Needs ``pip install "chatmem[langchain]"``.

LangChain calls one history object sync (``invoke``) or async (``ainvoke``), so
``ChatmemChatMessageHistory`` takes ``repository=`` (sync), ``async_repository=`` (an
``Async*Repository``) or both, two clients of one store: ``messages`` / ``add_messages`` /
``clear`` use the sync one, ``aget_messages`` / ``aadd_messages`` / ``aclear`` await the
async one. Given only a sync repository, the async methods are LangChain's own
(``BaseChatMessageHistory`` runs the sync ones in its executor); given only an async one,
the sync methods raise ``InvalidArgumentError`` naming ``repository``.
"""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.core import AsyncChatMemoryRepository, ChatMemoryRepository
from chatmem.core.backend import require, validate_conversation_id

require("langchain_core", "langchain")

from langchain_core.chat_history import BaseChatMessageHistory  # noqa: E402
from langchain_core.messages import BaseMessage  # noqa: E402

from ._async.history import AsyncHistoryLog  # noqa: E402
from ._langchain_codec import from_langchain, to_langchain  # noqa: E402
from ._repos import TwinRepositories, pick  # noqa: E402
from ._sync.history import HistoryLog  # noqa: E402

__all__ = ["ChatmemChatMessageHistory", "from_langchain", "to_langchain"]


class ChatmemChatMessageHistory(TwinRepositories, BaseChatMessageHistory):
    """A LangChain chat message history stored in any chatmem repository (sync, async or
    both: see the module docstring).

    ``add_messages`` is one atomic append on a chatmem repository (concurrent writers all
    land). With ``max_messages`` the history is a window (``MessageWindowChatMemory`` or its
    async twin): adds follow the window rule and ``messages`` returns the window.
    """

    def __init__(
        self,
        repository: ChatMemoryRepository | None = None,
        conversation_id: str | None = None,
        *,
        async_repository: AsyncChatMemoryRepository | None = None,
        max_messages: int | None = None,
    ) -> None:
        self._twins = pick(repository, async_repository, user="ChatmemChatMessageHistory")
        self.conversation_id = cid = validate_conversation_id(conversation_id)
        self._log = None if repository is None else HistoryLog(repository, cid, max_messages)
        self._alog = (
            None
            if async_repository is None
            else AsyncHistoryLog(async_repository, cid, max_messages)
        )

    def _sync(self) -> HistoryLog:
        if self._log is None:
            raise self._twins.no_sync()
        return self._log

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The stored history (or window), as LangChain messages."""
        return to_langchain(self._sync().get(), group_tool_responses=False)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store ``messages`` after the existing ones, one chatmem message each."""
        self._sync().add(from_langchain(messages, group_tool_responses=False))

    def clear(self) -> None:
        """Delete the conversation."""
        self._sync().clear()

    async def aget_messages(self) -> list[BaseMessage]:
        """``messages``, awaited on the async repository (without one: LangChain's own)."""
        if self._alog is None:
            return await super().aget_messages()
        return to_langchain(await self._alog.get(), group_tool_responses=False)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """``add_messages``, awaited on the async repository (without one: LangChain's own)."""
        if self._alog is None:
            await super().aadd_messages(messages)
            return
        await self._alog.add(from_langchain(messages, group_tool_responses=False))

    async def aclear(self) -> None:
        """``clear``, awaited on the async repository (without one: LangChain's own)."""
        if self._alog is None:
            await super().aclear()
            return
        await self._alog.clear()
