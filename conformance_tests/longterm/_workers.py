"""Worker functions the multi-process tests start (importable by spawned processes)."""

from __future__ import annotations

from typing import Any


def open_by_url(url: str, options: dict[str, Any]) -> Any:
    """A record store on ``url`` as a separate process opens one (its own client)."""
    from chatmem.core.longterm import record_store_from_url

    return record_store_from_url(url, **options)


def add_one(url: str, options: dict[str, Any], content: str, barrier: Any, results: Any) -> None:
    """Open a fresh store on ``url`` with ``options``, wait for every peer, add one candidate."""
    from chatmem.core.longterm import MemoryCandidate, MemoryType

    repo = open_by_url(url, {**options, "initialize_schema": "never"})
    candidate = MemoryCandidate(memory_type=MemoryType.PREFERENCE, content=content, confidence=0.9)
    barrier.wait(60)
    result = repo.add("agent", "ana", candidate)
    results.put((result.record.id, result.created))
    repo.close()
