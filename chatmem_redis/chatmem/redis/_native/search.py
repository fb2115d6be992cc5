"""Advanced queries over the RediSearch index: the result and the query builders (the
protocol is in ``_async/advanced``).

Pure functions only (no I/O): the repository runs what these build. Every caller value is
validated, then escaped for its field type by ``query``; nothing is spliced raw except in
``execute_query``, whose argument is a RediSearch query by definition (it runs read-only,
against this repository's index only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chatmem.core import InvalidArgumentError, Message, MessageType
from chatmem.core.backend import to_micros

from .._codec import numeric_value, parse_entry, tag_value
from .._config import MetadataField, MetadataFieldType
from .._schema import CONTENT, CONVERSATION_KEY, CREATED_AT, MESSAGE_TYPE, conversation_tag
from .._schema import metadata_attribute as _meta_attr
from .query import numeric_range, tag_query, text_query


@dataclass(frozen=True)
class MessageWithConversation:
    """One search hit: the conversation it belongs to, the message, and its timestamp."""

    conversation_id: str
    message: Message
    created_at: datetime


Check = Callable[[str, Message], bool]


@dataclass(frozen=True)
class Search:
    """A query plus the exact client-side check every hit must also pass."""

    query: str
    check: Check | None = None


def _always(_cid: str, _m: Message) -> bool:
    return True


def in_conversation(search: Search, cid: str | None) -> Search:
    """Narrow ``search`` to one conversation (hex TAG: exact, case-sensitive)."""
    if cid is None:
        return search
    inner = search.check or _always
    return Search(
        f"{tag_query(CONVERSATION_KEY, conversation_tag(cid))} {search.query}",
        lambda c, m: c == cid and inner(c, m),
    )


def by_type(message_type: object) -> Search:
    try:
        kind = MessageType(message_type)
    except ValueError:
        names = ", ".join(t.value for t in MessageType)
        raise InvalidArgumentError("message_type", f"must be one of {names}") from None
    return Search(tag_query(MESSAGE_TYPE, kind.value), lambda _c, m: m.message_type is kind)


def by_content(text: object) -> Search | None:
    """None when ``text`` has no searchable word (the search then finds nothing)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("text", "must be a non-empty str")
    query = text_query(CONTENT, text)
    return None if query is None else Search(query)


def _micros(value: object, argument: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidArgumentError(argument, "must be a timezone-aware datetime or None")
    return to_micros(value)


def by_time_range(start: object, end: object) -> Search:
    low, high = _micros(start, "start"), _micros(end, "end")
    if low is not None and high is not None and low > high:
        raise InvalidArgumentError("end", "must not be before start")
    lo = "-inf" if low is None else str(low)
    hi = "+inf" if high is None else str(high)
    return Search(f"@{CREATED_AT}:[{lo} {hi}]")


def by_metadata(field: MetadataField, value: object) -> Search | None:
    """None when ``value`` can have no match (for example a str under a text field with
    no word in it)."""
    attribute = _meta_attr(field.name)
    if field.type is MetadataFieldType.TAG:
        tag = tag_value(value)
        if tag is None:
            raise InvalidArgumentError("value", "a tag field matches a non-empty str, bool or int")
        return Search(
            tag_query(attribute, tag),
            lambda _c, m: tag_value(m.metadata.get(field.name)) == tag,
        )
    if field.type is MetadataFieldType.NUMERIC:
        number = numeric_value(value)
        if number is None:
            raise InvalidArgumentError("value", "a numeric field matches a finite int or float")
        return Search(
            numeric_range(attribute, number, number),
            lambda _c, m: numeric_value(m.metadata.get(field.name)) == number,
        )
    if not isinstance(value, str):
        raise InvalidArgumentError("value", "a text field matches a str")
    query = text_query(attribute, value)
    return None if query is None else Search(query)


def search_args(index: str, query: str, limit: int) -> list[str]:
    """FT.SEARCH arguments (after the command name): oldest first, at most ``limit``, keys
    only (the messages come from the conversations' logs)."""
    return [
        index, query, "NOCONTENT", "SORTBY", CREATED_AT, "ASC", "LIMIT", "0", str(limit),
        "DIALECT", "2",
    ]  # fmt: skip


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def parse_reply(reply: Sequence[Any], check: Check | None) -> list[MessageWithConversation]:
    """Hits of the search script's reply ``[tag, entry, tag, entry, ...]`` (tag = ``{H}``)."""
    hits: list[MessageWithConversation] = []
    for i in range(0, len(reply) - 1, 2):
        cid = bytes.fromhex(_text(reply[i])[1:-1]).decode("utf-8")
        message = parse_entry(reply[i + 1])
        if check is None or check(cid, message):
            assert message.created_at is not None
            hits.append(MessageWithConversation(cid, message, message.created_at))
    # ties on created_at: keep each conversation's own order
    hits.sort(key=lambda h: (h.created_at, h.conversation_id, h.message.position or 0))
    return hits
