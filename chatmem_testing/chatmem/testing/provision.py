"""The kit's own harness: ``MemoryHarness`` for core's in-memory repository (entry point
``memory`` in ``chatmem.harnesses``). Nothing to start; a namespace is one shared instance.

Each store package ships its harnesses the same way, in ``chatmem.<store>.provision`` (as
SQLAlchemy ships ``testing/provision.py`` per dialect), so the kit runs from the wheel.
"""

from __future__ import annotations

import threading
from typing import Any

from chatmem.core import AsyncInMemoryChatMemoryRepository, InMemoryChatMemoryRepository
from chatmem.core.backend import AsyncBaseChatMemoryRepository, BaseChatMemoryRepository

from .harness import Harness, ServerInfo, Unavailable, unique_suffix


class MemoryHarness(Harness):
    """``InMemoryChatMemoryRepository``: repositories sharing a namespace share one store."""

    name = "memory"

    def __init__(self) -> None:
        self._shared: dict[str, InMemoryChatMemoryRepository] = {}
        self._lock = threading.Lock()
        self._twins: dict[int, tuple[Any, AsyncInMemoryChatMemoryRepository]] = {}

    def start_local(self, workdir: Any) -> ServerInfo:
        return ServerInfo(product="chatmem InMemory", version="", url=None, route="embedded")

    def namespace_options(self) -> dict[str, Any]:
        return {"namespace": unique_suffix()}

    def make_repository(self, server: ServerInfo, **options: Any) -> BaseChatMemoryRepository:
        namespace = options.pop("namespace", None)
        if namespace is None:
            return InMemoryChatMemoryRepository(**options)
        with self._lock:
            return self._shared.setdefault(namespace, InMemoryChatMemoryRepository(**options))

    async def make_async_twin(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> AsyncBaseChatMemoryRepository:
        """An in-process store has no URL: one async store per sync one (a namespace shared
        by several sync repositories is one object, so its twin is shared too)."""
        with self._lock:
            held = self._twins.get(id(repository))
            if held is None or held[0] is not repository:
                held = (repository, AsyncInMemoryChatMemoryRepository())
                self._twins[id(repository)] = held
            return held[1]

    def cold_default_url(self, server: ServerInfo) -> str:
        raise Unavailable(
            "in-process only: every repository_from_url('memory:') is a new empty store, "
            "so threads and processes cannot share a cold default namespace"
        )
