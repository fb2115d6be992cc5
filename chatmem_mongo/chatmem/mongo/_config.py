"""Options of the MongoDB repository, with their defaults."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from chatmem.core import InvalidArgumentError
from chatmem.core.backend import collection_name, validate_ttl

DEFAULT_COLLECTION_NAME = "ai_chat_memory"
DEFAULT_TTL: timedelta | None = None
DEFAULT_CREATE_INDEXES: bool | None = None
"""``None``: create the indexes only when a ``ttl`` is set (a TTL needs its index)."""
MAX_TTL_SECONDS = 2_147_483_647
"""MongoDB's upper bound for ``expireAfterSeconds``."""
MAX_TTL = timedelta(seconds=MAX_TTL_SECONDS)


@dataclass(frozen=True, kw_only=True)
class MongoConfig:
    """``collection_name`` holds one document per conversation.

    ``ttl``: a conversation idle (no write) for this long is removed whole by MongoDB's TTL
    monitor (whole seconds, rounded up; the monitor runs about once a minute on MongoDB).
    ``create_indexes``: ``True`` creates the indexes (and drops a TTL index whose expiry
    differs, or any when ``ttl`` is None), ``False`` never touches them (your migrations own
    them), ``None`` creates them only when ``ttl`` is set.
    """

    collection_name: str = DEFAULT_COLLECTION_NAME
    ttl: timedelta | None = DEFAULT_TTL
    create_indexes: bool | None = DEFAULT_CREATE_INDEXES

    def __post_init__(self) -> None:
        collection_name(self.collection_name)
        validate_ttl(self.ttl, maximum=MAX_TTL)
        if self.create_indexes is not None and not isinstance(self.create_indexes, bool):
            raise InvalidArgumentError("create_indexes", "must be True, False or None")

    @property
    def ttl_seconds(self) -> int | None:
        """The TTL index's ``expireAfterSeconds`` (whole seconds, rounded up), or None."""
        return None if self.ttl is None else math.ceil(self.ttl.total_seconds())

    @property
    def manages_indexes(self) -> bool:
        """Whether construction creates (and reconciles) the indexes."""
        return self.create_indexes if self.create_indexes is not None else self.ttl is not None
