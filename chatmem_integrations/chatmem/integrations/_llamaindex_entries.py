"""The pure half of the LlamaIndex stores: a conversation as (LlamaIndex message, status)
entries, and the index and status rules. No I/O: ``_async/llamaindex_log.py`` (and its
generated sync twin) reads and writes the entries."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store.base_db import MessageStatus

from chatmem.core import InvalidArgumentError, Message

from ._llamaindex_codec import from_llamaindex, split_items, to_llamaindex

__all__ = [
    "STATUS_KEY",
    "Entry",
    "check_count",
    "check_index",
    "check_messages",
    "check_status",
    "entries_of",
    "index_in",
    "messages_of",
    "take_oldest",
]

STATUS_KEY = "llamaindex_status"
"""Metadata key marking a stored message archived by LlamaIndex ``Memory`` (absent: active)."""

Entry = tuple[ChatMessage, MessageStatus]


def entries_of(stored: Sequence[Message]) -> list[Entry]:
    """Stored chatmem messages as LlamaIndex messages with their status (key stripped)."""
    plain: list[Message] = []
    statuses: list[MessageStatus] = []
    for m in stored:
        status = m.metadata.get(STATUS_KEY)
        if STATUS_KEY in m.metadata:
            rest = {k: v for k, v in m.metadata.items() if k != STATUS_KEY}
            m = dataclasses.replace(m, metadata=rest)
        plain.append(m)
        statuses.append(
            MessageStatus.ARCHIVED
            if status == MessageStatus.ARCHIVED.value
            else MessageStatus.ACTIVE
        )
    items = split_items(to_llamaindex(plain, group_tool_responses=False))
    return [(x, s) for item, s in zip(items, statuses, strict=True) for x in item]


def messages_of(entries: Sequence[Entry]) -> list[Message]:
    """Entries back to chatmem messages, archived ones marked under ``STATUS_KEY``."""
    xs = [x for x, _ in entries]
    decoded = from_llamaindex(xs, group_tool_responses=False)
    out: list[Message] = []
    at = 0
    for m, item in zip(decoded, split_items(xs), strict=True):
        if entries[at][1] == MessageStatus.ARCHIVED:
            tagged = {**m.metadata, STATUS_KEY: MessageStatus.ARCHIVED.value}
            m = dataclasses.replace(m, metadata=tagged)
        out.append(m)
        at += len(item)
    return out


def check_index(idx: object) -> int:
    if isinstance(idx, bool) or not isinstance(idx, int):
        raise InvalidArgumentError("idx", "must be an int")
    return idx


def check_count(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidArgumentError("n", f"must be an int >= 0, got {n!r}")
    return n


def index_in(n: int, idx: int) -> int | None:
    """``idx`` as a position in a log of ``n`` (negative counts from the end); None when out
    of range either way."""
    check_index(idx)
    return idx % n if -n <= idx < n else None


def take_oldest(
    entries: Sequence[Entry], n: int, archive: bool
) -> tuple[list[ChatMessage], list[Entry] | None]:
    """The oldest ``n`` active messages, and the entries with them archived (``archive``) or
    removed; None for the entries when nothing changes."""
    check_count(n)
    picked = [i for i, (_, s) in enumerate(entries) if s == MessageStatus.ACTIVE][:n]
    if not picked:
        return [], None
    taken = [entries[i][0] for i in picked]
    if archive:
        chosen = set(picked)
        kept = [
            (x, MessageStatus.ARCHIVED if i in chosen else s) for i, (x, s) in enumerate(entries)
        ]
    else:
        gone = set(picked)
        kept = [e for i, e in enumerate(entries) if i not in gone]
    return taken, kept


def check_status(value: object, argument: str = "status") -> MessageStatus:
    try:
        return MessageStatus(value)
    except ValueError:
        raise InvalidArgumentError(argument, f"must be a MessageStatus, got {value!r}") from None


def check_messages(messages: object) -> list[ChatMessage]:
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise InvalidArgumentError("messages", "must be a list of ChatMessage")
    for i, x in enumerate(messages):
        if not isinstance(x, ChatMessage):
            raise InvalidArgumentError(f"messages[{i}]", f"is a {type(x).__name__}")
    return list(messages)
