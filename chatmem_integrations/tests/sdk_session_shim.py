"""A pytest plugin that runs the Agents SDK's own session tests against ``ChatmemSession``.

Loaded with ``-p chatmem_integrations.tests.sdk_session_shim`` inside the SDK's unpacked
source distribution (the ``openai-agents-sdk-tests`` nox session fetches it into .work/):
before their modules are collected, ``agents.SQLiteSession`` becomes ``ShimSession``, a
``ChatmemSession`` over an async in-memory chatmem repository, one per database path (so
two sessions on one file see one store, as two ``SQLiteSession`` objects would)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chatmem.core import AsyncInMemoryChatMemoryRepository
from chatmem.integrations.openai_agents import ChatmemSession

_STORES: dict[str, AsyncInMemoryChatMemoryRepository] = {}


class ShimSession(ChatmemSession):
    """``SQLiteSession(session_id, db_path=":memory:", ...)`` as a ``ChatmemSession``."""

    def __init__(self, session_id: str, db_path: str | Path = ":memory:", **kwargs: Any) -> None:
        kwargs.pop("create_tables", None)
        key = str(db_path)
        if key == ":memory:":
            repository = AsyncInMemoryChatMemoryRepository()
        else:
            repository = _STORES.setdefault(key, AsyncInMemoryChatMemoryRepository())
        super().__init__(repository, session_id, **kwargs)

    def close(self) -> None:
        """Nothing to close: SQLiteSession's connection handling has no counterpart."""


def pytest_configure(config: pytest.Config) -> None:
    import agents
    import agents.memory

    agents.SQLiteSession = ShimSession  # type: ignore[misc,assignment]
    agents.memory.SQLiteSession = ShimSession  # type: ignore[attr-defined]
