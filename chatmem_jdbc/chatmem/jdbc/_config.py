"""Options of the SQL repository, with their defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chatmem.core.backend import InvalidArgumentError, sql_identifier

DEFAULT_TABLE_NAME = "ai_chat_memory"
SchemaMode = Literal["embedded", "always", "never"]
DEFAULT_INITIALIZE_SCHEMA: SchemaMode = "embedded"
SCHEMA_MODES = ("embedded", "always", "never")


@dataclass(frozen=True, kw_only=True)
class JdbcConfig:
    """``table_name`` holds messages; ``<table_name>_conversation`` holds one row per
    conversation (its next position, used for locking, counting and listing).

    ``initialize_schema``: ``embedded`` creates tables only on embedded databases (SQLite),
    ``always`` creates them if missing, ``never`` leaves the schema to your migrations.
    """

    table_name: str = DEFAULT_TABLE_NAME
    initialize_schema: SchemaMode = DEFAULT_INITIALIZE_SCHEMA

    def __post_init__(self) -> None:
        sql_identifier(self.table_name, "table_name")
        if len(self.table_name) > 50:
            raise InvalidArgumentError("table_name", "is too long (at most 50 characters)")
        if self.initialize_schema not in SCHEMA_MODES:
            raise InvalidArgumentError(
                "initialize_schema", f"must be one of {', '.join(SCHEMA_MODES)}"
            )

    @property
    def conversation_table_name(self) -> str:
        """The name of the per-conversation table."""
        return f"{self.table_name}_conversation"
