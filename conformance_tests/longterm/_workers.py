"""Worker functions the multi-process tests start (importable by spawned processes)."""

from __future__ import annotations

from typing import Any


def add_one(url: str, table: str, content: str, barrier: Any, results: Any) -> None:
    """Open a fresh store on ``url``/``table``, wait for every peer, add one candidate."""
    from chatmem.core.longterm import MemoryCandidate, MemoryType
    from chatmem.jdbc import JdbcMemoryRecordRepository

    repo = JdbcMemoryRecordRepository(url, table_name=table, initialize_schema="never")
    candidate = MemoryCandidate(memory_type=MemoryType.PREFERENCE, content=content, confidence=0.9)
    barrier.wait(60)
    result = repo.add("agent", "ana", candidate)
    results.put((result.record.id, result.created))
    repo.close()
