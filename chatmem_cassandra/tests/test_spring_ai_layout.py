"""The Spring AI layout on Cassandra checked against Spring AI itself: its own
``CassandraChatMemoryRepository`` and ``MessageWindowChatMemory`` (1.1.2, the newest on Maven
Central; run by ``scripts/servers/spring-ai/SpringAi11Harness.java`` in a JVM) on the
same Cassandra node as chatmem, in Spring's default keyspace ``springframework``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmem.cassandra import (
    SPRING_AI_KEYSPACE,
    AsyncSpringAiCassandraChatMemoryRepository,
    CassandraChatMemoryRepository,
    SpringAiCassandraChatMemoryRepository,
    SpringAiCassandraConfig,
    parse_url,
)
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
from chatmem.testing.harness import ServerInfo, unique_suffix
from conformance_tests.spring_ai import (
    Harness,
    as_spring,
    assert_windows_agree,
    cid,
    msg,
    race_appenders,
    same_instants,
)

pytestmark = pytest.mark.backend("cassandra")

Repo = SpringAiCassandraChatMemoryRepository
VERSION = os.environ.get("CHATMEM_SPRING_AI_CASSANDRA_VERSION", "1.1.2")
HOME = Path(os.environ.get("CHATMEM_CACHE", Path.home() / ".cache" / "chatmem"))
SPRING = HOME / f"spring-ai-{VERSION}"
CLASSPATH = f"{SPRING}/lib/*:{SPRING}/classes"
HARNESS = "SpringAi11Harness"


def _required() -> bool:
    names = {n.strip() for n in os.environ.get("CHATMEM_REQUIRE_BACKENDS", "").split(",")}
    return bool(names & {"all", "cassandra"})


def _url(server: ServerInfo) -> str:
    """The server's URL without the test keyspace: the layout's default is Spring's."""
    target = parse_url(str(server.url))
    return f"cassandra://{target.contact_points[0]}:{target.port}?local_dc={target.local_dc}"


@pytest.fixture(scope="module")
def node(server: ServerInfo) -> Any:
    """Spring AI's repository on the test node (see ``Spring``)."""
    if not (
        (SPRING / ".complete").is_file() and (SPRING / "classes" / f"{HARNESS}.class").is_file()
    ):
        reason = f"Spring AI harness not installed in {SPRING} (run scripts/install/spring-ai.sh)"
        if _required():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    target = parse_url(str(server.url))
    node = [f"{target.contact_points[0]}:{target.port}", str(target.local_dc)]
    runner = Harness(SPRING / "java", CLASSPATH, [HARNESS, "cassandra", *node, SPRING_AI_KEYSPACE])
    assert runner([{"op": "ids"}])[0] is not None  # up, with its schema created
    yield runner
    runner.close()


@pytest.fixture
def repo(server: ServerInfo, node: Harness) -> Any:
    with SpringAiCassandraChatMemoryRepository.from_url(
        _url(server), initialize_schema="never"
    ) as r:
        yield r


