"""The Spring AI layout's pure parts on Cassandra: the names, DDL and statements of Spring AI's
``CassandraChatMemoryRepository`` (1.1 and 2.0 share them), its options, and its rows encoded
and decoded (the repository is ``_async/spring_ai.py``).

Spring's shape: keyspace ``springframework``, table ``ai_chat_memory`` with partition key
``session_id text`` and clustering key ``message_timestamp timestamp`` (newest first), and
one column ``messages frozen<list<frozen<ai_chat_message>>>`` whose user type holds
``msg_timestamp timestamp, msg_type text, msg_content text``. Every ``saveAll`` inserts a new
row holding the whole conversation; a read takes the newest row (``LIMIT 1``), so past rows
stay as a time series until the table's TTL expires them.
"""

# ruff: noqa: S608
# The CQL below is built from validated CQL identifiers, never from user text.

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs, urlsplit

from chatmem.core import AssistantMessage, Message, SchemaMode, SystemMessage, UserMessage
from chatmem.core.backend import (
    InvalidArgumentError,
    cql_identifier,
    schema_mode,
    validate_ttl,
)

from .._config import (
    _CONSISTENCY,
    _SERIAL,
    DEFAULT_CONSISTENCY,
    DEFAULT_SERIAL_CONSISTENCY,
    MAX_TTL,
)

SPRING_AI_KEYSPACE = "springframework"
"""Spring's ``CassandraChatMemoryRepositoryConfig.DEFAULT_KEYSPACE_NAME``."""
SPRING_AI_TABLE_NAME = "ai_chat_memory"
"""Spring's ``DEFAULT_TABLE_NAME``."""
SPRING_AI_MESSAGES_COLUMN = "messages"
"""Spring's ``DEFAULT_MESSAGES_COLUMN_NAME`` (the other names are fixed in Spring)."""
SPRING_AI_INITIALIZE_SCHEMA: SchemaMode = "always"
"""Spring Boot's ``spring.ai.chat.memory.repository.cassandra.initialize-schema`` (true)."""
SESSION_ID, EXCHANGE_TS, MESSAGE_TYPE = "session_id", "message_timestamp", "ai_chat_message"
LAYOUTS = ("chatmem", "spring-ai")
FIRST_SLOT = datetime(1970, 1, 1, tzinfo=timezone.utc)
"""Where chatmem writes the first row of an empty conversation (see ``next_slot``)."""
STEP = timedelta(milliseconds=1)

SpringMessage = namedtuple("SpringMessage", ["msg_timestamp", "msg_type", "msg_content"])
"""One ``ai_chat_message`` value (the driver binds it by field name)."""
TYPES = {"USER": UserMessage, "ASSISTANT": AssistantMessage, "SYSTEM": SystemMessage}


@dataclass(frozen=True, kw_only=True)
class SpringAiCassandraConfig:
    """The options of the Spring AI layout, validated on construction (Spring's defaults).

    ``ttl``: the table's ``default_time_to_live`` when chatmem creates it (Spring's
    ``time-to-live``); None keeps rows forever. ``initialize_schema``: ``"always"`` creates
    Spring's keyspace (``SimpleStrategy``, factor 1, as Spring does), type and table when
    missing; ``"never"`` checks at first use that they exist.
    """

    keyspace: str = SPRING_AI_KEYSPACE
    table_name: str = SPRING_AI_TABLE_NAME
    messages_column: str = SPRING_AI_MESSAGES_COLUMN
    ttl: timedelta | None = None
    initialize_schema: SchemaMode = SPRING_AI_INITIALIZE_SCHEMA
    consistency: str = DEFAULT_CONSISTENCY
    serial_consistency: str = DEFAULT_SERIAL_CONSISTENCY

    def __post_init__(self) -> None:
        for argument in ("keyspace", "table_name", "messages_column"):
            cql_identifier(getattr(self, argument), argument)
        if self.messages_column.lower() in (SESSION_ID, EXCHANGE_TS):
            raise InvalidArgumentError("messages_column", "must differ from the key columns")
        validate_ttl(self.ttl, minimum=timedelta(seconds=1), maximum=MAX_TTL)
        object.__setattr__(self, "initialize_schema", schema_mode(self.initialize_schema))
        if self.consistency not in _CONSISTENCY:
            raise InvalidArgumentError("consistency", f"must be one of {', '.join(_CONSISTENCY)}")
        if self.serial_consistency not in _SERIAL:
            raise InvalidArgumentError("serial_consistency", f"must be one of {', '.join(_SERIAL)}")

    @property
    def table(self) -> str:
        return f"{self.keyspace}.{self.table_name}"


