"""Options of the MongoDB repository, with their defaults."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import timedelta

from chatmem.core import InvalidArgumentError, InvalidIdentifierError
from chatmem.core.backend import validate_ttl

DEFAULT_COLLECTION_NAME = "ai_chat_memory"
DEFAULT_TTL: timedelta | None = None
DEFAULT_CREATE_INDEXES: bool | None = None
"""``None``: create the indexes only when a ``ttl`` is set (a TTL needs its index)."""
MAX_TTL_SECONDS = 2_147_483_647
"""MongoDB's upper bound for ``expireAfterSeconds``."""
MAX_TTL = timedelta(seconds=MAX_TTL_SECONDS)

# MongoDB allows more, but a name we never have to quote or explain: letters, digits, _ . -;
# no "$", no NUL, not the reserved "system." prefix, short enough for any namespace limit.
_COLLECTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,119}")


def collection_name(value: object, argument: str = "collection_name") -> str:
    """A MongoDB collection name: ``[A-Za-z_][A-Za-z0-9_.-]*``, at most 120, not ``system.*``."""
    if (
        not isinstance(value, str)
        or not _COLLECTION_NAME.fullmatch(value)
        or value.startswith("system.")
        or value.endswith(".")
        or ".." in value
    ):
        raise InvalidIdentifierError(
            argument,
            f"{value!r} is not a valid name (a letter or _, then letters, digits, _ . -; "
            "at most 120; not system.*)",
        )
    return value


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