def same_ms(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    """Equal lists of messages to the millisecond (Cassandra's ``timestamp``)."""
    same_instants(a, b, resolution_us=1000)


def rows_of(server: ServerInfo, conversation: str) -> list[Any]:
    return list(
        server.extra["session"].execute(
            f"SELECT message_timestamp, messages FROM {SPRING_AI_KEYSPACE}.ai_chat_memory"
            " WHERE session_id = %s",
            (conversation,),
        )
    )


def test_spring_writes_and_chatmem_reads_the_same(
    repo: Repo, node: Harness, server: ServerInfo
) -> None:
    one, two = cid("s1"), cid("s2")
    t = "2026-01-02T03:04:05.123Z"
    first = [msg("SYSTEM", "be brief", t), msg("USER", "hi", t), msg("ASSISTANT", "hello", t)]
    replaced = [
        *first[:2],
        msg("ASSISTANT", "hello again", "2026-01-02T03:04:06Z"),
        msg("USER", "more", "2026-01-02T03:04:07.5Z"),
    ]
    *_, read_one, read_two, ids = node(
        [
            {"op": "save", "cid": one, "messages": first},
            {"op": "save", "cid": one, "messages": replaced},  # Spring's replace: saveAll
            {"op": "save", "cid": two, "messages": [msg("USER", "other")]},
            {"op": "read", "cid": one},
            {"op": "read", "cid": two},
            {"op": "ids"},
        ],
    )
    assert {one, two} <= set(ids)
    mine = repo.find_by_conversation_id(one)
    assert [type(m) for m in mine] == [SystemMessage, UserMessage, AssistantMessage, UserMessage]
    same_ms(as_spring(mine), read_one)
    same_ms(read_one, replaced)
    same_ms(as_spring(repo.find_by_conversation_id(two)), read_two)
    assert [m.position for m in mine] == [0, 1, 2, 3]  # the index in Spring's list
    assert {one, two} <= set(repo.find_conversation_ids())
    assert len(rows_of(server, one)) == 2  # Spring keeps the window it replaced


def test_chatmem_ls_lists_springs_ids_but_not_deleted_ones(
    server: ServerInfo, node: Harness, repo: Repo
) -> None:
    ids = [cid("ls"), cid("ls")]
    gone = cid("ls-gone")
    ops = [{"op": "save", "cid": c, "messages": [msg("USER", c)]} for c in [*ids, gone]]
    *_, listed = node([*ops, {"op": "delete", "cid": gone}, {"op": "ids"}])
    assert gone in listed  # Spring's listing keeps a deleted conversation (an empty row)
    url = f"{_url(server)}&layout=spring-ai"
    done = subprocess.run(
        [sys.executable, "-m", "chatmem.core._cli", "ls", "--url", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert set(ids) <= set(done.stdout.split())
    assert gone not in done.stdout.split() and gone not in repo.find_conversation_ids()


def test_chatmem_writes_and_spring_reads_the_same(repo: Repo, node: Harness) -> None:
    window, saved, gone = cid("w"), cid("sa"), cid("del")
    memory = MessageWindowChatMemory(repo, max_messages=4)
    memory.add(window, SystemMessage("sys"))
    for i in range(5):
        memory.add(window, [UserMessage(f"q{i}"), AssistantMessage(f"a{i}")])
    repo.save_all(saved, [UserMessage("x"), AssistantMessage("y"), UserMessage("z")])
    repo.append(saved, AssistantMessage("appended"))
    repo.save_all(gone, [UserMessage("soon gone")])
    repo.delete_by_conversation_id(gone)
    read_window, read_saved, read_gone = node(
        [{"op": "read", "cid": window}, {"op": "read", "cid": saved}, {"op": "read", "cid": gone}],
    )
    # the layout stores exactly the window, as Spring's MessageWindowChatMemory does
    assert [m["text"] for m in read_window] == ["sys", "q4", "a4"]
    same_ms(read_window, as_spring(memory.get(window)))
    same_ms(read_saved, as_spring(repo.find_by_conversation_id(saved)))
    assert [m["text"] for m in read_saved] == ["x", "y", "z", "appended"]
    assert read_gone == [] and gone not in repo.find_conversation_ids()


SIZES = (1, 2, 3, 4, 5, 8)
SAME_CUT = (1, 3, 5)
"""Sizes at which Spring 1.1's count cut lands on a user message over ``history(6)``: there
1.1's window is 2.0's (and chatmem's) exactly."""


def test_windows_agree_with_springs(repo: Repo, node: Harness) -> None:
    """Spring's MessageWindowChatMemory and chatmem's give the same window, up to 1.1's
    count cut (``snapped``), each over the other's rows too."""
    assert_windows_agree(
        repo, node, SIZES, lambda rows, ms: same_ms(rows, as_spring(ms)), exact_sizes=SAME_CUT
    )


def test_what_the_layout_cannot_hold_is_refused_by_name(
    repo: Repo, node: Harness, server: ServerInfo
) -> None:
    c = cid("tool")
    call = AssistantMessage(
        "let me look", tool_calls=(ToolCall(id="t1", name="lookup", arguments="{}"),)
    )
    with pytest.raises(InvalidArgumentError, match="tool_calls") as info:
        repo.save_all(c, [UserMessage("q"), call])
    assert info.value.argument == "messages[1]" and "lossy=('tool_calls',)" in str(info.value)
    response = ToolResponseMessage((ToolResponse(id="t1", name="lookup", response_data="42"),))
    with pytest.raises(InvalidArgumentError, match="tool_responses"):
        repo.append(c, response)
    with pytest.raises(InvalidArgumentError, match="media"):
        repo.append(c, UserMessage("see", media=(Media(mime_type="image/png", data=b"\x89PNG"),)))
    with pytest.raises(InvalidArgumentError, match="metadata"):
        MessageWindowChatMemory(repo, max_messages=5).add(c, UserMessage("x", metadata={"k": 1}))
    assert repo.find_by_conversation_id(c) == [] and rows_of(server, c) == []  # nothing written
    with pytest.raises(InvalidArgumentError, match="lossy"):
        SpringAiCassandraChatMemoryRepository(server.extra["session"], lossy=("everything",))
    # opted in by name: dropped whole, as Spring 2.0's saveAll drops them
    lossy = SpringAiCassandraChatMemoryRepository(
        server.extra["session"], lossy=("tool_calls", "metadata"), initialize_schema="never"
    )
    lossy.save_all(c, [UserMessage("q", metadata={"k": 1}), call, AssistantMessage("42")])
    (read,) = node([{"op": "read", "cid": c}])
    assert [m.text for m in lossy.find_by_conversation_id(c)] == ["q", "42"]
    assert [m["text"] for m in read] == ["q", "42"]


def test_eight_concurrent_chatmem_appenders_lose_nothing(repo: Repo, node: Harness) -> None:
    """Every write inserts the next row ``IF NOT EXISTS`` at a key derived from the row it
    read, so racing writers collide on one key and the losers retry."""
    c = cid("race")
    log = race_appenders(repo, c)
    (read,) = node([{"op": "read", "cid": c}])
    assert [m["text"] for m in read] == [m.text for m in log]


def test_a_concurrent_spring_writer_can_drop_a_chatmem_append(
    repo: Repo, node: Harness, server: ServerInfo
) -> None:
    """What the Cassandra page warns of: Spring's add is a read, then a blind insert of the
    whole list under the current time, so a chatmem append between the two is hidden (it
    stays in an older row, which no reader reads)."""
    c = cid("lost")
    repo.append(c, UserMessage("first"))
    (seen,) = node([{"op": "read", "cid": c}])
    repo.append(c, UserMessage("chatmem's, in between"))
    node([{"op": "save", "cid": c, "messages": [*seen, msg("USER", "spring's")]}])
    assert [m.text for m in repo.find_by_conversation_id(c)] == ["first", "spring's"]
    assert len(rows_of(server, c)) == 3
    repo.append(c, UserMessage("after"))  # chatmem's next row follows Spring's
    assert [m.text for m in repo.find_by_conversation_id(c)] == ["first", "spring's", "after"]


_FACTS = (
    "SELECT column_name, clustering_order, kind, position, type FROM system_schema.columns"
    " WHERE keyspace_name = %s AND table_name = 'ai_chat_memory'",
    "SELECT field_names, field_types FROM system_schema.types"
    " WHERE keyspace_name = %s AND type_name = 'ai_chat_message'",
    "SELECT compaction, default_time_to_live FROM system_schema.tables"
    " WHERE keyspace_name = %s AND table_name = 'ai_chat_memory'",
    "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s",
)


def test_chatmem_ddl_is_springs(server: ServerInfo, node: Harness) -> None:
    """The keyspace, type and table chatmem creates are those Spring's repository created."""
    keyspace = f"spring_{unique_suffix()}"
    session = server.extra["session"]
    made = SpringAiCassandraChatMemoryRepository(session, keyspace=keyspace)
    try:

        def facts(ks: str) -> list[list[tuple[Any, ...]]]:
            out = [sorted(tuple(r) for r in session.execute(q, (ks,))) for q in _FACTS]
            out[2] = [(dict(r[0]), r[1]) for r in out[2]]
            return out

        theirs, ours = facts(SPRING_AI_KEYSPACE), facts(keyspace)
        assert theirs == ours and ours[0]
        assert [c[0] for c in sorted(ours[0], key=lambda c: c[0])] == [
            "message_timestamp",
            "messages",
            "session_id",
        ]
        made.save_all("c", [UserMessage("x")])
        assert [m.text for m in made.find_by_conversation_id("c")] == ["x"]
        assert made.schema_statements() == CassandraChatMemoryRepository.schema_statements_for_url(
            f"{_url(server)}&layout=spring-ai", keyspace=keyspace
        )
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)


def test_schema_defaults_are_springs(server: ServerInfo) -> None:
    """Spring's defaults: initialize-schema true, its names, no TTL; ``"never"`` checks."""
    session = server.extra["session"]
    defaults = SpringAiCassandraConfig()
    assert (defaults.initialize_schema, defaults.ttl) == ("always", None)
    assert (defaults.keyspace, defaults.table_name, defaults.messages_column) == (
        "springframework",
        "ai_chat_memory",
        "messages",
    )
    missing = SpringAiCassandraChatMemoryRepository(
        session, keyspace=f"absent_{unique_suffix()}", initialize_schema="never"
    )
    with pytest.raises(SchemaError, match="keyspace absent_"):
        missing.find_by_conversation_id("c")
    ttl = SpringAiCassandraChatMemoryRepository(
        session, ttl=timedelta(days=2), initialize_schema="never"
    )
    assert ttl.schema_statements()[-1].endswith("AND default_time_to_live = 172800")


def test_layout_is_chosen_by_name(server: ServerInfo, node: Harness) -> None:
    with CassandraChatMemoryRepository.from_url(
        _url(server), layout="spring-ai", initialize_schema="never"
    ) as r:
        assert isinstance(r, SpringAiCassandraChatMemoryRepository)
        assert r.config.keyspace == SPRING_AI_KEYSPACE and r.config.table_name == "ai_chat_memory"
    with pytest.raises(InvalidArgumentError, match="layout"):
        CassandraChatMemoryRepository.from_url(_url(server), layout="spring")


def test_the_async_twin_shares_the_table(server: ServerInfo, node: Harness) -> None:
    c = cid("async")

    async def run() -> list[Message]:
        async with await AsyncSpringAiCassandraChatMemoryRepository.from_url(
            _url(server), initialize_schema="never"
        ) as r:
            await r.save_all(c, [SystemMessage("s"), UserMessage("u")])
            await r.append(c, AssistantMessage("a"))
            return await r.find_by_conversation_id(c)

    log = asyncio.run(run())
    (read,) = node([{"op": "read", "cid": c}])
    same_ms(read, as_spring(log))
    assert [m["type"] for m in read] == ["SYSTEM", "USER", "ASSISTANT"]


def test_chatmem_schema_prints_springs_cql_for_the_layout(server: ServerInfo) -> None:
    """``chatmem schema --url ...&layout=spring-ai`` exports Spring's CQL (no connection)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "chatmem.core._cli",
            "schema",
            "--url",
            f"{_url(server)}&layout=spring-ai",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "springframework.ai_chat_memory" in out and "frozen<ai_chat_message>" in out
    assert "chat_memory (" not in out.replace("ai_chat_memory (", "")
