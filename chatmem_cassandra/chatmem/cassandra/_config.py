"""Options of the Cassandra repository: frozen, keyword-only, with named defaults.

Names follow Spring AI's Cassandra chat memory where it has one (keyspace, table, TTL,
schema switch); the replication of a keyspace we create is explicit, and SimpleStrategy with
factor 1 is only a development default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from urllib.parse import parse_qs, unquote, urlsplit

from chatmem.core import SchemaMode
from chatmem.core.backend import (
    InvalidArgumentError,
    InvalidIdentifierError,
    cql_identifier,
    schema_mode,
    validate_ttl,
)

DEFAULT_KEYSPACE = "chatmem"
DEFAULT_TABLE_NAME = "chat_memory"
DEFAULT_CONVERSATION_ID_COLUMN = "conversation_id"
DEFAULT_POSITION_COLUMN = "position"
DEFAULT_MESSAGE_TYPE_COLUMN = "message_type"
DEFAULT_CONTENT_COLUMN = "content"
DEFAULT_CREATED_AT_COLUMN = "created_at"
DEFAULT_NEXT_POSITION_COLUMN = "next_position"
DEFAULT_ORIGIN_COLUMN = "origin"
DEFAULT_SYSTEM_MESSAGES_COLUMN = "system_messages"
DEFAULT_PORT = 9042
DEFAULT_CONSISTENCY = "LOCAL_QUORUM"
DEFAULT_SERIAL_CONSISTENCY = "SERIAL"
DEFAULT_FETCH_SIZE = 1000
DEFAULT_INITIALIZE_SCHEMA: SchemaMode = "always"
MAX_TTL = timedelta(seconds=630_720_000)
"""Cassandra's limit on a TTL (20 years)."""

_DC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
_CONSISTENCY = ("ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE")
_SERIAL = ("SERIAL", "LOCAL_SERIAL")


