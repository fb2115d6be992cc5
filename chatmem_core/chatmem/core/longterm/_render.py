"""Rendering approved memories into the system prompt (pure): grouped by type, capped in
count and length, through a template the application can replace."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import Message, SystemMessage

from ._model import MemoryRecord, MemoryStatus, MemoryType

DEFAULT_TEMPLATE = (
    "What you know about this user from earlier conversations (reviewed and approved):\n{memories}"
)
DEFAULT_MAX_RECORDS = 20
DEFAULT_MAX_CHARS = 2000
HEADINGS = {
    MemoryType.PREFERENCE: "Preferences",
    MemoryType.FACT: "Facts",
    MemoryType.CONTEXT: "Context",
}
Template = str | Callable[[dict[MemoryType, list[MemoryRecord]]], str]


def select(
    records: Sequence[MemoryRecord], *, max_records: int, max_chars: int
) -> dict[MemoryType, list[MemoryRecord]]:
    """Approved records only, by type (preference, fact, context), highest confidence
    first, until ``max_records`` are taken or their text would pass ``max_chars``."""
    approved = [r for r in records if r.status is MemoryStatus.APPROVED]
    ranked = sorted(
        approved,
        key=lambda r: (list(MemoryType).index(r.memory_type), -r.confidence, r.created_at),
    )
    grouped: dict[MemoryType, list[MemoryRecord]] = {}
    taken = used = 0
    for r in ranked:
        if taken >= max_records or used + len(r.content) > max_chars:
            continue
        grouped.setdefault(r.memory_type, []).append(r)
        taken += 1
        used += len(r.content)
    return grouped


def render(
    records: Sequence[MemoryRecord],
    *,
    template: Template = DEFAULT_TEMPLATE,
    max_records: int = DEFAULT_MAX_RECORDS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str | None:
    """The text to add to the system prompt, or None when there is nothing approved.

    A str template gets ``{memories}``: one heading per type and a bullet per memory. A
    callable template gets the selected records by type and returns the text itself."""
    grouped = select(records, max_records=max_records, max_chars=max_chars)
    if not grouped:
        return None
    if callable(template):
        return template(grouped)
    if "{memories}" not in template:
        raise InvalidArgumentError("template", "must contain {memories}")
    blocks = []
    for memory_type in MemoryType:
        if memory_type in grouped:
            lines = "\n".join(f"- {r.content}" for r in grouped[memory_type])
            blocks.append(f"{HEADINGS[memory_type]}:\n{lines}")
    return template.replace("{memories}", "\n".join(blocks))


def inject(prompt: Sequence[Message], block: str | None) -> list[Message]:
    """The prompt with ``block`` added to its first system message (appended after a blank
    line), or as a new system message in front when it has none. Nothing when ``block`` is
    None. The caller's messages are never mutated."""
    messages = list(prompt)
    if block is None:
        return messages
    for i, m in enumerate(messages):
        if isinstance(m, SystemMessage):
            text = f"{m.text}\n\n{block}" if m.text else block
            messages[i] = replace(m, text=text)
            return messages
    return [SystemMessage(block), *messages]