def layout_of(url: str, options: dict[str, Any]) -> str:
    """The layout a ``from_url`` call asks for: the ``layout`` option, else the URL's
    ``layout`` query parameter, else ``"chatmem"``."""
    layout = options.get("layout")
    if layout is None:
        layout = parse_qs(urlsplit(url).query).get("layout", ["chatmem"])[-1]
    if layout not in LAYOUTS:
        raise InvalidArgumentError("layout", f"must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    return str(layout)


def spring_ai_schema(config: SpringAiCassandraConfig) -> list[str]:
    """Spring's DDL (what ``CassandraChatMemoryRepositoryConfig.ensureSchemaExists`` runs)."""
    ks, c = config.keyspace, config
    ttl = "" if c.ttl is None else f" AND default_time_to_live = {int(c.ttl.total_seconds())}"
    return [
        f"CREATE KEYSPACE IF NOT EXISTS {ks}"
        " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        f"CREATE TYPE IF NOT EXISTS {ks}.{MESSAGE_TYPE}"
        " (msg_timestamp timestamp, msg_type text, msg_content text)",
        f"CREATE TABLE IF NOT EXISTS {c.table} ({SESSION_ID} text, {EXCHANGE_TS} timestamp,"
        f" {c.messages_column} frozen<list<frozen<{MESSAGE_TYPE}>>>,"
        f" PRIMARY KEY ({SESSION_ID}, {EXCHANGE_TS}))"
        f" WITH CLUSTERING ORDER BY ({EXCHANGE_TS} DESC)"
        f" AND compaction = {{'class': 'UnifiedCompactionStrategy'}}{ttl}",
    ]


def statements(config: SpringAiCassandraConfig) -> dict[str, str]:
    """The layout's CQL by name (prepared once each)."""
    t, m = config.table, config.messages_column
    ids = f"SELECT DISTINCT {SESSION_ID}, token({SESSION_ID}) FROM {t}"
    return {
        "latest": f"SELECT {EXCHANGE_TS}, {m} FROM {t} WHERE {SESSION_ID} = ? LIMIT 1",
        "at": f"SELECT {m} FROM {t} WHERE {SESSION_ID} = ? AND {EXCHANGE_TS} = ?",
        "insert": f"INSERT INTO {t} ({SESSION_ID}, {EXCHANGE_TS}, {m}) VALUES (?, ?, ?)"
        " IF NOT EXISTS",
        "ids_first": f"{ids} LIMIT ?",
        "ids_from": f"{ids} WHERE token({SESSION_ID}) >= ? LIMIT ?",
    }


def next_slot(latest: datetime | None) -> datetime:
    """The clustering key of the row after ``latest``: one millisecond later (the first row
    at ``FIRST_SLOT``). It depends on the stored state only, never on a clock, so every
    chatmem writer that read the same newest row inserts at the same key and the
    ``IF NOT EXISTS`` lets exactly one of them win; a loser re-reads and retries."""
    if latest is None:
        return FIRST_SLOT
    return utc(latest) + STEP


def utc(ts: datetime) -> datetime:
    """The driver's naive UTC timestamps as aware datetimes."""
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts


def encode(messages: Sequence[Message]) -> list[SpringMessage]:
    """Messages as ``ai_chat_message`` values (timestamps keep whole milliseconds)."""
    return [
        SpringMessage(
            m.created_at or datetime.now(timezone.utc), m.message_type.value.upper(), m.text
        )
        for m in messages
    ]


def decode(raw: Sequence[Any]) -> list[Message]:
    """Stored values as messages, positioned by their index in the stored list; TOOL values
    are skipped, as Spring 2.0's reader skips them."""
    out: list[Message] = []
    for i, udt in enumerate(raw):
        cls = TYPES.get(udt.msg_type)
        if cls is None:
            continue
        created = utc(udt.msg_timestamp) if udt.msg_timestamp is not None else None
        out.append(cls(udt.msg_content or "").with_store_fields(created_at=created, position=i))
    return out


def same(stored: Sequence[Any] | None, written: Sequence[SpringMessage]) -> bool:
    """Whether ``stored`` (read back) is the list ``written`` (to settle an unknown write)."""
    ms = STEP // timedelta(microseconds=1)

    def norm(ts: datetime | None) -> int | None:
        if ts is None:
            return None
        return int(utc(ts).timestamp() * 1_000_000) // ms

    def key(values: Sequence[Any]) -> list[tuple[Any, ...]]:
        return [(norm(v.msg_timestamp), v.msg_type, v.msg_content or "") for v in values]

    return key(stored or ()) == key(written)
