"""Redis Cluster key helpers, pure (they run with the single-node backend's tests): slots as
the server computes them, one tag per slot, the listing cursor and ``redis+cluster://`` URLs."""

from __future__ import annotations

import pytest
from redis.crc import key_slot as redis_key_slot

from chatmem.core import InvalidArgumentError
from chatmem.redis._native.cluster import (
    SLOTS,
    decode_cursor,
    encode_cursor,
    key_slot,
    slot_tags,
    split_cluster_url,
)
from chatmem.redis._schema import Layout

pytestmark = pytest.mark.backend("redis", "redis_cluster")


@pytest.mark.parametrize("key", ["plain", "a{b}c", "{}x", "x{}{y}", "{ü}", "p:c:{6162}:log"])
def test_key_slot_matches_redis_py(key: str) -> None:
    assert key_slot(key) == redis_key_slot(key.encode())


def test_every_slot_has_a_short_tag_that_hashes_to_it() -> None:
    tags = slot_tags()
    assert len(tags) == SLOTS and max(map(len, tags)) <= 4
    assert all(key_slot("{" + t + "}") == s for s, t in enumerate(tags))


def test_a_cluster_layout_lists_each_conversation_in_its_own_slot() -> None:
    single, cluster = Layout("p:"), Layout("p:", cluster=True)
    for cid in ["a", "A", "{x}", "ünï", "c,d", " "]:
        assert single.conversation(cid).ids == "p:ids"
        keys = cluster.conversation(cid)
        assert key_slot(keys.ids) == key_slot(keys.log) == key_slot(keys.seq)


def test_cursor_round_trips_ids_with_spaces_and_rejects_garbage() -> None:
    assert decode_cursor(None) == (0, "")
    assert decode_cursor(encode_cursor(17, "a b c")) == (17, "a b c")
    for bad in ["", "x y", "16384 a", "-1 a", "12"]:
        with pytest.raises(InvalidArgumentError, match="after"):
            decode_cursor(bad)


def test_cluster_urls_name_every_node_and_keep_auth_and_options() -> None:
    assert split_cluster_url("redis+cluster://u:p@h1:1,h2:2/0?ssl_cert_reqs=none") == (
        "redis://u:p@h1:1/0?ssl_cert_reqs=none",
        [("h1", 1), ("h2", 2)],
    )
    assert split_cluster_url("rediss+cluster://[::1]:7000") == (
        "rediss://[::1]:7000",
        [("::1", 7000)],
    )
    for bad in ["redis+cluster://h1", "redis+cluster://h1:x", "redis+cluster://:1"]:
        with pytest.raises(InvalidArgumentError, match="url"):
            split_cluster_url(bad)
