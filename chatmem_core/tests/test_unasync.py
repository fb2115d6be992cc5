"""scripts/unasync.py: the transform rules on a sample, and every generated twin current."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("unasync", ROOT / "scripts" / "unasync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["unasync"] = module
    spec.loader.exec_module(module)
    return module


SOURCE = '''\
import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

ASYNC = True


class AsyncThing(AsyncBase):
    """An ``AsyncThing`` built by ``async_make``."""

    async def __aenter__(self) -> AsyncThing:
        if ASYNC:
            self.pending = True
        else:
            self.open()
        return self

    async def rows(self, fn: Callable[[], Awaitable[int]]) -> AsyncIterator[int]:
        async with self.lock:
            async for row in self.cursor:
                yield await fn() + row
        await asyncio.sleep(0)
        await self.client.aclose()
'''

EXPECTED = '''\
import time
from collections.abc import Callable, Iterator


class Thing(Base):
    """An ``Thing`` built by ``make``."""

    def __enter__(self) -> Thing:
        self.open()
        return self

    def rows(self, fn: Callable[[], int]) -> Iterator[int]:
        with self.lock:
            for row in self.cursor:
                yield fn() + row
        time.sleep(0)
        self.client.close()
'''


def test_the_transform_rules() -> None:
    unasync = _script()
    lines = unasync.select_sync_lines(SOURCE)
    out = unasync.with_imports(unasync.transform_tokens(lines, dict(unasync.NAMES)))
    # the formatter pass is ruff's own; compare what the rules produce before it
    assert [line for line in out.splitlines() if line.strip()] == [
        line
        for line in EXPECTED.replace(
            "from collections.abc import Callable, Iterator",
            # ruff drops the unused asyncio import and sorts the names later
            "import asyncio\nfrom collections.abc import Iterator, Awaitable, Callable",
        ).splitlines()
        if line.strip()
    ]


def test_a_source_in_async_generates_the_same_name_in_sync() -> None:
    unasync = _script()
    source = ROOT / "chatmem_core" / "chatmem" / "core" / "_async" / "repository.py"
    assert unasync.target_of(source) == source.parent.parent / "_sync" / "repository.py"
    nested = ROOT / "pkg" / "_async" / "dialects" / "postgresql.py"
    assert unasync.target_of(nested) == ROOT / "pkg" / "_sync" / "dialects" / "postgresql.py"


def test_generated_text_that_says_async_is_reported() -> None:
    unasync = _script()
    generated = (
        '# header\n# header\n"""Runs on the event loop."""\nx = 1  # awaits nothing\ny = 2\n'
    )
    assert unasync.async_words(generated) == [
        '3: """Runs on the event loop."""',
        "4: x = 1  # awaits nothing",
    ]
    assert unasync.async_words('# h\n# h\n"""Synchronous; asynchronously never."""\n') == []


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed in this venv")
def test_every_generated_twin_is_current() -> None:
    assert _script().main(["--check"]) == 0
