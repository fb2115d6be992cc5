# Generated from chatmem_redis/chatmem/redis/_async/clients.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The clients a repository runs on: made from a URL (one server or a cluster), and a
cluster's slots walked (which master serves which slot; the per-slot id indexes)."""

from __future__ import annotations

from chatmem.core.backend import require

require("redis", "redis")

from typing import Any  # noqa: E402

# both twins' clients have one API; scripts/unasync.py swaps the module (its NAMES table)
import redis  # noqa: E402
import redis.cluster  # noqa: E402
from chatmem.core.backend import ConversationIdPage, SchemaError  # noqa: E402

from .._codec import as_text  # noqa: E402
from .._config import client_options  # noqa: E402
from .._native.cluster import (  # noqa: E402
    CLUSTER_SCHEMES,
    SLOTS,
    decode_cursor,
    encode_cursor,
    split_cluster_url,
)
from .._schema import Layout  # noqa: E402

Client = redis.Redis | redis.cluster.RedisCluster
"""What a repository runs on: one server's client or a cluster's."""


def client_from_url(url: str) -> Any:
    """The client ``from_url`` makes: a cluster's for ``redis+cluster://h:p,h:p``, else one
    server's."""
    if url.startswith(CLUSTER_SCHEMES):
        first, nodes = split_cluster_url(url)
        node: Any = redis.cluster.ClusterNode  # the sync one is untyped
        return redis.cluster.RedisCluster.from_url(
            first, startup_nodes=[node(h, p) for h, p in nodes], **client_options()
        )
    return redis.Redis.from_url(url, **client_options())


def is_cluster(client: Client) -> bool:
    return isinstance(client, redis.cluster.RedisCluster)


def master_slots(client: Any) -> list[int]:
    """The lowest slot of each master of a cluster, in order: one slot that routes to it."""
    lowest: dict[str, int] = {}
    slots = client.nodes_manager.slots_cache
    for slot in range(SLOTS):
        nodes = slots.get(slot)
        if not nodes:
            raise SchemaError(f"cluster slot {slot} is served by no master")
        lowest.setdefault(nodes[0].name, slot)
    return sorted(lowest.values())


def cluster_ids_page(
    client: Any, layout: Layout, limit: int, after: str | None
) -> ConversationIdPage:
    """A page of the cluster's per-slot id indexes, walked slot by slot, each in id order:
    ``ZRANGE BYLEX`` of a span of slots in one pipeline (the span doubles while slots are
    empty, so an empty store costs a few dozen round trips), then one ``EXISTS`` per
    candidate (an expired conversation's id is pruned, as on one node)."""
    slot, last = decode_cursor(after)
    found: list[tuple[int, str]] = []
    width = 64
    while slot < SLOTS and len(found) <= limit:
        need = limit + 1 - len(found)
        span = range(slot, min(slot + width, SLOTS))
        pipe = client.pipeline(transaction=False)
        for s in span:
            low = "(" + last if s == slot and last else "-"
            pipe.zrange(layout.slot_ids(s), low, "+", bylex=True, offset=0, num=need)
        batches = [[as_text(x) for x in b] for b in pipe.execute()]
        live = _live(client, layout, [cid for b in batches for cid in b])
        next_slot, next_last = span[-1] + 1, ""
        for s, batch in zip(span, batches, strict=True):
            found += [(s, cid) for cid in batch if live[cid]]
            if len(found) > limit:
                break
            if len(batch) == need:  # this slot may hold more: go on from its last
                next_slot, next_last = s, batch[-1]
                break
        slot, last = next_slot, next_last
        width = min(width * 2, 4096) if not found else 64
    ids = [cid for _, cid in found[:limit]]
    more = len(found) > limit
    return ConversationIdPage(ids, encode_cursor(*found[limit - 1]) if more else None)


def _live(client: Any, layout: Layout, ids: list[str]) -> dict[str, bool]:
    """Which of these conversations exist (their ``seq`` key); the others' ids are removed
    from their slot's index, as the single-node listing script does."""
    if not ids:
        return {}
    pipe = client.pipeline(transaction=False)
    keys = [layout.conversation(cid) for cid in ids]
    for k in keys:
        pipe.exists(k.seq)
    live = {cid: bool(n) for cid, n in zip(ids, pipe.execute(), strict=True)}
    dead = [(cid, k) for cid, k in zip(ids, keys, strict=True) if not live[cid]]
    if dead:
        pipe = client.pipeline(transaction=False)
        for cid, k in dead:
            pipe.zrem(k.ids, cid)
        pipe.execute()
    return live
