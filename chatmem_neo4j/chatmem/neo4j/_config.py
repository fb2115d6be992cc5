"""Options of the Neo4j repository, with their defaults (labels follow Spring AI's)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import NamedTuple
from urllib.parse import unquote, urlsplit, urlunsplit

from chatmem.core import SchemaMode
from chatmem.core.backend import InvalidArgumentError, cypher_label, schema_mode

DEFAULT_DATABASE: str | None = None
"""None: the server's default (home) database."""
DEFAULT_SESSION_LABEL = "Session"
DEFAULT_MESSAGE_LABEL = "Message"
DEFAULT_METADATA_LABEL = "Metadata"
DEFAULT_TOOL_CALL_LABEL = "ToolCall"
DEFAULT_TOOL_RESPONSE_LABEL = "ToolResponse"
DEFAULT_MEDIA_LABEL = "Media"
DEFAULT_INITIALIZE_SCHEMA: SchemaMode = "always"

LABEL_OPTIONS = (
    "session_label",
    "message_label",
    "metadata_label",
    "tool_call_label",
    "tool_response_label",
    "media_label",
)


@dataclass(frozen=True, kw_only=True)
class Neo4jConfig:
    """Where and how conversations are stored.

    Every ``*_label`` must match ``[A-Za-z_][A-Za-z0-9_]*`` and differ from the others;
    a bad one raises ``InvalidIdentifierError`` naming the option, before any I/O.
    ``initialize_schema``: ``"always"`` (the default) creates the uniqueness constraint on the
    session's ``conversation_id`` and the message index when missing (``IF NOT EXISTS``,
    race-safe); without the constraint concurrent ``MERGE``s can create duplicate sessions.
    ``"never"`` creates nothing and checks once, at first use, that both exist (else
    ``SchemaError``); ``schema_statements()`` gives the DDL. ``True``/``False`` alias them.
    """

    database: str | None = DEFAULT_DATABASE
    session_label: str = DEFAULT_SESSION_LABEL
    message_label: str = DEFAULT_MESSAGE_LABEL
    metadata_label: str = DEFAULT_METADATA_LABEL
    tool_call_label: str = DEFAULT_TOOL_CALL_LABEL
    tool_response_label: str = DEFAULT_TOOL_RESPONSE_LABEL
    media_label: str = DEFAULT_MEDIA_LABEL
    initialize_schema: SchemaMode = DEFAULT_INITIALIZE_SCHEMA

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for option in LABEL_OPTIONS:
            label = cypher_label(getattr(self, option), option)
            if label in seen:
                raise InvalidArgumentError(
                    option, f"{label!r} is already the {seen[label]}; labels must differ"
                )
            seen[label] = option
        if self.database is not None and (not isinstance(self.database, str) or not self.database):
            raise InvalidArgumentError("database", "must be a non-empty str or None")
        object.__setattr__(self, "initialize_schema", schema_mode(self.initialize_schema))

    @classmethod
    def from_options(cls, options: dict[str, object]) -> Neo4jConfig:
        """Build from keyword options, rejecting unknown names with a clear error."""
        known = {f.name for f in fields(cls)}
        for name in options:
            if name not in known:
                raise InvalidArgumentError(
                    name, f"is not a Neo4j option (known: {', '.join(sorted(known))})"
                )
        return cls(**options)  # type: ignore[arg-type]


URL_SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")


class Neo4jUrl(NamedTuple):
    """A connection URL split into what ``neo4j.GraphDatabase.driver`` takes."""

    uri: str
    user: str | None
    password: str | None


def parse_url(url: object) -> Neo4jUrl:
    """``neo4j://user:pass@host:7687`` -> the URI without credentials, and the
    (percent-decoded) credentials; any other shape is an error naming ``url``."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme.lower() not in URL_SCHEMES or not parts.hostname:
        raise InvalidArgumentError(
            "url", f"{url!r} is not a Neo4j URL like neo4j://user:pass@host:7687"
        )
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    uri = urlunsplit((parts.scheme, netloc, "", parts.query, ""))
    if parts.username is None:
        return Neo4jUrl(uri, None, None)
    return Neo4jUrl(uri, unquote(parts.username), unquote(parts.password or ""))
