"""The Spring AI layout on Neo4j checked against Spring AI itself: its own
``Neo4jChatMemoryRepository`` and ``MessageWindowChatMemory`` (1.1.2, the newest on Maven
Central; run by ``scripts/servers/spring-ai/SpringAi11Harness.java`` in a JVM) on the same
Neo4j server as chatmem, with Spring's default labels."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    InvalidArgumentError,
    Media,
    Message,
    MessageWindowChatMemory,
    SchemaError,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.neo4j import (
    AsyncSpringAiNeo4jChatMemoryRepository,
    Neo4jChatMemoryRepository,
    SpringAiNeo4jChatMemoryRepository,
)
from chatmem.testing.harness import ServerInfo
from conformance_tests.spring_ai import Harness, assert_windows_agree, cid, msg, race_appenders

pytestmark = pytest.mark.backend("neo4j")

Repo = SpringAiNeo4jChatMemoryRepository
VERSION = os.environ.get("CHATMEM_SPRING_AI_CASSANDRA_VERSION", "1.1.2")
HOME = Path(os.environ.get("CHATMEM_CACHE", Path.home() / ".cache" / "chatmem"))
SPRING = HOME / f"spring-ai-{VERSION}"
CLASSPATH = f"{SPRING}/lib/*:{SPRING}/classes"
HARNESS = "SpringAi11Harness"
SPRING_INDEXES = ("session_conversation_id_index", "message_index_index")


def _required() -> bool:
    names = {n.strip() for n in os.environ.get("CHATMEM_REQUIRE_BACKENDS", "").split(",")}
    return bool(names & {"all", "neo4j"})


def _driver(server: ServerInfo) -> Any:
    return server.extra["driver"]


def _wipe(server: ServerInfo) -> None:
    """Remove Spring's graph and schema (the other tests of the session use the same
    labels in chatmem's own layout)."""
    with _driver(server).session() as session:
        session.run(
            "MATCH (s:Session) WHERE s.id IS NOT NULL OPTIONAL MATCH (s)-[:HAS_MESSAGE]->(m)"
            " OPTIONAL MATCH (m)-->(p) DETACH DELETE s, m, p"
        ).consume()
        for name in (*SPRING_INDEXES, "chatmem_spring_session_id"):
            kind = "CONSTRAINT" if name.startswith("chatmem") else "INDEX"
            session.run(f"DROP {kind} {name} IF EXISTS").consume()


@pytest.fixture(scope="module")
def node(server: ServerInfo) -> Iterator[Harness]:
    """Spring's repository on the test server (its config creates Spring's indexes)."""
    if not (SPRING / "classes" / f"{HARNESS}.class").is_file():
        reason = f"Spring AI harness not installed in {SPRING} (run scripts/install/spring-ai.sh)"
        if _required():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    _wipe(server)
    runner = Harness(SPRING / "java", CLASSPATH, [HARNESS, "neo4j", str(server.url)])
    assert runner([{"op": "ids"}]) == [[]]
    yield runner
    runner.close()
    _wipe(server)


@pytest.fixture
def repo(server: ServerInfo, node: Harness) -> Iterator[Repo]:
    with SpringAiNeo4jChatMemoryRepository.from_url(str(server.url)) as r:
        yield r


def texts(messages: list[Message]) -> list[tuple[str, str | None]]:
    return [(m.message_type.value, m.text) for m in messages]


def spring_texts(read: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(m["type"], m["text"]) for m in read]


CALL = {"id": "t1", "name": "lookup", "arguments": '{"q": 1}'}