def _factor(value: object, argument: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(argument, f"must be a replication factor >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class SimpleStrategy:
    """``SimpleStrategy`` replication: one factor for the whole cluster (development only)."""

    replication_factor: int = 1

    def __post_init__(self) -> None:
        _factor(self.replication_factor, "replication.replication_factor")

    def options(self) -> dict[str, str]:
        """The ``replication`` map of ``CREATE KEYSPACE``."""
        return {"class": "SimpleStrategy", "replication_factor": str(self.replication_factor)}


@dataclass(frozen=True)
class NetworkTopologyStrategy:
    """``NetworkTopologyStrategy`` replication: a factor per data center, e.g.
    ``NetworkTopologyStrategy({"dc1": 3, "dc2": 3})``."""

    datacenters: Mapping[str, int]

    def __post_init__(self) -> None:
        if not isinstance(self.datacenters, Mapping) or not self.datacenters:
            raise InvalidArgumentError(
                "replication.datacenters", "must map data centers to factors"
            )
        for dc, n in self.datacenters.items():
            if not isinstance(dc, str) or not _DC_NAME.fullmatch(dc):
                raise InvalidIdentifierError(
                    "replication.datacenters", f"{dc!r} is not a data-center name"
                )
            _factor(n, f"replication.datacenters[{dc!r}]")
        object.__setattr__(self, "datacenters", MappingProxyType(dict(self.datacenters)))

    def options(self) -> dict[str, str]:
        """The ``replication`` map of ``CREATE KEYSPACE``."""
        return {
            "class": "NetworkTopologyStrategy",
            **{k: str(v) for k, v in self.datacenters.items()},
        }


Replication = SimpleStrategy | NetworkTopologyStrategy
DEFAULT_REPLICATION = SimpleStrategy(1)


@dataclass(frozen=True, kw_only=True)
class CassandraConfig:
    """Everything ``CassandraChatMemoryRepository`` can be told; validated on construction.

    ``ttl``: the whole conversation expires together once idle this long (every write
    re-applies it); None keeps forever. Whole seconds, rounded up; at most 20 years.
    ``initialize_schema``: ``"always"`` (the default) creates the keyspace (with
    ``replication``) and the table when the driver's metadata lacks them (race-safe);
    ``"never"`` creates nothing and checks once, at first use, that they exist (else
    ``SchemaError``). ``True``/``False`` alias them.
    ``consistency`` / ``serial_consistency``: level names for every statement and for the
    lightweight transactions.
    """

    keyspace: str = DEFAULT_KEYSPACE
    table_name: str = DEFAULT_TABLE_NAME
    conversation_id_column: str = DEFAULT_CONVERSATION_ID_COLUMN
    position_column: str = DEFAULT_POSITION_COLUMN
    message_type_column: str = DEFAULT_MESSAGE_TYPE_COLUMN
    content_column: str = DEFAULT_CONTENT_COLUMN
    created_at_column: str = DEFAULT_CREATED_AT_COLUMN
    next_position_column: str = DEFAULT_NEXT_POSITION_COLUMN
    origin_column: str = DEFAULT_ORIGIN_COLUMN
    system_messages_column: str = DEFAULT_SYSTEM_MESSAGES_COLUMN
    ttl: timedelta | None = None
    initialize_schema: SchemaMode = DEFAULT_INITIALIZE_SCHEMA
    replication: Replication = field(default=DEFAULT_REPLICATION)
    consistency: str = DEFAULT_CONSISTENCY
    serial_consistency: str = DEFAULT_SERIAL_CONSISTENCY
    fetch_size: int = DEFAULT_FETCH_SIZE

    def __post_init__(self) -> None:
        cql_identifier(self.keyspace, "keyspace")
        cql_identifier(self.table_name, "table_name")
        columns = self.columns
        for argument, name in columns.items():
            cql_identifier(name, argument)
        if len({n.lower() for n in columns.values()}) != len(columns):
            raise InvalidIdentifierError("columns", "column names must be distinct")
        validate_ttl(self.ttl, minimum=timedelta(seconds=1), maximum=MAX_TTL)
        object.__setattr__(self, "initialize_schema", schema_mode(self.initialize_schema))
        if not isinstance(self.replication, (SimpleStrategy, NetworkTopologyStrategy)):
            raise InvalidArgumentError(
                "replication", "must be a SimpleStrategy or a NetworkTopologyStrategy"
            )
        if self.consistency not in _CONSISTENCY:
            raise InvalidArgumentError("consistency", f"must be one of {', '.join(_CONSISTENCY)}")
        if self.serial_consistency not in _SERIAL:
            raise InvalidArgumentError("serial_consistency", f"must be one of {', '.join(_SERIAL)}")
        if (
            isinstance(self.fetch_size, bool)
            or not isinstance(self.fetch_size, int)
            or (self.fetch_size < 1)
        ):
            raise InvalidArgumentError("fetch_size", "must be a positive int")

    @property
    def columns(self) -> dict[str, str]:
        """Every column option name and its value."""
        return {
            "conversation_id_column": self.conversation_id_column,
            "position_column": self.position_column,
            "message_type_column": self.message_type_column,
            "content_column": self.content_column,
            "created_at_column": self.created_at_column,
            "next_position_column": self.next_position_column,
            "origin_column": self.origin_column,
            "system_messages_column": self.system_messages_column,
        }

    @property
    def ttl_seconds(self) -> int:
        """The TTL in whole seconds (rounded up); 0, Cassandra's "no TTL", when there is none."""
        return 0 if self.ttl is None else math.ceil(self.ttl.total_seconds())


@dataclass(frozen=True)
class CassandraUrl:
    """``cassandra://[user:password@]host[:port][,host[:port]...][/keyspace][?local_dc=dc]``."""

    contact_points: tuple[str, ...]
    port: int
    keyspace: str | None
    local_dc: str | None
    username: str | None
    password: str | None


def parse_url(url: str) -> CassandraUrl:
    """Parse a ``cassandra://`` URL (one port for every contact point, as the driver has:
    ``h1,h2,h3:9043`` and ``h1:9043,h2:9043`` both name port 9043 for all three)."""
    if not isinstance(url, str):
        raise InvalidArgumentError("url", "must be a str")
    parts = urlsplit(url)
    if parts.scheme != "cassandra":
        raise InvalidArgumentError("url", f"{url!r} is not a cassandra:// URL")
    netloc = parts.netloc
    username = password = None
    if "@" in netloc:
        auth, netloc = netloc.rsplit("@", 1)
        user, _, pwd = auth.partition(":")
        username, password = unquote(user), unquote(pwd)
    hosts: list[str] = []
    ports: set[int] = set()
    for item in filter(None, netloc.split(",")):
        host, sep, port = item.rpartition(":") if not item.endswith("]") else (item, "", "")
        if not sep:
            host, port = item, ""
        if port:  # a host without a port takes the one the others name (h1,h2,h3:9043)
            try:
                ports.add(int(port))
            except ValueError:
                raise InvalidArgumentError("url", f"bad port in {item!r}") from None
        hosts.append(host.strip("[]"))
    if not hosts:
        raise InvalidArgumentError("url", "names no host")
    if len(ports) > 1:
        raise InvalidArgumentError("url", "every contact point must use the same port")
    port_number = ports.pop() if ports else DEFAULT_PORT
    keyspace = parts.path.strip("/") or None
    if keyspace is not None:
        cql_identifier(keyspace, "keyspace")
    query = parse_qs(parts.query)
    unknown = set(query) - {"local_dc", "layout"}  # layout: the repository's
    if unknown:
        raise InvalidArgumentError("url", f"unknown query options: {', '.join(sorted(unknown))}")
    local_dc = query.get("local_dc", [None])[-1]
    return CassandraUrl(tuple(hosts), port_number, keyspace, local_dc, username, password)
