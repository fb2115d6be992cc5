"""Moving conversations in and out of stores: JSON Lines export/import, store-to-store
migration, and counts. Everything streams: ids are paged with ``iter_conversation_ids`` and
one conversation is held at a time, so memory stays bounded by the largest conversation.

Export format, one line per conversation::

    {"conversation_id": "c1", "messages": [{"v": 1, "type": "USER", "text": "hi",
      "created_at": "2024-02-29T12:34:56.789012+00:00"}, ...]}

Each message is core's ``message_to_dict`` plus its ``created_at`` (exact to the microsecond).
Positions are not exported: they are store-assigned, and the list order is the log order.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from ._codec import message_from_dict, message_to_dict
from ._errors import InvalidArgumentError, SchemaError
from ._messages import Message
from ._repository import DEFAULT_PAGE_SIZE, BaseChatMemoryRepository
from ._validation import validate_conversation_id

Progress = Callable[[int], None]


@dataclass(frozen=True)
class MigrationResult:
    """What ``migrate`` did: conversations written, already identical, messages written."""

    copied: int
    unchanged: int
    messages: int

    @property
    def conversations(self) -> int:
        """Every conversation the source holds."""
        return self.copied + self.unchanged


@dataclass(frozen=True)
class StoreStats:
    """Counts over a whole store; ``oldest``/``newest`` are None when it is empty."""

    conversations: int
    messages: int
    oldest: datetime | None
    newest: datetime | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (timestamps in ISO 8601)."""
        return {
            "conversations": self.conversations,
            "messages": self.messages,
            "oldest": self.oldest.isoformat() if self.oldest else None,
            "newest": self.newest.isoformat() if self.newest else None,
        }


def conversation_to_line(conversation_id: str, messages: Iterable[Message]) -> str:
    """One export line (no trailing newline)."""
    encoded = []
    for m in messages:
        d = message_to_dict(m)
        d["created_at"] = m.created_at.isoformat() if m.created_at else None
        encoded.append(d)
    return json.dumps(
        {"conversation_id": conversation_id, "messages": encoded},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def line_to_conversation(line: str, *, where: str = "line") -> tuple[str, list[Message]]:
    """Parse one export line; InvalidArgumentError naming ``where`` when it is malformed."""
    try:
        record = json.loads(line)
        cid = validate_conversation_id(
            record["conversation_id"], argument=f"{where}.conversation_id"
        )
        messages = []
        for d in record["messages"]:
            ts = d.pop("created_at", None)
            created = datetime.fromisoformat(ts) if ts is not None else None
            messages.append(message_from_dict(d, created_at=created))
    except InvalidArgumentError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, SchemaError) as exc:
        raise InvalidArgumentError(where, f"is not a chatmem export line ({exc})") from exc
    return cid, messages


def _ids(
    repo: BaseChatMemoryRepository, ids: Iterable[str] | None, page_size: int
) -> Iterator[str]:
    return iter(ids) if ids is not None else repo.iter_conversation_ids(page_size=page_size)


def export_conversations(
    repo: BaseChatMemoryRepository,
    out: TextIO,
    conversation_ids: Iterable[str] | None = None,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> int:
    """Write one line per conversation (all of them, or ``conversation_ids``); the count.
    A requested id with no messages is written with an empty list."""
    count = 0
    for cid in _ids(repo, conversation_ids, page_size):
        out.write(conversation_to_line(cid, repo.find_by_conversation_id(cid)) + "\n")
        count += 1
    return count


def import_conversations(repo: BaseChatMemoryRepository, lines: Iterable[str]) -> tuple[int, int]:
    """Replace each conversation named in ``lines`` with its exported messages (``save_all``,
    so re-importing is idempotent); ``(conversations, messages)``."""
    conversations = messages = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        cid, msgs = line_to_conversation(line, where=f"line {n}")
        repo.save_all(cid, msgs)
        conversations += 1
        messages += len(msgs)
    return conversations, messages


def _same(a: list[Message], b: list[Message]) -> bool:
    return a == b and [m.created_at for m in a] == [m.created_at for m in b]


def migrate(
    source: BaseChatMemoryRepository,
    target: BaseChatMemoryRepository,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    progress: Progress | None = None,
) -> MigrationResult:
    """Copy every conversation of ``source`` into ``target`` (content and ``created_at``).
    A conversation the target already holds identically is left alone, so a second run
    writes nothing; a differing one is replaced atomically. Conversations only the target
    holds are kept. ``progress(done)`` is called after each conversation."""
    if source is target:
        raise InvalidArgumentError("target", "is the source repository")
    copied = unchanged = written = 0
    for cid in source.iter_conversation_ids(page_size=page_size):
        messages = source.find_by_conversation_id(cid)
        if _same(messages, target.find_by_conversation_id(cid)):
            unchanged += 1
        else:
            target.save_all(cid, messages)
            copied += 1
            written += len(messages)
        if progress is not None:
            progress(copied + unchanged)
    return MigrationResult(copied, unchanged, written)


def count_conversations(
    repo: BaseChatMemoryRepository, *, page_size: int = DEFAULT_PAGE_SIZE
) -> int:
    """How many conversations ``repo`` holds (pages through the ids only)."""
    return sum(1 for _ in repo.iter_conversation_ids(page_size=page_size))


def store_stats(
    repo: BaseChatMemoryRepository, *, page_size: int = DEFAULT_PAGE_SIZE
) -> StoreStats:
    """Conversations, messages and the oldest/newest ``created_at``, over the whole store."""
    conversations = messages = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    for cid in repo.iter_conversation_ids(page_size=page_size):
        log = repo.find_by_conversation_id(cid)
        conversations += 1
        messages += len(log)
        for m in log:
            ts = m.created_at
            if ts is None:
                continue
            oldest = ts if oldest is None or ts < oldest else oldest
            newest = ts if newest is None or ts > newest else newest
    return StoreStats(conversations, messages, oldest, newest)


class ProgressBar:
    """A one-line progress bar on a terminal (nothing when ``stream`` is not a tty)."""

    WIDTH = 30

    def __init__(self, total: int | None, *, stream: TextIO | None = None, label: str = "") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = total
        self.label = label
        self._shown = -1

    def __call__(self, done: int) -> None:
        if not self.enabled:
            return
        if self.total:
            filled = self.WIDTH * done // self.total
            percent = 100 * done // self.total
            if percent == self._shown and done != self.total:
                return
            self._shown = percent
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            text = f"\r{self.label}[{bar}] {done}/{self.total} {percent:3d}%"
        else:
            text = f"\r{self.label}{done}"
        self.stream.write(text)
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
