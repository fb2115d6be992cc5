"""Options of the MongoDB repository, with their defaults."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from chatmem.core import SchemaMode
from chatmem.core.backend import collection_name, schema_mode, validate_ttl

DEFAULT_COLLECTION_NAME = "ai_chat_memory"
DEFAULT_TTL: timedelta | None = None
DEFAULT_INITIALIZE_SCHEMA: SchemaMode = "always"
MAX_TTL_SECONDS = 2_147_483_647
"""MongoDB's upper bound for ``expireAfterSeconds``."""
MAX_TTL = timedelta(seconds=MAX_TTL_SECONDS)


@dataclass(frozen=True, kw_only=True)
class MongoConfig:
    """``collection_name`` holds one document per conversation.

    ``ttl``: a conversation idle (no write) for this long is removed whole by MongoDB's TTL
    monitor (whole seconds, rounded up; the monitor runs about once a minute on MongoDB).
    ``initialize_schema``: ``"always"`` (the default) creates the position index and makes
    the TTL index match ``ttl`` (dropping one whose expiry differs, or any when ``ttl`` is
    None), race-safe, with no DDL when they already match; ``"never"`` never touches indexes
    (your migrations own them) and checks once, at first use, that they exist (else
    ``SchemaError``). ``True``/``False`` alias them. (This replaces ``create_indexes``.)
    """

    collection_name: str = DEFAULT_COLLECTION_NAME
    ttl: timedelta | None = DEFAULT_TTL
    initialize_schema: SchemaMode = DEFAULT_INITIALIZE_SCHEMA

    def __post_init__(self) -> None:
        collection_name(self.collection_name)
        validate_ttl(self.ttl, maximum=MAX_TTL)
        object.__setattr__(self, "initialize_schema", schema_mode(self.initialize_schema))

    @property
    def ttl_seconds(self) -> int | None:
        """The TTL index's ``expireAfterSeconds`` (whole seconds, rounded up), or None."""
        return None if self.ttl is None else math.ceil(self.ttl.total_seconds())
