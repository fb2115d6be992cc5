# Generated from chatmem_integrations/chatmem/integrations/_async/langgraph_store_log.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
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

from chatmem.core import ChatMemoryRepository, InvalidArgumentError

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

__all__ = ["StoreLog"]


class StoreLog:
    """A repository's namespace logs (one conversation a namespace under ``key_prefix``)."""

    def __init__(self, repository: ChatMemoryRepository, key_prefix: str) -> None:
        self.repository = repository
        self.key_prefix = key_prefix

    def _namespaces(self) -> list[Namespace]:
        return namespaces_of(self.key_prefix, self.repository.find_conversation_ids())

    def _items(self, namespace: Namespace) -> dict[str, Item]:
        log = self.repository.find_by_conversation_id(cid_of(self.key_prefix, namespace))
        return items_of(namespace, log)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run reads first, then the puts (the last put of a key in a batch wins)."""
        results: list[Result] = []
        puts: dict[tuple[Namespace, str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append((self._items(tuple(op.namespace))).get(op.key))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise InvalidArgumentError("ops", f"unknown operation {type(op).__name__}")
        at = datetime.now(timezone.utc).isoformat()
        for namespace, records in put_messages(puts.values(), at).items():
            append_to(self.repository, cid_of(self.key_prefix, namespace), records)
        return results

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        found: list[Item] = []
        for ns in sorted(self._namespaces()):
            if ns[: len(prefix)] == prefix:
                found.extend(i for i in (self._items(ns)).values() if search_hit(i, op))
        return search_page(found, op)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        live = [ns for ns in self._namespaces() if self._items(ns)]
        return namespace_page(live, op)

    def compact(self, namespaces: Sequence[Namespace]) -> None:
        """Rewrite each namespace's log to its live items (one ``save_all`` each)."""
        for ns in map(tuple, namespaces):
            items = self._items(ns)
            self.repository.save_all(cid_of(self.key_prefix, ns), compact_messages(items.values()))
