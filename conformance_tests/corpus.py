"""Kept for imports that predate the kit: the shared test data is chatmem.testing.corpus."""

from chatmem.testing.corpus import (
    FIXED_TS,
    ID_CORPUS,
    PNG,
    VECTORS,
    full_corpus,
    parse,
    turn,
)

__all__ = ["FIXED_TS", "ID_CORPUS", "PNG", "VECTORS", "full_corpus", "parse", "turn"]
