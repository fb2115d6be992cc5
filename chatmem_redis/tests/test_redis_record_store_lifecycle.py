"""The Redis record store's client ownership: ``from_url`` owns the client it makes and
``close`` (or leaving a ``with`` block) closes it once; a client passed in stays open."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis

from chatmem.core import InvalidArgumentError
from chatmem.core.longterm import MemoryCandidate, MemoryType
from chatmem.redis import RedisMemoryRecordRepository

pytestmark = pytest.mark.backend("redis")


def _options() -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:12]
    return {"index_name": f"lifecycle-{suffix}", "key_prefix": f"lifecycle-{suffix}:"}


def _open(probe: redis.Redis, client_id: int) -> bool:
    """Whether the server still has the connection ``client_id`` (``CLIENT ID``)."""
    return bool(probe.execute_command("CLIENT", "LIST", "ID", client_id))


def test_from_url_owns_its_client_and_a_with_block_closes_it(server: Any) -> None:
    probe = redis.Redis.from_url(server.url)
    with RedisMemoryRecordRepository.from_url(server.url, **_options()) as repo:
        added = repo.add(
            "agent",
            "ana",
            MemoryCandidate(
                memory_type=MemoryType.PREFERENCE, content="prefers tea", confidence=0.9
            ),
        )
        assert repo.get(added.record.id) == added.record
        repo.drop_schema()
        used = repo.client.client_id()
        assert _open(probe, used)
    try:
        assert not _open(probe, used)
        repo.close()  # a second close is a no-op
        assert not _open(probe, used)
    finally:
        probe.close()


def test_a_client_passed_in_stays_open_after_close(server: Any) -> None:
    client = redis.Redis.from_url(server.url)
    try:
        repo = RedisMemoryRecordRepository(client, **_options())
        repo.drop_schema()
        used = client.client_id()
        repo.close()
        assert _open(client, used)  # the same pooled connection, still open
    finally:
        client.close()


def test_from_url_refuses_another_scheme_before_any_io() -> None:
    with pytest.raises(InvalidArgumentError) as err:
        RedisMemoryRecordRepository.from_url("mongodb://localhost/x")
    assert err.value.argument == "url"
