"""The in-memory repository: nothing to start; a namespace is one shared instance."""

from __future__ import annotations

import threading
from typing import Any

from chatmem.core import BaseChatMemoryRepository, InMemoryChatMemoryRepository

from ..harness import Harness, ServerInfo, Unavailable, unique_suffix


class MemoryHarness(Harness):
    name = "memory"

    def __init__(self) -> None:
        self._shared: dict[str, InMemoryChatMemoryRepository] = {}
        self._lock = threading.Lock()

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

    def cold_default_url(self, server: ServerInfo) -> str:
        raise Unavailable(
            "in-process only: every repository_from_url('memory:') is a new empty store, "
            "so threads and processes cannot share a cold default namespace"
        )


HARNESS = MemoryHarness
