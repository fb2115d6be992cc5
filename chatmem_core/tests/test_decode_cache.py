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
