"""The SQLite fast path caches what it appends under the rows a read returns: the next
window read decodes nothing it wrote, and what it serves equals a fresh decode exactly."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    Media,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    repository_from_url,
)
from chatmem.jdbc._native._sync import sqlite as _fast

pytestmark = pytest.mark.backend("sqlite")


def every_kind() -> list[Any]:
    return [
        SystemMessage("sys", metadata={"v": 1}),
        UserMessage(
            "",
            metadata={"n": 1, "f": 1.0, "big": 10**25, "l": [1, {"a": None}]},
            media=[Media(mime_type="image/png", data=b"\x00\xff", id="m1", name="pic")],
        ),
        AssistantMessage(None, tool_calls=[ToolCall(id="c1", name="f", arguments='{"x": 1}')]),
        ToolResponseMessage([ToolResponse(id="c1", name="f", response_data='{"ok": true}')]),
        AssistantMessage("done", metadata={"finish": "stop"}),
    ]


def test_an_append_caches_exactly_what_a_read_would_decode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'cache.db'}"
    repo = repository_from_url(url)
    zoned = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=2)))
    repo.append("c", every_kind())
    repo.append("c", UserMessage("zoned", created_at=zoned))
    decoded: list[Any] = []
    real = _fast.from_values
    monkeypatch.setattr(_fast, "from_values", lambda *a: decoded.append(a[0]) or real(*a))
    cached = repo.find_last("c", 10)
    assert decoded == []  # core keeps created_at in UTC, whatever zone it was given in
    monkeypatch.undo()
    fresh = repository_from_url(url).find_last("c", 10)  # a new cache: every row decoded
    assert cached == fresh == [*every_kind(), UserMessage("zoned")]
    for a, b in zip(cached, fresh, strict=True):
        assert (type(a), a.position, a.created_at, repr(a)) == (
            type(b), b.position, b.created_at, repr(b),
        )  # fmt: skip


def test_a_replace_caches_the_tail_a_read_returns_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'replace.db'}"
    repo = repository_from_url(url)
    many = [UserMessage(f"m{i}") for i in range(300)]
    repo.save_all("c", [*every_kind(), *many])
    decoded: list[Any] = []
    real = _fast.from_values
    monkeypatch.setattr(_fast, "from_values", lambda *a: decoded.append(a[0]) or real(*a))
    cached = repo.find_last("c", 20)
    assert decoded == []  # the newest 256 of a replace are cached
    repo.find_last("c", 300)
    assert sorted(decoded) == list(range(5, 49))  # older ones decode as usual
    monkeypatch.undo()
    fresh = repository_from_url(url).find_last("c", 20)
    assert cached == fresh == many[-20:]
    assert [(m.position, repr(m)) for m in cached] == [(m.position, repr(m)) for m in fresh]
