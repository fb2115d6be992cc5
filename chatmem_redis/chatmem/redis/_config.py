"""Options of the Redis repository: frozen, keyword-only, with named defaults (Spring AI's)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any

from chatmem.core import SchemaMode
from chatmem.core.backend import (
    InvalidArgumentError,
    index_name,
    redis_key_prefix,
    schema_mode,
    sql_identifier,
    validate_ttl,
)

DEFAULT_INDEX_NAME = "chat-memory-idx"
DEFAULT_KEY_PREFIX = "chat-memory:"
DEFAULT_INITIALIZE_SCHEMA: SchemaMode = "always"
DEFAULT_SEARCH_LIMIT = 100
"""Limit of the advanced queries when the caller gives none."""
DEFAULT_ASYNC_MAX_CONNECTIONS = 20
"""Connections of the client the async ``from_url`` makes (``?max_connections=N`` in the URL
overrides it); more concurrent tasks wait for a free one without blocking the loop."""


class MetadataFieldType(str, Enum):
    """How a metadata value is indexed by RediSearch."""

    TAG = "tag"
    TEXT = "text"
    NUMERIC = "numeric"


@dataclass(frozen=True, kw_only=True)
class MetadataField:
    """A metadata key indexed for ``find_by_metadata``: ``MetadataField.tag("priority")``.

    Values that do not fit the type (a str under a numeric field, a dict anywhere) are
    simply not indexed; the message itself is always stored and read back in full.
    """

    name: str
    type: MetadataFieldType

    def __post_init__(self) -> None:
        sql_identifier(self.name, "metadata_fields.name")
        object.__setattr__(self, "type", MetadataFieldType(self.type))

    @classmethod
    def tag(cls, name: str) -> MetadataField:
        """Exact, case-sensitive match on str, bool or int values."""
        return cls(name=name, type=MetadataFieldType.TAG)

    @classmethod
    def text(cls, name: str) -> MetadataField:
        """Full-text match on str values."""
        return cls(name=name, type=MetadataFieldType.TEXT)

    @classmethod
    def numeric(cls, name: str) -> MetadataField:
        """Numeric equality on int or float values (bools are not numbers here)."""
        return cls(name=name, type=MetadataFieldType.NUMERIC)


def _optional_cap(value: int | None, argument: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidArgumentError(argument, f"must be a positive int or None, got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class RedisConfig:
    """Everything ``RedisChatMemoryRepository`` can be told; validated on construction.

    ``initialize_schema``: ``"always"`` (the default) creates the search index if missing
    (race-safe); ``"never"`` creates nothing and the first advanced query checks that the
    index exists (else ``SchemaError``). History reads and writes never need the index.
    ``ttl``: whole-conversation expiry once idle this long (sliding; up to 10% later, so that
    a write need not touch every key); None keeps forever.
    ``max_conversation_ids``: cap of ``find_conversation_ids()`` (None: every id, paged).
    ``max_messages_per_conversation``: ``find_by_conversation_id`` returns at most this many
    newest messages (None: all).
    """

    index_name: str = DEFAULT_INDEX_NAME
    key_prefix: str = DEFAULT_KEY_PREFIX
    ttl: timedelta | None = None
    initialize_schema: SchemaMode = DEFAULT_INITIALIZE_SCHEMA
    max_conversation_ids: int | None = None
    max_messages_per_conversation: int | None = None
    metadata_fields: tuple[MetadataField, ...] = ()

    def __post_init__(self) -> None:
        index_name(self.index_name)
        redis_key_prefix(self.key_prefix)
        validate_ttl(self.ttl, minimum=timedelta(milliseconds=1))
        object.__setattr__(self, "initialize_schema", schema_mode(self.initialize_schema))
        _optional_cap(self.max_conversation_ids, "max_conversation_ids")
        _optional_cap(self.max_messages_per_conversation, "max_messages_per_conversation")
        fields = tuple(self.metadata_fields)
        for f in fields:
            if not isinstance(f, MetadataField):
                raise InvalidArgumentError("metadata_fields", f"holds a {type(f).__name__}")
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise InvalidArgumentError("metadata_fields", "names must be unique")
        object.__setattr__(self, "metadata_fields", fields)

    @property
    def ttl_ms(self) -> int:
        """The TTL in whole milliseconds; 0 when there is none."""
        return 0 if self.ttl is None else self.ttl // timedelta(milliseconds=1)

    def metadata_field(self, name: str) -> MetadataField:
        """The configured field called ``name``, or an error naming the configured ones."""
        for f in self.metadata_fields:
            if f.name == name:
                return f
        known = ", ".join(f.name for f in self.metadata_fields) or "none"
        raise InvalidArgumentError("key", f"{name!r} is not an indexed metadata field ({known})")


def client_options() -> dict[str, Any]:
    """Keyword arguments for the client ``from_url`` makes (both twins).

    redis-py 7 and later read their own version from the installed package metadata (a scan
    of site-packages, milliseconds) for every new connection unless the client is given a
    ``DriverInfo``; on the async twin that scan ran on the event loop each time the pool
    grew. One ``DriverInfo`` per client reads it once. Older releases read it at import.
    """
    try:
        from redis.driver_info import DriverInfo
    except ImportError:
        return {}
    return {"driver_info": DriverInfo()}
