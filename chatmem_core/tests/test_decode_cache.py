"""DecodeCache: hits return the decoded object, the oldest key goes when full."""

from __future__ import annotations

from chatmem.core import UserMessage
from chatmem.core.backend import DecodeCache


def test_hits_skip_decoding_and_the_oldest_goes_first() -> None:
    cache = DecodeCache(size=2)
    calls: list[str] = []

    def decode(text: str) -> UserMessage:
        calls.append(text)
        return UserMessage(text)

    first = cache.get(("a", 0), lambda: decode("a"))
    assert cache.get(("a", 0), lambda: decode("a")) is first
    cache.get(("b", 1), lambda: decode("b"))
    cache.get(("c", 2), lambda: decode("c"))  # evicts ("a", 0)
    cache.get(("a", 0), lambda: decode("a"))
    assert calls == ["a", "b", "c", "a"]
    # another position is another row: never the cached object
    assert cache.get(("a", 5), lambda: decode("a")) is not first


def test_get_many_decodes_only_the_misses_in_order() -> None:
    cache: DecodeCache = DecodeCache(size=3)
    decoded: list[str] = []

    def decode(key: str) -> str:
        decoded.append(key)
        return key.upper()

    assert cache.get_many(["a", "b"], decode) == ["A", "B"]
    assert cache.get_many(["b", "c", "a"], decode) == ["B", "C", "A"]
    assert decoded == ["a", "b", "c"]
    assert cache.get_many(["d"], decode) == ["D"]  # full: the oldest ("a") goes
    assert cache.get_many(["a"], decode) == ["A"] and decoded[-1] == "a"
