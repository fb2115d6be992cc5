"""``ChatmemStore``: a LangGraph ``BaseStore`` (long-term memory) on chatmem repositories.
Needs ``pip install "chatmem[langgraph]"``.

Each namespace is one chatmem conversation, ``key_prefix`` + the namespace as JSON; every
put or delete is a record appended to it (one atomic append per namespace a batch touches),
and reads resolve the records (the last one of a key wins; a delete is a record without a
value). It behaves as LangGraph's ``InMemoryStore`` without an index: ``search`` filters
(equality, or ``$eq $ne $gt $gte $lt $lte``), namespaces in order and each one's items in
put order, and ignores ``query``; there is no semantic search and no TTL yet. Namespaces
whose items were all deleted are not listed. The log of a namespace grows with every put;
``compact`` (``acompact``) rewrites it to its live items.

Sync and async: ``batch`` runs on ``repository=``, ``abatch`` (and so ``aget``, ``aput``,
``asearch``...) awaits ``async_repository=``; give either or both (two clients of one
store). A method whose repository was not given raises ``InvalidArgumentError`` naming the
argument to pass. The operations are written
once (``_async/langgraph_store_log.py``, sync twin generated) over pure functions
(``_langgraph_store_records.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from chatmem.core import (
    AsyncChatMemoryRepository,
    ChatMemoryRepository,
    InvalidArgumentError,
)
from chatmem.core.backend import require

require("langgraph.store.base", "langgraph")

from langgraph.store.base import BaseStore, Op, Result  # noqa: E402

from ._async.langgraph_store_log import AsyncStoreLog  # noqa: E402
from ._repos import TwinRepositories, pick  # noqa: E402
from ._sync.langgraph_store_log import StoreLog  # noqa: E402

__all__ = ["DEFAULT_STORE_PREFIX", "ChatmemStore"]

DEFAULT_STORE_PREFIX = "langgraph-store:"


class ChatmemStore(TwinRepositories, BaseStore):
    """LangGraph's key-value store for long-term memory, in a chatmem repository."""

    def __init__(
        self,
        repository: ChatMemoryRepository | None = None,
        *,
        async_repository: AsyncChatMemoryRepository | None = None,
        key_prefix: str = DEFAULT_STORE_PREFIX,
    ) -> None:
        twins = pick(repository, async_repository, user="ChatmemStore")
        if not isinstance(key_prefix, str) or not key_prefix:
            raise InvalidArgumentError("key_prefix", "must be a non-empty str")
        self._twins = twins
        self.key_prefix = key_prefix
        self._log = None if twins.sync is None else StoreLog(twins.sync, key_prefix)
        self._alog = None if twins.aio is None else AsyncStoreLog(twins.aio, key_prefix)

    def _sync(self) -> StoreLog:
        if self._log is None:
            raise self._twins.no_sync()
        return self._log

    def _async(self) -> AsyncStoreLog:
        if self._alog is None:
            raise self._twins.no_async()
        return self._alog

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run reads first, then the puts (the last put of a key in a batch wins)."""
        return self._sync().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch``, awaited."""
        return await self._async().batch(ops)

    def compact(self, namespaces: Sequence[tuple[str, ...]]) -> None:
        """Rewrite each namespace's log to its live items (one ``save_all`` each)."""
        self._sync().compact(namespaces)

    async def acompact(self, namespaces: Sequence[tuple[str, ...]]) -> None:
        """``compact``, awaited."""
        await self._async().compact(namespaces)
