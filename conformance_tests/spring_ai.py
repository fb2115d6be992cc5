"""Helpers of the Spring AI layout tests beside each store (``chatmem_*/tests/
test_spring_ai_layout.py``): messages in the JSON shape of the Java harnesses in
``scripts/servers/spring-ai/``, their comparison, and the history the window tests replay."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from chatmem.core import AssistantMessage, Message, SystemMessage, UserMessage


def cid(tag: str) -> str:
    """A fresh conversation id (at most 36 characters: Spring's JDBC column)."""
    return f"{tag}-{uuid.uuid4().hex[:16]}"


def msg(kind: str, text: str, ts: str | None = None) -> dict[str, Any]:
    """A message as the harness reads it: Spring's type name, text, ISO instant or None."""
    return {"type": kind, "text": text, "timestamp": ts}


def as_spring(messages: list[Message]) -> list[dict[str, Any]]:
    """chatmem messages in the harness's JSON shape (type, text, ISO instant)."""
    out = []
    for m in messages:
        assert m.created_at is not None
        ts = m.created_at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
        out.append({"type": m.message_type.value, "text": m.text, "timestamp": ts})
    return out


def same_instants(
    a: list[dict[str, Any]], b: list[dict[str, Any]], *, resolution_us: int = 1
) -> None:
    """Equal lists of messages, comparing timestamps as instants (Java prints ``...Z``)
    truncated to ``resolution_us`` microseconds (the store's: 1 on PostgreSQL, 1,000 on
    Cassandra, 1,000,000 on MariaDB's ``TIMESTAMP``)."""

    def norm(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        def when(r: dict[str, Any]) -> int:
            ts = datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00"))
            micros = int(ts.timestamp()) * 1_000_000 + ts.microsecond
            return micros // resolution_us

        return [(r["type"], r["text"], when(r)) for r in rows]

    assert norm(a) == norm(b)


def history(n: int) -> list[dict[str, Any]]:
    """A system message, ``n`` question-answer pairs and a new system message halfway."""
    out = [msg("SYSTEM", "rules")]
    for i in range(n):
        out += [msg("USER", f"u{i}"), msg("ASSISTANT", f"a{i}")]
        if i == n // 2:
            out.append(msg("SYSTEM", "new rules"))
    return out


def as_chatmem(m: dict[str, Any]) -> Message:
    """A harness message as a chatmem one (type and text)."""
    cls = {"USER": UserMessage, "ASSISTANT": AssistantMessage, "SYSTEM": SystemMessage}
    return cls[m["type"]](m["text"])
