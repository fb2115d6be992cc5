"""Options of the SQL repository, with their defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from chatmem.core import SchemaMode
from chatmem.core.backend import InvalidArgumentError, schema_mode, sql_identifier

DEFAULT_TABLE_NAME = "ai_chat_memory"
DEFAULT_INITIALIZE_SCHEMA: SchemaMode = "always"
SCHEMA_MODES = ("always", "never", "embedded")
LAYOUTS = ("chatmem", "spring-ai")
"""Table layouts: chatmem's own, or Spring AI's ``SPRING_AI_CHAT_MEMORY`` (``spring_ai``)."""


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


def without_layout(url: str) -> str:
    """``url`` without chatmem's own ``layout`` query parameter (the driver would reject it)."""
    parsed = sa.engine.make_url(url)
    return parsed.difference_update_query(["layout"]).render_as_string(hide_password=False)


def layout_of(url: str, options: dict[str, Any]) -> str:
    """The layout a ``from_url`` call asks for: the ``layout`` option, else the URL's
    ``layout`` query parameter, else ``"chatmem"``."""
    layout = options.get("layout")
    if layout is None:
        layout = sa.engine.make_url(url).query.get("layout", "chatmem")
    if layout not in LAYOUTS:
        raise InvalidArgumentError("layout", f"must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    return str(layout)
