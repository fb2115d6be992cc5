"""Options of the SQL repository, with their defaults."""

from __future__ import annotations

from dataclasses import dataclass

from chatmem.core import SchemaMode
from chatmem.core.backend import InvalidArgumentError, schema_mode, sql_identifier

DEFAULT_TABLE_NAME = "ai_chat_memory"
DEFAULT_INITIALIZE_SCHEMA: SchemaMode = "always"
SCHEMA_MODES = ("always", "never", "embedded")


@dataclass(frozen=True, kw_only=True)
class JdbcConfig:
    """``table_name`` holds messages; ``<table_name>_conversation`` holds one row per
    conversation (its next position, used for locking, counting and listing).

    ``initialize_schema``: ``"always"`` (the default) creates the tables and index if missing
    (race-safe); ``"never"`` leaves the schema to your migrations and checks at first use that
    it exists (else ``SchemaError``); ``"embedded"`` is always on SQLite, never on servers.
    ``True``/``False`` mean always/never.
    """

    table_name: str = DEFAULT_TABLE_NAME
    initialize_schema: SchemaMode = DEFAULT_INITIALIZE_SCHEMA

    def __post_init__(self) -> None:
        sql_identifier(self.table_name, "table_name")
        if len(self.table_name) > 50:
            raise InvalidArgumentError("table_name", "is too long (at most 50 characters)")
        object.__setattr__(
            self, "initialize_schema", schema_mode(self.initialize_schema, SCHEMA_MODES)
        )

    @property
    def conversation_table_name(self) -> str:
        """The name of the per-conversation table."""
        return f"{self.table_name}_conversation"
