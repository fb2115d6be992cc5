"""Argument and identifier validation, done once, before any I/O.

Every identifier kind a store splices into a statement has one rule here; values are never
spliced, they are bound as parameters or escaped by the store module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import timedelta

from ._errors import InvalidArgumentError, InvalidIdentifierError
from ._messages import MESSAGE_CLASSES, Message, check_text

MAX_CONVERSATION_ID_LENGTH = 255
"""Every backend accepts ids up to this many characters; longer ids are rejected up front."""

_SQL_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_CQL_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,47}")
_CYPHER_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY_PREFIX = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")
_INDEX_NAME = re.compile(r"[A-Za-z0-9_\-]{1,64}")
# MongoDB allows more, but a name we never have to quote or explain: letters, digits, _ . -;
# no "$", no NUL, short enough for any namespace limit.
_COLLECTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,119}")


def validate_conversation_id(
    conversation_id: object,
    *,
    argument: str = "conversation_id",
    max_length: int = MAX_CONVERSATION_ID_LENGTH,
) -> str:
    """Return the id unchanged, or raise naming ``argument`` (None, empty, non-str, too long)."""
    if conversation_id is None:
        raise InvalidArgumentError(argument, "must not be None")
    if not isinstance(conversation_id, str):
        raise InvalidArgumentError(argument, f"must be a str, got {type(conversation_id).__name__}")
    if not conversation_id:
        raise InvalidArgumentError(argument, "must not be empty")
    if len(conversation_id) > max_length:
        raise InvalidArgumentError(
            argument, f"is {len(conversation_id)} characters; the limit is {max_length}"
        )
    return check_text(argument, conversation_id)


def validate_messages(messages: object, *, argument: str = "messages") -> list[Message]:
    """Return a list copy of ``messages``, or raise if it or any element is not a message."""
    if messages is None:
        raise InvalidArgumentError(argument, "must not be None")
    if isinstance(messages, MESSAGE_CLASSES):
        return [messages]  # type: ignore[list-item]
    if isinstance(messages, (str, bytes)) or not isinstance(messages, (Sequence, Iterable)):
        raise InvalidArgumentError(argument, "must be a message or a sequence of messages")
    out: list[Message] = []
    for i, m in enumerate(messages):
        if m is None:
            raise InvalidArgumentError(f"{argument}[{i}]", "must not be None")
        if not isinstance(m, MESSAGE_CLASSES):
            raise InvalidArgumentError(
                f"{argument}[{i}]", f"is a {type(m).__name__}, not a chatmem message"
            )
        out.append(m)  # type: ignore[arg-type]
    return out


def validate_positive_int(value: object, argument: str) -> int:
    """An int > 0 (bool rejected), else an InvalidArgumentError naming ``argument``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(argument, f"must be an int, got {type(value).__name__}")
    if value <= 0:
        raise InvalidArgumentError(argument, f"must be positive, got {value}")
    return value


def _check(pattern: re.Pattern[str], value: object, argument: str, rule: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise InvalidIdentifierError(argument, f"{value!r} is not a valid name ({rule})")
    return value


def sql_identifier(value: object, argument: str = "table_name") -> str:
    """A SQL table/column/index name: ``[A-Za-z_][A-Za-z0-9_]*``, at most 63 characters."""
    return _check(_SQL_IDENTIFIER, value, argument, "letters, digits, _; at most 63")


def cql_identifier(value: object, argument: str = "table_name") -> str:
    """A CQL keyspace/table/column name: a letter then letters, digits, _; at most 48."""
    return _check(_CQL_IDENTIFIER, value, argument, "a letter, then letters, digits, _; at most 48")


def cypher_label(value: object, argument: str = "label") -> str:
    """A Neo4j label: ``[A-Za-z_][A-Za-z0-9_]*``."""
    return _check(_CYPHER_LABEL, value, argument, "[A-Za-z_][A-Za-z0-9_]*")


def redis_key_prefix(value: object, argument: str = "key_prefix") -> str:
    """A Redis key prefix: letters, digits and ``_ . : -``, 1 to 64 characters."""
    return _check(_KEY_PREFIX, value, argument, "letters, digits, _ . : -; 1 to 64")


def index_name(value: object, argument: str = "index_name") -> str:
    """A search index name: letters, digits, ``_`` and ``-``, 1 to 64 characters."""
    return _check(_INDEX_NAME, value, argument, "letters, digits, _ -; 1 to 64")


def collection_name(value: object, argument: str = "collection_name") -> str:
    """A MongoDB collection name: ``[A-Za-z_][A-Za-z0-9_.-]*``, at most 120 characters, no
    empty dotted part, not in the reserved ``system.`` namespace."""
    rule = "a letter or _, then letters, digits, _ . -; at most 120; not system.*"
    name = _check(_COLLECTION_NAME, value, argument, rule)
    if name.startswith("system.") or name.endswith(".") or ".." in name:
        raise InvalidIdentifierError(argument, f"{value!r} is not a valid name ({rule})")
    return name


def validate_ttl(
    value: object,
    *,
    minimum: timedelta = timedelta(microseconds=1),
    maximum: timedelta | None = None,
    argument: str = "ttl",
) -> timedelta | None:
    """A time-to-live: None (keep forever) or a ``timedelta`` from ``minimum`` to ``maximum``
    (the store's own bounds: its clock resolution and its largest expiry)."""
    if value is None:
        return None
    if not isinstance(value, timedelta):
        raise InvalidArgumentError(
            argument, f"must be a timedelta or None, got {type(value).__name__}"
        )
    if value < minimum:
        raise InvalidArgumentError(argument, f"must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidArgumentError(argument, f"must be at most {maximum}, got {value}")
    return value
