"""Options of the MongoDB repository, with their defaults."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import timedelta

from chatmem.core import InvalidArgumentError, InvalidIdentifierError, SchemaMode, schema_mode

DEFAULT_COLLECTION_NAME = "ai_chat_memory"
DEFAULT_TTL: timedelta | None = None
DEFAULT_INITIALIZE_SCHEMA: SchemaMode = "always"
MAX_TTL_SECONDS = 2_147_483_647
"""MongoDB's upper bound for ``expireAfterSeconds``."""

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
        if self.ttl is not None:
            if not isinstance(self.ttl, timedelta):
                kind = type(self.ttl).__name__
                raise InvalidArgumentError("ttl", f"must be a timedelta, got {kind}")
            if self.ttl <= timedelta(0):
                raise InvalidArgumentError("ttl", f"must be positive, got {self.ttl}")
            if self.ttl.total_seconds() > MAX_TTL_SECONDS:
                raise InvalidArgumentError("ttl", f"is over MongoDB's limit of {MAX_TTL_SECONDS} s")
        object.__setattr__(self, "initialize_schema", schema_mode(self.initialize_schema))

    @property
    def ttl_seconds(self) -> int | None:
        """The TTL index's ``expireAfterSeconds`` (whole seconds, rounded up), or None."""
        return None if self.ttl is None else math.ceil(self.ttl.total_seconds())
