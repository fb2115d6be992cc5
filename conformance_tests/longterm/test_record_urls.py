"""A store's async twin opens from the URL its sync twin does (``async_record_store_from_url``,
the ``chatmem.memory_stores`` entry with ``Async`` in front), on a client of its own, and
sees the same records and state entries."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from chatmem.core.longterm import (
    AsyncBaseMemoryRecordRepository,
    BaseMemoryRecordRepository,
    MemoryRecord,
    MemoryStatus,
    async_record_store_class_for_url,
    async_record_store_from_url,
)
from chatmem.testing.harness import Harness, ServerInfo

from .conftest import store_options, store_url
from .test_records import FACT


@pytest.mark.backend("sqlite", "postgres", "mariadb", "redis", "mongo", "cassandra", "neo4j")
def test_the_async_twin_opens_from_the_stores_url(
    make_records: Callable[..., BaseMemoryRecordRepository], harness: Harness, server: ServerInfo
) -> None:
    first = make_records()
    url, names = store_url(server), store_options(harness.name, first)
    assert async_record_store_class_for_url(url).__name__ == "Async" + type(first).__name__
    first.write_state("settings", "agent", "{}")

    async def use() -> tuple[MemoryRecord, str]:
        store = await async_record_store_from_url(url, **names)
        assert isinstance(store, AsyncBaseMemoryRecordRepository)
        try:
            record = (await store.add("agent", "ana", FACT)).record
            entry = await store.read_state("settings", "agent")
            assert entry is not None
            return await store.approve(record.id, reviewer="async"), entry.value
        finally:
            await store.close()  # type: ignore[attr-defined]

    approved, value = asyncio.run(use())
    assert approved.status is MemoryStatus.APPROVED and value == "{}"
    assert first.get(approved.id) == approved
