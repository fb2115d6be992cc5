"""The I/O of ``ChatmemStore`` (LangGraph's ``BaseStore``): each operation reads or appends
a namespace's records; ``_langgraph_store_records`` decides what they hold."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timezone

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from chatmem.core import AsyncChatMemoryRepository, InvalidArgumentError

from .._langgraph_store_records import (
    Namespace,
    cid_of,
    compact_messages,
    items_of,
    namespace_page,
    namespaces_of,
    put_messages,
    search_hit,
    search_page,
)
from .io import append_to

__all__ = ["AsyncStoreLog"]


class AsyncStoreLog:
    """A repository's namespace logs (one conversation a namespace under ``key_prefix``)."""

    def __init__(self, repository: AsyncChatMemoryRepository, key_prefix: str) -> None:
        self.repository = repository
        self.key_prefix = key_prefix

    async def _namespaces(self) -> list[Namespace]:
        return namespaces_of(self.key_prefix, await self.repository.find_conversation_ids())

    async def _items(self, namespace: Namespace) -> dict[str, Item]:
        log = await self.repository.find_by_conversation_id(cid_of(self.key_prefix, namespace))
        return items_of(namespace, log)

    async def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run reads first, then the puts (the last put of a key in a batch wins)."""
        results: list[Result] = []
        puts: dict[tuple[Namespace, str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append((await self._items(tuple(op.namespace))).get(op.key))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise InvalidArgumentError("ops", f"unknown operation {type(op).__name__}")
        at = datetime.now(timezone.utc).isoformat()
        for namespace, records in put_messages(puts.values(), at).items():
            await append_to(self.repository, cid_of(self.key_prefix, namespace), records)
        return results

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        found: list[Item] = []
        for ns in sorted(await self._namespaces()):
            if ns[: len(prefix)] == prefix:
                found.extend(i for i in (await self._items(ns)).values() if search_hit(i, op))
        return search_page(found, op)

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        live = [ns for ns in await self._namespaces() if await self._items(ns)]
        return namespace_page(live, op)

    async def compact(self, namespaces: Sequence[Namespace]) -> None:
        """Rewrite each namespace's log to its live items (one ``save_all`` each)."""
        for ns in map(tuple, namespaces):
            items = await self._items(ns)
            await self.repository.save_all(
                cid_of(self.key_prefix, ns), compact_messages(items.values())
            )
