"""Spring AI's MongoDB chat memory, observed through Spring AI 1.1.2's own
``MongoChatMemoryRepository`` (run by ``scripts/servers/spring-ai/SpringAi11Harness.java`` in
a JVM) on the same server as chatmem's tests: the collection and document shape a chatmem
Spring AI layout on MongoDB has to follow, and what Spring's reads do with it. chatmem has
no such layout yet (docs/backends/mongodb.md#spring-ai-layout says why)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from chatmem.testing.harness import ServerInfo, unique_suffix
from conformance_tests.spring_ai import Harness, cid, msg

pytestmark = pytest.mark.backend("mongo")

VERSION = os.environ.get("CHATMEM_SPRING_AI_CASSANDRA_VERSION", "1.1.2")
HOME = Path(os.environ.get("CHATMEM_CACHE", Path.home() / ".cache" / "chatmem"))
SPRING = HOME / f"spring-ai-{VERSION}"
CLASSPATH = f"{SPRING}/lib/*:{SPRING}/classes"
HARNESS = "SpringAi11Harness"
COLLECTION = "ai_chat_memory"  # Spring's @Document name
CLASS = "org.springframework.ai.chat.memory.repository.mongo.Conversation"


def _required() -> bool:
    names = {n.strip() for n in os.environ.get("CHATMEM_REQUIRE_BACKENDS", "").split(",")}
    return bool(names & {"all", "mongo"})


@pytest.fixture(scope="module")
def database(server: ServerInfo) -> Iterator[Any]:
    assert server.url is not None
    client: MongoClient[Any] = MongoClient(server.url)
    # A database of its own: chatmem's default collection has Spring's name too, and the
    # suite's default-path tests give it chatmem's index.
    db = client[f"spring_ai_{unique_suffix()}"]
    yield db
    client.drop_database(db.name)
    client.close()


@pytest.fixture(scope="module")
def spring(server: ServerInfo, database: Any) -> Iterator[Harness]:
    """Spring's repository on the test server and database (one JVM for the module)."""
    if not (SPRING / "classes" / f"{HARNESS}.class").is_file():
        reason = f"Spring AI harness not installed in {SPRING} (run scripts/install/spring-ai.sh)"
        if _required():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    assert server.url is not None
    harness = Harness(SPRING / "java", CLASSPATH, [HARNESS, "mongo", server.url, database.name])
    yield harness
    harness.close()


def test_springs_document_shape(spring: Harness, database: Any) -> None:
    """One document per message in ``ai_chat_memory``: ``conversationId``, ``message``
    (``content``, ``type``, ``metadata``), ``timestamp`` (a BSON date: milliseconds) and
    Spring Data's ``_class``; Spring's repository creates no index."""
    c = cid("shape")
    spring([{"op": "save", "cid": c, "messages": [msg("SYSTEM", "s"), msg("USER", "u")]}])
    docs = list(database[COLLECTION].find({"conversationId": c}))
    assert len(docs) == 2
    for doc in docs:
        assert set(doc) == {"_id", "conversationId", "message", "timestamp", "_class"}
        assert doc["_class"] == CLASS
        assert set(doc["message"]) == {"content", "type", "metadata"}
        assert isinstance(doc["timestamp"], datetime)
        assert doc["timestamp"].microsecond % 1000 == 0
    assert sorted((d["message"]["type"], d["message"]["content"]) for d in docs) == [
        ("SYSTEM", "s"),
        ("USER", "u"),
    ]
    assert [i["key"] for i in database[COLLECTION].list_indexes()] == [{"_id": 1}]


def test_spring_lists_ids_and_deletes(spring: Harness, database: Any) -> None:
    one, two = cid("ids"), cid("ids")
    *_, ids, _, after = spring(
        [
            {"op": "save", "cid": one, "messages": [msg("USER", "a")]},
            {"op": "save", "cid": two, "messages": [msg("USER", "b")]},
            {"op": "ids"},
            {"op": "delete", "cid": one},
            {"op": "ids"},
        ]
    )
    assert {one, two} <= set(ids) and one not in after and two in after
    assert database[COLLECTION].count_documents({"conversationId": one}) == 0


def test_spring_1_1_2_reads_newest_first(spring: Harness, database: Any) -> None:
    """1.1.2's ``findByConversationId`` sorts by ``timestamp`` descending (2.0 sorts
    ascending); ``timestamp`` is all the order there is (documents at distinct instants)."""
    c = cid("order")
    for i, text in enumerate(["m0", "m1", "m2"]):
        database[COLLECTION].insert_one(
            {
                "conversationId": c,
                "message": {"content": text, "type": "USER", "metadata": {}},
                "timestamp": datetime(2026, 1, 1, 0, 0, i),
                "_class": CLASS,
            }
        )
    (read,) = spring([{"op": "read", "cid": c}])
    assert [m["text"] for m in read] == ["m2", "m1", "m0"]


def test_spring_1_1_2_stamps_a_save_at_write_time(spring: Harness, database: Any) -> None:
    """``saveAll`` deletes the conversation and inserts every message with its own
    ``Instant.now()``: a message's timestamp is when it was last rewritten, not when it was
    said, and messages written within one millisecond tie."""
    c = cid("stamp")
    spring([{"op": "save", "cid": c, "messages": [msg("USER", "a")]}])
    (first,) = [d["timestamp"] for d in database[COLLECTION].find({"conversationId": c})]
    spring([{"op": "save", "cid": c, "messages": [msg("USER", "a"), msg("USER", "b")]}])
    again = [d["timestamp"] for d in database[COLLECTION].find({"conversationId": c})]
    assert len(again) == 2 and min(again) > first  # "a" was rewritten with a new instant