def test_spring_writes_and_chatmem_reads_the_same(repo: Repo, node: Harness) -> None:
    one, two = cid("s1"), cid("s2")
    first = [msg("SYSTEM", "be brief"), msg("USER", "hi"), msg("ASSISTANT", "hello")]
    replaced = [
        *first[:2],
        {"type": "ASSISTANT", "text": "", "tool_calls": [CALL]},
        {"type": "TOOL", "responses": [{"id": "t1", "name": "lookup", "data": "42"}]},
        msg("ASSISTANT", "it is 42"),
    ]
    *_, read_one, read_two, ids = node(
        [
            {"op": "save", "cid": one, "messages": first},
            {"op": "save", "cid": one, "messages": replaced},  # Spring's replace: saveAll
            {"op": "save", "cid": two, "messages": [msg("USER", "other")]},
            {"op": "read", "cid": one},
            {"op": "read", "cid": two},
            {"op": "ids"},
        ]
    )
    assert {one, two} <= set(ids)
    mine = repo.find_by_conversation_id(one)
    assert [type(m) for m in mine] == [
        SystemMessage,
        UserMessage,
        AssistantMessage,
        ToolResponseMessage,
        AssistantMessage,
    ]
    assert [m.text for m in mine if not isinstance(m, ToolResponseMessage)] == [
        "be brief",
        "hi",
        None,  # Spring's empty content of a tool-call message
        "it is 42",
    ]
    call = mine[2]
    assert isinstance(call, AssistantMessage)
    assert call.tool_calls == (ToolCall(id="t1", name="lookup", arguments='{"q": 1}'),)
    response = mine[3]
    assert isinstance(response, ToolResponseMessage)
    assert response.responses == (ToolResponse(id="t1", name="lookup", response_data="42"),)
    assert [m["type"] for m in read_one] == [m.message_type.value for m in mine]
    assert [m.position for m in mine] == [0, 1, 2, 3, 4]  # Spring's idx, from 1
    assert all(m.created_at is None for m in mine)  # Spring's graph keeps no timestamp
    assert texts(repo.find_by_conversation_id(two)) == spring_texts(read_two)
    assert {one, two} <= set(repo.find_conversation_ids())


