"""What the review API adds to a record store for a reviewer working through volume: text and
confidence filters over the store's own paging, bulk decisions, and the chat messages a
memory came from. Pure logic over awaitable store calls, so the API serves sync stores (on
its thread pool) and async stores (on the loop) with one code path.

Filtering by text or confidence reads the store's pages in order and keeps the matches; one
request reads at most ``scan_limit`` records, then answers with what it found and a cursor
after the last record it read, so a request stays bounded however rare the matches are and
paging never skips or repeats a record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import Message

from . import _rules as rules
from ._model import MemoryRecord, MemoryRecordPage

DEFAULT_SCAN_LIMIT = 2000
"""Records one filtered listing request reads at most (about one store round trip per
``MAX_PAGE_SIZE`` of them)."""
MAX_QUERY_LENGTH = 200
MAX_BULK = 500
"""Records one bulk request may decide: the page shows at most this many at once."""
DEFAULT_AROUND = 3
MAX_AROUND = 20
BULK_ACTIONS = ("approve", "reject", "delete")

Find = Callable[..., Awaitable[MemoryRecordPage]]


@dataclass(frozen=True, slots=True)
class TextFilter:
    """A listing's filters beyond the store's own: a case-insensitive substring of the
    content (any language: compared casefolded) and a confidence range, both inclusive."""

    text: str | None = None
    min_confidence: float | None = None
    max_confidence: float | None = None

    @property
    def active(self) -> bool:
        return not (
            self.text is None and self.min_confidence is None and self.max_confidence is None
        )

    def matches(self, record: MemoryRecord) -> bool:
        if self.max_confidence is not None and record.confidence > self.max_confidence:
            return False
        return rules.matches_search(record, self.text, self.min_confidence)


def text_filter(
    text: object = None, min_confidence: object = None, max_confidence: object = None
) -> TextFilter:
    """Validated filters; blank text means no text filter."""
    needle: str | None = None
    if text is not None:
        if not isinstance(text, str):
            raise InvalidArgumentError("q", "must be a str")
        if len(text) > MAX_QUERY_LENGTH:
            raise InvalidArgumentError("q", f"must be at most {MAX_QUERY_LENGTH} characters")
        needle = " ".join(text.split()).casefold() or None
    low = (
        None
        if min_confidence is None
        else rules.validate_confidence(min_confidence, "min_confidence")
    )
    high = (
        None
        if max_confidence is None
        else rules.validate_confidence(max_confidence, "max_confidence")
    )
    if low is not None and high is not None and low > high:
        raise InvalidArgumentError("min_confidence", "must not be above max_confidence")
    return TextFilter(needle, low, high)


async def filtered_page(
    find: Find,
    wanted: TextFilter,
    *,
    limit: int,
    cursor: str | None,
    scan_limit: int = DEFAULT_SCAN_LIMIT,
) -> tuple[MemoryRecordPage, int]:
    """Up to ``limit`` records passing ``wanted``, read from ``find`` (the store's listing
    with its own filters bound) from ``cursor`` on; and how many records were read."""
    size = rules.validate_limit(limit)
    if not wanted.active:
        return await find(limit=size, cursor=cursor), 0
    found: list[MemoryRecord] = []
    scanned = 0
    after = cursor
    while True:
        chunk = min(rules.MAX_PAGE_SIZE, scan_limit - scanned)
        page = await find(limit=chunk, cursor=after)
        for index, record in enumerate(page.records):
            scanned += 1
            if wanted.matches(record):
                found.append(record)
                if len(found) == size:
                    last = index == len(page.records) - 1 and page.next_cursor is None
                    return MemoryRecordPage(
                        found, None if last else rules.encode_cursor(record)
                    ), scanned
        if page.next_cursor is None:
            return MemoryRecordPage(found, None), scanned
        after = page.next_cursor
        if scanned >= scan_limit:
            # Bounded: the caller asks again from here ("next_cursor" with fewer items).
            return MemoryRecordPage(found, after), scanned


@dataclass(frozen=True, slots=True)
class BulkRequest:
    """A validated bulk decision: every id checked before any record is touched."""

    action: str
    ids: tuple[str, ...]
    reviewer: str | None
    reason: str | None


def bulk_request(body: object) -> BulkRequest:
    """Parse ``{"action", "ids", "reviewer"?, "reason"?}``; errors name the field."""
    if not isinstance(body, dict):
        raise InvalidArgumentError("body", "must be a JSON object")
    unknown = set(body) - {"action", "ids", "reviewer", "reason"}
    if unknown:
        raise InvalidArgumentError("body", f"unknown fields {sorted(unknown)}")
    action = body.get("action")
    if action not in BULK_ACTIONS:
        raise InvalidArgumentError("action", f"must be one of {', '.join(BULK_ACTIONS)}")
    ids = body.get("ids")
    if not isinstance(ids, list) or not ids:
        raise InvalidArgumentError("ids", "must be a non-empty list of record ids")
    if len(ids) > MAX_BULK:
        raise InvalidArgumentError("ids", f"must hold at most {MAX_BULK} ids")
    checked = tuple(rules.validate_record_id(rid, f"ids[{i}]") for i, rid in enumerate(ids))
    if len(set(checked)) != len(checked):
        raise InvalidArgumentError("ids", "must not repeat an id")
    reviewer = rules.validate_review_text(body.get("reviewer"), "reviewer")
    reason = rules.validate_review_text(body.get("reason"), "reason")
    if action == "delete" and (reviewer is not None or reason is not None):
        raise InvalidArgumentError("reviewer", "a delete takes no reviewer or reason")
    return BulkRequest(str(action), checked, reviewer, reason)


def validate_around(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_AROUND:
        raise InvalidArgumentError("around", f"must be an int from 0 to {MAX_AROUND}")
    return value


def source_context(
    record: MemoryRecord, messages: Sequence[Message], around: int
) -> dict[str, Any]:
    """The message a memory came from and ``around`` messages each side of it, as JSON.
    The source is found by its stored position, else by its index in the log; when
    neither is in the log any more (trimmed or replaced), ``source`` is None."""
    source: int | None = None
    wanted = record.message_position
    if wanted is not None:
        for index, message in enumerate(messages):
            if message.position == wanted:
                source = index
                break
        else:
            if all(m.position is None for m in messages) and 0 <= wanted < len(messages):
                source = wanted
    if source is None:
        shown: Sequence[Message] = messages[-(2 * around + 1) :] if around else []
        first = len(messages) - len(shown)
    else:
        first = max(0, source - around)
        shown = messages[first : source + around + 1]
    return {
        "conversation_id": record.conversation_id,
        "source": source,
        "total": len(messages),
        "messages": [
            {
                "index": first + offset,
                "position": m.position,
                "type": m.message_type.value,
                "text": _shown_text(m),
                "is_source": first + offset == source,
            }
            for offset, m in enumerate(shown)
        ],
    }


MAX_SHOWN_TEXT = 4000


def _shown_text(message: Message) -> str:
    text = getattr(message, "text", None) or ""
    return text if len(text) <= MAX_SHOWN_TEXT else text[:MAX_SHOWN_TEXT] + "…"
