"""The pure half of ``ChatmemStore``: a namespace's records (one chatmem message a put or a
delete, the data under the metadata key ``langgraph_store``) resolved to items, and the
search and namespace rules of LangGraph's ``InMemoryStore``. No I/O:
``_async/langgraph_store_log.py`` (and its generated sync twin) reads and writes them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import Item, ListNamespacesOp, MatchCondition, PutOp, SearchItem, SearchOp

from chatmem.core import Message, UserMessage

KEY = "langgraph_store"
Namespace = tuple[str, ...]
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def cid_of(prefix: str, namespace: Namespace) -> str:
    return prefix + json.dumps(list(namespace), ensure_ascii=False)


def namespaces_of(prefix: str, ids: Iterable[str]) -> list[Namespace]:
    n = len(prefix)
    return [tuple(json.loads(c[n:])) for c in ids if c.startswith(prefix)]


def items_of(namespace: Namespace, log: Sequence[Message]) -> dict[str, Item]:
    """The live items of ``namespace``, in the order their keys were first put."""
    items: dict[str, Item] = {}
    for m in log:
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


def put_messages(puts: Iterable[PutOp], at: str) -> dict[Namespace, list[Message]]:
    """The records a batch's puts (and deletes: a None value) append, by namespace."""
    out: dict[Namespace, list[Message]] = {}
    for op in puts:
        record = {"key": op.key, "at": at, "value": op.value}
        text = f"langgraph store {'delete' if op.value is None else 'put'} {op.key}"
        out.setdefault(tuple(op.namespace), []).append(UserMessage(text, metadata={KEY: record}))
    return out


def compact_messages(items: Iterable[Item]) -> list[Message]:
    """One put record a live item, keeping its times."""
    return [
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
        for i in items
    ]


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict) and wanted and all(k in _OPS for k in wanted):
        return all(_OPS[op](value, arg) for op, arg in wanted.items())
    return bool(value == wanted)


def search_hit(item: Item, op: SearchOp) -> bool:
    """Whether ``item`` passes the search's filter (``query`` is ignored: no index)."""
    return not op.filter or all(_matches(item.value.get(k), v) for k, v in op.filter.items())


def search_page(found: Sequence[Item], op: SearchOp) -> list[SearchItem]:
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


def _path_matches(ns: Namespace, condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if condition.match_type == "prefix" else ns[len(ns) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


def namespace_page(live: Iterable[Namespace], op: ListNamespacesOp) -> list[Namespace]:
    """The namespaces (with live items) ``op`` lists, sorted, then offset and limit."""
    namespaces = list(live)
    for condition in op.match_conditions or ():
        namespaces = [ns for ns in namespaces if _path_matches(ns, condition)]
    if op.max_depth is not None:
        namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
    else:
        namespaces = sorted(namespaces)
    return namespaces[op.offset : op.offset + op.limit]