def test_chatmem_ls_lists_springs_ids(server: ServerInfo, node: Harness) -> None:
    ids = [cid("ls"), cid("ls")]
    node([{"op": "save", "cid": c, "messages": [msg("USER", c)]} for c in ids])
    url = f"{server.url}?layout=spring-ai"
    done = subprocess.run(
        [sys.executable, "-m", "chatmem.core._cli", "ls", "--url", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert set(ids) <= set(done.stdout.split())


def test_chatmem_writes_and_spring_reads_the_same(repo: Repo, node: Harness) -> None:
    window, saved, gone = cid("w"), cid("sa"), cid("del")
    memory = MessageWindowChatMemory(repo, max_messages=4)
    memory.add(window, SystemMessage("sys"))
    for i in range(5):
        memory.add(window, [UserMessage(f"q{i}"), AssistantMessage(f"a{i}")])
    call = AssistantMessage(None, tool_calls=(ToolCall(id="t9", name="f", arguments="{}"),))
    answer = ToolResponseMessage((ToolResponse(id="t9", name="f", response_data="ok"),))
    repo.save_all(saved, [UserMessage("x"), call, answer, AssistantMessage("y")])
    repo.append(saved, UserMessage("appended"))
    repo.save_all(gone, [UserMessage("soon gone")])
    repo.delete_by_conversation_id(gone)
    read_window, read_saved, read_gone, ids = node(
        [
            {"op": "read", "cid": window},
            {"op": "read", "cid": saved},
            {"op": "read", "cid": gone},
            {"op": "ids"},
        ]
    )
    # the layout stores exactly the window, as Spring's MessageWindowChatMemory does
    assert [m["text"] for m in read_window] == ["sys", "q4", "a4"]
    assert spring_texts(read_window) == texts(memory.get(window))
    assert [m["type"] for m in read_saved] == ["USER", "ASSISTANT", "TOOL", "ASSISTANT", "USER"]
    assert read_saved[1]["tool_calls"] == [{"id": "t9", "name": "f", "arguments": "{}"}]
    assert read_saved[2]["responses"] == [{"id": "t9", "name": "f", "data": "ok"}]
    assert read_saved[4]["text"] == "appended"
    assert read_gone == [] and gone not in ids and {window, saved} <= set(ids)


SIZES = (1, 2, 3, 4, 5, 8)
SAME_CUT = (1, 3, 5)
"""Sizes at which Spring 1.1's count cut lands on a user message over ``history(6)``."""


def test_windows_agree_with_springs(repo: Repo, node: Harness) -> None:
    """Spring's MessageWindowChatMemory and chatmem's give the same window, up to 1.1's
    count cut (``snapped``), each over the other's rows too."""

    def compare(rows: list[dict[str, Any]], messages: list[Message]) -> None:
        assert spring_texts(rows) == texts(messages)

    assert_windows_agree(repo, node, SIZES, compare, exact_sizes=SAME_CUT)


def test_what_the_layout_does_not_store_is_refused_by_name(
    repo: Repo, server: ServerInfo, node: Harness
) -> None:
    c = cid("refuse")
    with pytest.raises(InvalidArgumentError, match="media") as info:
        repo.save_all(
            c, [UserMessage("see", media=(Media(mime_type="image/png", data=b"\x89PNG"),))]
        )
    assert info.value.argument == "messages[0]" and "lossy=('media',)" in str(info.value)
    with pytest.raises(InvalidArgumentError, match="metadata"):
        MessageWindowChatMemory(repo, max_messages=5).add(c, UserMessage("x", metadata={"k": 1}))
    assert repo.find_by_conversation_id(c) == []  # nothing was written
    (read,) = node([{"op": "read", "cid": c}])
    assert read == []
    lossy = SpringAiNeo4jChatMemoryRepository(
        _driver(server), lossy=("metadata",), initialize_schema="never"
    )
    lossy.save_all(c, [UserMessage("q", metadata={"k": 1})])
    assert [(m.text, m.metadata) for m in lossy.find_by_conversation_id(c)] == [("q", {})]
    with pytest.raises(InvalidArgumentError, match="lossy"):
        SpringAiNeo4jChatMemoryRepository(_driver(server), lossy=("everything",))


def test_eight_concurrent_chatmem_appenders_lose_nothing(
    repo: Repo, server: ServerInfo, node: Harness
) -> None:
    """Each write locks the session node (created race-free through chatmem's uniqueness
    constraint on ``Session.id``) before it reads the last ``idx``."""
    c = cid("race")
    log = race_appenders(repo, c)
    with _driver(server).session() as session:
        found = session.run(
            "MATCH (s:Session {id: $cid}) RETURN count(s) AS n", {"cid": c}
        ).single()
    assert found is not None and found["n"] == 1
    (read,) = node([{"op": "read", "cid": c}])
    assert [m["text"] for m in read] == [m.text for m in log]


def test_a_concurrent_spring_writer_can_drop_a_chatmem_append(repo: Repo, node: Harness) -> None:
    """What the Neo4j page warns of: Spring's add is a read, then ``saveAll`` (delete, then
    re-create, in two transactions) without chatmem's lock, so a chatmem append between the
    two is lost."""
    c = cid("lost")
    repo.append(c, UserMessage("first"))
    (seen,) = node([{"op": "read", "cid": c}])
    repo.append(c, UserMessage("chatmem's, in between"))
    node([{"op": "save", "cid": c, "messages": [*seen, msg("USER", "spring's")]}])
    assert [m.text for m in repo.find_by_conversation_id(c)] == ["first", "spring's"]


def test_springs_indexes_and_chatmems_constraint(server: ServerInfo, node: Harness) -> None:
    """Spring's two indexes (created by Spring's config) are the ones chatmem's DDL names,
    and chatmem adds only its uniqueness constraint on ``Session.id``."""
    with _driver(server).session() as session:
        indexes = {
            r["name"]: (r["labelsOrTypes"], r["properties"])
            for r in session.run("SHOW INDEXES YIELD name, labelsOrTypes, properties")
        }
    assert indexes["session_conversation_id_index"] == (["Session"], ["conversationId"])
    assert indexes["message_index_index"] == (["Message"], ["index"])
    assert indexes["chatmem_spring_session_id"] == (["Session"], ["id"])  # its backing index
    ddl = Neo4jChatMemoryRepository.schema_statements_for_url(f"{server.url}?layout=spring-ai")
    assert ddl == SpringAiNeo4jChatMemoryRepository(_driver(server)).schema_statements()
    assert [s.split()[2] for s in ddl] == [*SPRING_INDEXES, "chatmem_spring_session_id"]
    with pytest.raises(InvalidArgumentError, match="layout"):
        Neo4jChatMemoryRepository.from_url(str(server.url), layout="spring")


def test_never_mode_checks_chatmems_constraint(server: ServerInfo, node: Harness) -> None:
    with _driver(server).session() as session:
        session.run("DROP CONSTRAINT chatmem_spring_session_id IF EXISTS").consume()
    try:
        repo = SpringAiNeo4jChatMemoryRepository(_driver(server), initialize_schema="never")
        with pytest.raises(SchemaError, match="chatmem_spring_session_id"):
            repo.find_by_conversation_id("c")
    finally:
        SpringAiNeo4jChatMemoryRepository(_driver(server))  # "always": created again


def test_the_async_twin_shares_the_graph(server: ServerInfo, node: Harness) -> None:
    c = cid("async")

    async def run() -> list[Message]:
        async with await AsyncSpringAiNeo4jChatMemoryRepository.from_url(
            str(server.url), initialize_schema="never"
        ) as r:
            await r.save_all(c, [SystemMessage("s"), UserMessage("u")])
            await r.append(c, AssistantMessage("a"))
            return await r.find_by_conversation_id(c)

    log = asyncio.run(run())
    (read,) = node([{"op": "read", "cid": c}])
    assert spring_texts(read) == texts(log) == [("SYSTEM", "s"), ("USER", "u"), ("ASSISTANT", "a")]
