"""What each record store's own shape must get right: ids match exactly whatever their
characters (TAG syntax, case, separators, operators), a store's options are validated
before any I/O, Redis never expires a record by key TTL, and Neo4j links a memory to the
chat message it came from."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from chatmem.core import InvalidArgumentError
from chatmem.core.longterm import BaseMemoryRecordRepository, MemoryStatus
from chatmem.testing.harness import Harness, ServerInfo

from .conftest import TestClock, open_store
from .test_records import FACT, PREF

AWKWARD_IDS = [
    "ana",
    "Ana",
    "ana ",
    "a,b",
    "high} | @x:{low",
    "*",
    "naïve",
    "naive",
    "$ne",
    "-1",
    "a\\b",
    "ünï-cödé/é",
]


def test_user_and_agent_ids_match_exactly(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    ids = {user: records.add("agent", user, PREF).record.id for user in AWKWARD_IDS}
    other = records.add("agent,x", "zed", PREF).record.id
    for user, rid in ids.items():
        assert [r.id for r in records.find(user_id=user).records] == [rid], user
        assert [r.id for r in records.find(agent_id="agent", user_id=user).records] == [rid]
    assert [r.id for r in records.find(agent_id="agent,x").records] == [other]
    assert len(records.find(agent_id="agent").records) == len(AWKWARD_IDS)
    pending = records.find(user_id="high} | @x:{low", status="pending", memory_type="preference")
    assert [r.id for r in pending.records] == [ids["high} | @x:{low"]]


@pytest.mark.backend("redis", "mongo", "cassandra", "neo4j")
@pytest.mark.parametrize("mode", ["sometimes", 1, None])
def test_bad_initialize_schema_is_rejected_before_any_io(
    harness: Harness, server: ServerInfo, mode: object
) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        open_store(server, harness.name, initialize_schema=mode)
    assert err.value.argument == "initialize_schema"


@pytest.mark.backend("redis")
def test_redis_records_have_no_key_ttl_and_expire_as_rejected(
    make_records: Callable[..., BaseMemoryRecordRepository], clock: TestClock, server: ServerInfo
) -> None:
    import redis

    records = make_records()
    rid = records.add("agent", "ana", FACT).record.id
    assert server.url is not None
    client = redis.Redis.from_url(server.url)  # a blocking client of its own, for either twin
    key = f"{records.key_prefix}r:{rid}"  # type: ignore[attr-defined]
    assert client.ttl(key) == -1  # stored without expiry: the rules decide, not Redis
    clock.advance(timedelta(days=8))
    assert records.expire_due() == 1
    assert client.exists(key) == 1
    assert records.get(rid).status is MemoryStatus.REJECTED  # type: ignore[union-attr]
    client.close()


@pytest.mark.backend("neo4j")
@pytest.mark.parametrize("option", ["user_label", "memory_label", "message_label"])
def test_neo4j_labels_are_validated(harness: Harness, server: ServerInfo, option: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        open_store(server, harness.name, **{option: "Bad Label`) DETACH DELETE n //"})
    assert err.value.argument == option


@pytest.mark.backend("neo4j")
def test_neo4j_memory_links_to_its_source_message(
    make_records: Callable[..., BaseMemoryRecordRepository], harness: Harness, server: ServerInfo
) -> None:
    from chatmem.core import UserMessage

    chat = harness.make_repository(server)
    label = chat.config.message_label  # type: ignore[attr-defined]
    chat.save_all("c-1", [UserMessage("I am the CTO of StartupCorp."), UserMessage("Thanks.")])
    position = chat.find_by_conversation_id("c-1")[0].position
    records = make_records(message_label=label)
    linked = records.add("agent", "ana", FACT, conversation_id="c-1", message_position=position)
    unlinked = records.add("agent", "ana", PREF, conversation_id="c-2", message_position=0)
    memory = records.memory_label  # type: ignore[attr-defined]
    query = (
        f"MATCH (:`{records.user_label}` {{user_id: 'ana'}})-[:REMEMBERS]->"  # type: ignore[attr-defined]
        f"(m:`{memory}`) OPTIONAL MATCH (m)-[:EXTRACTED_FROM]->(x:`{label}`) "
        "RETURN m.id AS id, x.text AS text ORDER BY id"
    )
    rows = records._read(query, {})  # type: ignore[attr-defined]
    texts = {r["id"]: r["text"] for r in rows}
    assert texts == {linked.record.id: "I am the CTO of StartupCorp.", unlinked.record.id: None}
    harness.cleanup(server, chat)
