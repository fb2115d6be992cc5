"""``ChatmemStore``: a LangGraph ``BaseStore`` (long-term memory) on any chatmem repository.
Needs ``pip install "chatmem[langgraph]"``.

Each namespace is one chatmem conversation, ``key_prefix`` + the namespace as JSON; every
put or delete is a record appended to it (one atomic append per namespace a batch touches),
and reads resolve the records (the last one of a key wins; a delete is a record without a
value). It behaves as LangGraph's ``InMemoryStore`` without an index: ``search`` filters
(equality, or ``$eq $ne $gt $gte $lt $lte``), namespaces in order and each one's items in
put order, and ignores ``query``; there is no
semantic search and no TTL yet. Namespaces whose items were all deleted are not listed. The
log of a namespace grows with every put; ``compact`` rewrites it to its live items.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from .._errors import InvalidArgumentError, require

require("langgraph.store.base", "langgraph")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from .._messages import UserMessage  # noqa: E402
from .._repository import ChatMemoryRepository  # noqa: E402

__all__ = ["DEFAULT_STORE_PREFIX", "ChatmemStore"]

DEFAULT_STORE_PREFIX = "langgraph-store:"
KEY = "langgraph_store"
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict) and wanted and all(k in _OPS for k in wanted):
        return all(_OPS[op](value, arg) for op, arg in wanted.items())
    return bool(value == wanted)


def _path_matches(ns: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if condition.match_type == "prefix" else ns[len(ns) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


class ChatmemStore(BaseStore):
    """LangGraph's key-value store for long-term memory, in a chatmem repository."""

    def __init__(
        self, repository: ChatMemoryRepository, *, key_prefix: str = DEFAULT_STORE_PREFIX
    ) -> None:
        if not isinstance(repository, ChatMemoryRepository):
            raise InvalidArgumentError("repository", "must implement ChatMemoryRepository")
        if not isinstance(key_prefix, str) or not key_prefix:
            raise InvalidArgumentError("key_prefix", "must be a non-empty str")
        self.repository = repository
        self.key_prefix = key_prefix

    def _cid(self, namespace: tuple[str, ...]) -> str:
        return self.key_prefix + json.dumps(list(namespace), ensure_ascii=False)

    def _namespaces(self) -> list[tuple[str, ...]]:
        n = len(self.key_prefix)
        ids = self.repository.find_conversation_ids()
        return [tuple(json.loads(c[n:])) for c in ids if c.startswith(self.key_prefix)]

    def _items(self, namespace: tuple[str, ...]) -> dict[str, Item]:
        """The live items of ``namespace``, in the order their keys were first put."""
        items: dict[str, Item] = {}
        for m in self.repository.find_by_conversation_id(self._cid(namespace)):
            r = m.metadata.get(KEY)
            if not isinstance(r, dict):
                continue
            key, at = r["key"], datetime.fromisoformat(r["at"])
            if r.get("value") is None:
                items.pop(key, None)
                continue
            old = items.get(key)
            value = json.loads(json.dumps(r["value"]))  # plain, mutable dicts for callers
            items[key] = Item(
                value=value,
                key=key,
                namespace=namespace,
                created_at=old.created_at
                if old
                else datetime.fromisoformat(str(r.get("created") or r["at"])),
                updated_at=at,
            )
        return items

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run reads first, then the puts (the last put of a key in a batch wins)."""
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._items(tuple(op.namespace)).get(op.key))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise InvalidArgumentError("ops", f"unknown operation {type(op).__name__}")
        self._apply(puts.values())
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _apply(self, puts: Iterable[PutOp]) -> None:
        at = datetime.now(timezone.utc).isoformat()
        by_namespace: dict[tuple[str, ...], list[UserMessage]] = {}
        for op in puts:
            record = {"key": op.key, "at": at, "value": None if op.value is None else op.value}
            text = f"langgraph store {'delete' if op.value is None else 'put'} {op.key}"
            by_namespace.setdefault(tuple(op.namespace), []).append(
                UserMessage(text, metadata={KEY: record})
            )
        for namespace, records in by_namespace.items():
            append = getattr(self.repository, "append", None)
            cid = self._cid(namespace)
            if callable(append):
                append(cid, records)
            else:
                self.repository.save_all(
                    cid, [*self.repository.find_by_conversation_id(cid), *records]
                )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        found: list[Item] = []
        for ns in sorted(self._namespaces()):
            if ns[: len(prefix)] != prefix:
                continue
            for item in self._items(ns).values():
                if not op.filter or all(
                    _matches(item.value.get(k), v) for k, v in op.filter.items()
                ):
                    found.append(item)
        return [
            SearchItem(
                namespace=i.namespace,
                key=i.key,
                value=i.value,
                created_at=i.created_at,
                updated_at=i.updated_at,
            )
            for i in found[op.offset : op.offset + op.limit]
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = [ns for ns in self._namespaces() if self._items(ns)]
        for condition in op.match_conditions or ():
            namespaces = [ns for ns in namespaces if _path_matches(ns, condition)]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        else:
            namespaces = sorted(namespaces)
        return namespaces[op.offset : op.offset + op.limit]

    def compact(self, namespaces: Sequence[tuple[str, ...]]) -> None:
        """Rewrite each namespace's log to its live items (one ``save_all`` each)."""
        for ns in map(tuple, namespaces):
            items = self._items(ns)
            self.repository.save_all(
                self._cid(ns),
                [
                    UserMessage(
                        f"langgraph store put {i.key}",
                        metadata={
                            KEY: {
                                "key": i.key,
                                "at": i.updated_at.isoformat(),
                                "created": i.created_at.isoformat(),
                                "value": i.value,
                            }
                        },
                    )
                    for i in items.values()
                ],
            )
