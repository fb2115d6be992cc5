"""Redis Cluster, pure helpers: key slots, a hash tag per slot, the listing cursor.

On a cluster every key a script touches must live in one slot. A conversation's keys share
the hash tag ``{H}``; its entry in the id index must too, so the cluster's id index is one
sorted set per slot, ``<prefix>ids:{t}`` with ``t`` the shortest tag that hashes to that
slot (``slot_tags``). Listing walks the slots in order; its cursor is ``<slot> <last id>``.
"""

from __future__ import annotations

import binascii
import functools
import itertools

from chatmem.core.backend import InvalidArgumentError

SLOTS = 16384
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def key_slot(key: str) -> int:
    """The cluster slot of ``key`` (CRC16/XMODEM of its hash tag, or of the whole key)."""
    data = key.encode("utf-8")
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1 : end]
    return binascii.crc_hqx(data, 0) % SLOTS


@functools.cache
def slot_tags() -> tuple[str, ...]:
    """For each slot, the first string of ``[0-9a-z]`` (shortest first, then in order)
    hashing to it: a fixed table computed once (about 0.1 s), so every client names the
    same keys."""
    tags: dict[int, str] = {}
    crc = binascii.crc_hqx
    last = [(c, c.encode()) for c in _DIGITS]
    for length in range(1, 6):
        for head in map("".join, itertools.product(_DIGITS, repeat=length - 1)):
            seed = crc(head.encode(), 0)  # CRC16 runs on: extend the head's by one byte
            for c, byte in last:
                tags.setdefault(crc(byte, seed) % SLOTS, head + c)
            if len(tags) == SLOTS:
                return tuple(tags[s] for s in range(SLOTS))
    raise AssertionError("unreachable: 5 characters reach every slot")


def encode_cursor(slot: int, last_id: str) -> str:
    return f"{slot} {last_id}"


def decode_cursor(after: str | None) -> tuple[int, str]:
    """``(slot, last id)`` of a cursor from a previous page; ``(0, "")`` for None."""
    if after is None:
        return 0, ""
    head, sep, last = after.partition(" ")
    if not sep or not head.isdigit() or int(head) >= SLOTS:
        raise InvalidArgumentError("after", "must be a cursor str from a previous page")
    return int(head), last


CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")


def split_cluster_url(url: str) -> tuple[str, list[tuple[str, int]]]:
    """``redis+cluster://[auth@]h1:p1,h2:p2[/...]`` as a plain URL of its first node (what
    redis-py's ``RedisCluster.from_url`` reads: auth, TLS, options) and every node given."""
    scheme, _, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    auth, at, hosts = netloc.rpartition("@")
    nodes: list[tuple[str, int]] = []
    for part in hosts.split(","):
        host, colon, port = part.strip().rpartition(":")
        if not colon or not host or not port.isdigit():
            raise InvalidArgumentError("url", f"{part!r} in {url!r} is not host:port")
        nodes.append((host.removeprefix("[").removesuffix("]"), int(port)))  # IPv6 [::1]
    plain = scheme.removesuffix("+cluster") + "://" + auth + at + hosts.split(",")[0].strip()
    return plain + slash + tail, nodes
