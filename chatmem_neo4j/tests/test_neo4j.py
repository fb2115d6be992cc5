"""Neo4j storage: labels (custom and rejected), the graph shape, the indexes the queries use
(checked in the query plans), parts kept in order without duplication, metadata encoding,
locking, trimming, schema initialisation, URLs and errors. Real server only."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import neo4j
import pytest

from chatmem.core import (
    AssistantMessage,
    BackendError,
    BackendUnavailableError,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    InvalidIdentifierError,
    Media,
    MessageWindowChatMemory,
    SchemaError,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    repository_from_url,
)
from chatmem.neo4j import (
    DEFAULT_MEDIA_LABEL,
    DEFAULT_MESSAGE_LABEL,
    DEFAULT_METADATA_LABEL,
    DEFAULT_SESSION_LABEL,
    DEFAULT_TOOL_CALL_LABEL,
    DEFAULT_TOOL_RESPONSE_LABEL,
    Neo4jChatMemoryRepository,
    Neo4jConfig,
    Neo4jUrl,
    parse_url,
)
from chatmem.neo4j._config import LABEL_OPTIONS
from chatmem.neo4j._schema import TRIM_EVERY, TRIM_LIMIT
from chatmem.testing.corpus import FIXED_TS, full_corpus
from chatmem.testing.harness import ServerInfo, free_port, unique_suffix

pytestmark = pytest.mark.backend("neo4j")

Make = Callable[..., Any]
PNG = bytes(range(256))


def driver_of(server: ServerInfo) -> Any:
    return server.extra["driver"]


def cypher(server: ServerInfo, query: str, **params: Any) -> list[Any]:
    records, _, _ = driver_of(server).execute_query(query, params)
    return list(records)


def fresh_labels(prefix: str = "T") -> dict[str, str]:
    suffix = unique_suffix()
    return {option: f"{prefix}{i}_{suffix}" for i, option in enumerate(LABEL_OPTIONS)}


def plan_operators(plan: Any) -> list[str]:
    """Every operator of an EXPLAIN/PROFILE plan with its details, depth first."""
    out = [f"{plan['operatorType']} {plan.get('args', {}).get('Details', '')}"]
    for child in plan.get("children", []):
        out += plan_operators(child)
    return out


def explain(server: ServerInfo, statement: str) -> list[str]:
    summary = driver_of(server).execute_query("EXPLAIN " + statement).summary
    return plan_operators(summary.plan)


def rich_conversation() -> list[Any]:
    """Several media, tool calls and responses on single messages, in a given order."""
    return [
        SystemMessage("sys", media=(Media(mime_type="text/plain", data=b"policy"),)),
        UserMessage(
            "look",
            media=(
                *(
                    Media(mime_type="image/png", data=PNG + bytes([i]), id=f"m{i}", name=f"{i}.png")
                    for i in range(4)
                ),
                Media(mime_type="image/jpeg", data="https://example.com/x.jpg"),
            ),
            metadata={"k": "v"},
        ),
        AssistantMessage(
            "calling",
            tool_calls=tuple(
                ToolCall(id=f"call_{i}", name=f"tool{i}", arguments=f'{{"i": {i}}}')
                for i in (3, 1, 2, 0)
            ),
            media=(
                Media(mime_type="audio/wav", data=b"RIFF"),
                Media(mime_type="image/gif", data=b"GIF89a", name="a.gif"),
            ),
            metadata={"finish_reason": "tool_calls", "usage": {"in": 1, "out": 2}},
        ),
        ToolResponseMessage(
            tuple(
                ToolResponse(id=f"call_{i}", name=f"tool{i}", response_data=f"r{i}")
                for i in (3, 1, 2, 0)
            ),
            media=(Media(mime_type="application/json", data=b"{}"),),
        ),
        AssistantMessage(None, tool_calls=(ToolCall(id="c9", name="only"),)),
    ]


# -- server ---------------------------------------------------------------------------------
def test_server_is_neo4j_5(server: ServerInfo) -> None:
    assert server.product == "Neo4j"
    assert server.version.startswith("5."), server.version
    rows = cypher(server, "CALL dbms.components() YIELD name, versions RETURN versions[0] AS v")
    assert server.version.startswith(rows[0]["v"])


# -- labels ---------------------------------------------------------------------------------
def test_default_labels_are_spring_ais() -> None:
    config = Neo4jConfig()
    assert (
        config.session_label,
        config.message_label,
        config.metadata_label,
        config.tool_call_label,
        config.tool_response_label,
        config.media_label,
    ) == ("Session", "Message", "Metadata", "ToolCall", "ToolResponse", "Media")
    assert (
        DEFAULT_SESSION_LABEL,
        DEFAULT_MESSAGE_LABEL,
        DEFAULT_METADATA_LABEL,
        DEFAULT_TOOL_CALL_LABEL,
        DEFAULT_TOOL_RESPONSE_LABEL,
        DEFAULT_MEDIA_LABEL,
    ) == ("Session", "Message", "Metadata", "ToolCall", "ToolResponse", "Media")
    assert config.initialize_schema == "always" and config.database is None


def test_custom_labels_hold_the_whole_graph(server: ServerInfo, make_repository: Make) -> None:
    labels = fresh_labels("Custom")
    repo = make_repository(**labels)
    repo.save_all("c", rich_conversation())
    counts = {
        option: cypher(server, f"MATCH (n:`{label}`) RETURN count(n) AS c")[0]["c"]
        for option, label in labels.items()
    }
    assert counts == {
        "session_label": 1,
        "message_label": 5,
        "metadata_label": 2,
        "tool_call_label": 5,
        "tool_response_label": 4,
        "media_label": 9,
    }
    # Every node of the conversation carries one of our labels and nothing else.
    rows = cypher(
        server,
        f"MATCH (s:`{labels['session_label']}` {{conversation_id: 'c'}})-[*0..2]->(n) "
        "RETURN DISTINCT labels(n) AS l",
    )
    assert {label for r in rows for label in r["l"]} == set(labels.values())
    assert repo.find_by_conversation_id("c") == rich_conversation()


def test_two_label_sets_are_separate_stores(make_repository: Make) -> None:
    one, two = make_repository(**fresh_labels("A")), make_repository(**fresh_labels("B"))
    one.save_all("same-id", [UserMessage("in one")])
    two.save_all("same-id", [UserMessage("in two")])
    assert [m.text for m in one.find_by_conversation_id("same-id")] == ["in one"]
    assert [m.text for m in two.find_by_conversation_id("same-id")] == ["in two"]
    one.delete_by_conversation_id("same-id")
    assert two.find_conversation_ids() == ["same-id"]


BAD_LABELS: list[object] = [
    "1Session",
    "Session Label",
    "Session-Label",
    "Sess`ion",
    "Sess(ion",
    "Session)",
    "",
    " Session",
    "Session\n",
    "Séance",
    "a:b",
    "x{y}",
    "`",
    None,
    42,
]


@pytest.mark.parametrize("option", LABEL_OPTIONS)
@pytest.mark.parametrize("bad", BAD_LABELS, ids=repr)
def test_rejected_labels_name_the_option_before_any_io(option: str, bad: object) -> None:
    # A driver to a port nobody listens on: any I/O would fail as unavailable instead.
    driver = neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(InvalidIdentifierError) as info:
            Neo4jChatMemoryRepository(driver, **{option: bad})
        assert info.value.argument == option
        assert option in str(info.value)
    finally:
        driver.close()


def test_labels_must_differ() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        Neo4jConfig(session_label="Same", message_label="Same")
    assert info.value.argument == "message_label"


def test_unknown_option_is_named() -> None:
    driver = neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(InvalidArgumentError) as info:
            Neo4jChatMemoryRepository(driver, sesion_label="Typo")
        assert info.value.argument == "sesion_label"
    finally:
        driver.close()


# -- schema and indexes -------------------------------------------------------------------------
def schema_of(server: ServerInfo, labels: dict[str, str]) -> dict[str, Any]:
    ours = set(labels.values())
    indexes = [
        (r["name"], r["type"], tuple(r["labelsOrTypes"] or ()), tuple(r["properties"] or ()))
        for r in cypher(server, "SHOW INDEXES YIELD name, type, labelsOrTypes, properties")
        if set(r["labelsOrTypes"] or ()) & ours
    ]
    constraints = [
        (r["type"], tuple(r["labelsOrTypes"]), tuple(r["properties"]))
        for r in cypher(server, "SHOW CONSTRAINTS YIELD type, labelsOrTypes, properties")
        if set(r["labelsOrTypes"] or ()) & ours
    ]
    return {"indexes": sorted(indexes), "constraints": constraints}


def test_schema_is_exactly_what_the_queries_use(server: ServerInfo, make_repository: Make) -> None:
    labels = fresh_labels("Idx")
    make_repository(**labels)
    shape = schema_of(server, labels)
    session, message = labels["session_label"], labels["message_label"]
    assert shape["constraints"] == [("UNIQUENESS", (session,), ("conversation_id",))]
    assert [(t, lab, props) for _, t, lab, props in shape["indexes"]] == sorted(
        [
            ("RANGE", (session,), ("conversation_id",)),  # backs the uniqueness constraint
            ("RANGE", (message,), ("conversation_id", "position")),
        ]
    )


def test_every_statement_is_planned_on_the_indexes(
    server: ServerInfo, make_repository: Make
) -> None:
    labels = fresh_labels("Plan")
    repo = make_repository(**labels)
    repo.save_all("p", rich_conversation())  # labels, types and keys exist for the planner
    session, message = labels["session_label"], labels["message_label"]
    kinds = ("metadata", "tool_calls", "tool_responses", "media", "system", "single")
    statements = {
        "find": repo.schema.find(),
        "find_last": repo.schema.find_last(),
        "window": repo.schema.load_window(),
        "window_locking": repo.schema.load_window(True),
        "ids": repo.schema.find_ids_page(),
        "delete": repo.schema.delete(),
        "trim": repo.schema.trim(),
    }
    for r in range(len(kinds) + 1):
        for combo in itertools.combinations(kinds, r):
            shape = frozenset(combo)
            statements[f"save{combo}"] = repo.schema.save_all(shape)
            statements[f"append{combo}"] = repo.schema.append(shape)
            statements[f"edit{combo}"] = repo.schema.edit_window(shape)
    for name, statement in statements.items():
        ops = explain(server, statement)
        text = "\n".join(ops)
        assert "AllNodesScan" not in text and "NodeByLabelScan" not in text, (name, text)
        # Every message lookup that is not an expansion from its session seeks the
        # (conversation_id, position) index; every session lookup seeks the constraint.
        for op in ops:
            if op.startswith(("NodeIndexSeek", "NodeIndexScan")):
                assert f"{message}(conversation_id, position)" in op, (name, op)
            if op.startswith("NodeUniqueIndexSeek"):
                assert f"{session}(conversation_id)" in op, (name, op)
    for name in ("find", "find_last", "window", "trim"):
        assert any(
            f"{message}(conversation_id, position)" in op
            for op in explain(server, statements[name])
        ), name
    assert any(f"{session}(conversation_id)" in op for op in explain(server, statements["ids"]))


def test_bounded_reads_touch_only_what_they_return(
    server: ServerInfo, make_repository: Make
) -> None:
    repo = make_repository()
    repo.save_all("big", [SystemMessage("s")] + [UserMessage(f"m{i}") for i in range(3000)])
    for statement, params, rows in [
        (repo.schema.find_last(), {"cid": "big", "n": 20}, 20),
        (repo.schema.load_window(), {"cid": "big", "n": 21}, 22),
    ]:
        summary = (
            driver_of(server)
            .execute_query("PROFILE " + statement, {"cid": params["cid"], "n": params["n"]})
            .summary
        )

        def seeks(plan: Any) -> list[int]:
            own = [plan["args"]["Rows"]] if plan["operatorType"].startswith("NodeIndexSeek") else []
            return own + [x for c in plan.get("children", []) for x in seeks(c)]

        assert sum(seeks(summary.profile)) <= rows + 2, statement
    assert len(repo.find_last("big", 20)) == 20


def test_ids_page_reads_the_constraint_index_in_order(
    server: ServerInfo, make_repository: Make
) -> None:
    repo = make_repository()
    for i in range(30):
        repo.save_all(f"id-{i:02d}", [UserMessage("x")])
    summary = (
        driver_of(server)
        .execute_query("PROFILE " + repo.schema.find_ids_page(), {"after": "id-09", "limit": 6})
        .summary
    )
    ops = plan_operators(summary.profile)
    assert any(op.startswith("NodeUniqueIndexSeekByRange") for op in ops), ops
    assert not any(op.startswith(("Sort", "Top")) for op in ops), ops
    page = repo.find_conversation_ids_page(limit=5, after="id-09")
    assert page.ids == [f"id-{i}" for i in range(10, 15)] and page.next_after == "id-14"


def test_no_ddl_without_initialize_schema(server: ServerInfo, make_repository: Make) -> None:
    labels = fresh_labels("NoDdl")
    repo = make_repository(**labels, initialize_schema="never")
    assert schema_of(server, labels) == {"indexes": [], "constraints": []}
    assert len(repo.schema_statements()) == 2
    assert all("IF NOT EXISTS" in s for s in repo.schema_statements())
    with pytest.raises(SchemaError, match="create_schema"):
        repo.append("never", UserMessage("refused"))  # no session node without the constraint
    assert schema_of(server, labels) == {"indexes": [], "constraints": []}
    repo.create_schema()
    repo.create_schema()  # idempotent
    assert len(schema_of(server, labels)["indexes"]) == 2
    repo.append("never", UserMessage("now stored"))
    assert [m.text for m in repo.find_by_conversation_id("never")] == ["now stored"]


def test_schema_statements_for_url_need_no_server() -> None:
    ddl = Neo4jChatMemoryRepository.schema_statements_for_url(
        "bolt://127.0.0.1:1", session_label="S1", message_label="M1"
    )
    assert len(ddl) == 2 and "`S1`" in ddl[0] and "`M1`" in ddl[1]


def test_concurrent_schema_initialisation_is_race_safe(
    server: ServerInfo, make_repository: Make
) -> None:
    labels = fresh_labels("Race")
    barrier = threading.Barrier(5)
    repos: list[Any] = []

    def build() -> None:
        barrier.wait(timeout=60)
        repos.append(make_repository(**labels))

    threads = [threading.Thread(target=build) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(repos) == 5
    assert len(schema_of(server, labels)["indexes"]) == 2


# -- parts, order and encoding ------------------------------------------------------------------
def test_several_media_tool_calls_and_responses_come_back_once_in_order(
    repository: Any,
) -> None:
    conversation = rich_conversation()
    repository.save_all("rich", conversation)
    repository.append("rich", conversation)
    back = repository.find_by_conversation_id("rich")
    assert back == conversation + conversation
    assert [len(m.media) for m in back[:5]] == [1, 5, 2, 1, 0]
    assert [c.id for c in back[2].tool_calls] == ["call_3", "call_1", "call_2", "call_0"]
    assert [r.id for r in back[3].responses] == ["call_3", "call_1", "call_2", "call_0"]
    assert repository.find_last("rich", 4) == conversation[1:]
    memory = MessageWindowChatMemory(repository, max_messages=100)
    assert memory.get("rich") == conversation + conversation


def test_graph_shape(server: ServerInfo, repository: Any) -> None:
    repository.save_all("g", rich_conversation())
    c = repository.config
    rows = cypher(
        server,
        f"MATCH (s:`{c.session_label}` {{conversation_id: 'g'}})"
        f"-[:HAS_MESSAGE]->(m:`{c.message_label}`) "
        "RETURN m.position AS p, m.type AS t, m.conversation_id AS cid, "
        f"COUNT {{ (m)-[:HAS_TOOL_CALL]->(:`{c.tool_call_label}`) }} AS calls, "
        f"COUNT {{ (m)-[:HAS_TOOL_RESPONSE]->(:`{c.tool_response_label}`) }} AS responses, "
        f"COUNT {{ (m)-[:HAS_MEDIA]->(:`{c.media_label}`) }} AS media, "
        f"COUNT {{ (m)-[:HAS_METADATA]->(:`{c.metadata_label}`) }} AS md ORDER BY p",
    )
    assert [(r["p"], r["t"], r["cid"]) for r in rows] == [
        (0, "SYSTEM", "g"),
        (1, "USER", "g"),
        (2, "ASSISTANT", "g"),
        (3, "TOOL", "g"),
        (4, "ASSISTANT", "g"),
    ]
    assert [(r["calls"], r["responses"], r["media"], r["md"]) for r in rows] == [
        (0, 0, 1, 0),
        (0, 0, 5, 1),
        (4, 0, 2, 1),
        (0, 4, 1, 0),
        (1, 0, 0, 0),
    ]
    media = cypher(
        server,
        f"MATCH (:`{c.message_label}` {{conversation_id: 'g', position: 1}})-[:HAS_MEDIA]->(x) "
        "RETURN x.idx AS i, x.data AS data, x.uri AS uri ORDER BY i",
    )
    assert media[0]["data"] == PNG + b"\x00" and media[4]["uri"] == "https://example.com/x.jpg"


def test_metadata_properties_and_encoded_values(server: ServerInfo, repository: Any) -> None:
    metadata = {
        "model": "m-1",
        "n": 3,
        "f": 2.0,
        "ok": True,
        "tags": ["a", "b"],
        "ints": [1, 2],
        "empty": [],
        "none": None,
        "nested": {"a": [1, {"b": None}]},
        "mixed": [1, 2.5],
        "huge": 2**70,
        "": "empty key",
        "with space`and(quote": "x",
        "bools": [True, 1],
    }
    repository.save_all("md", [AssistantMessage("x", metadata=metadata)])
    back = repository.find_by_conversation_id("md")[0].metadata
    assert dict(back) == metadata and list(back) == list(metadata)
    assert type(back["mixed"][0]) is int and type(back["huge"]) is int
    c = repository.config
    row = cypher(
        server,
        f"MATCH (m:`{c.message_label}` {{conversation_id: 'md'}})-[r:HAS_METADATA]->(x) "
        "RETURN properties(x) AS node, r.key_order AS key_order, r.encoded AS encoded",
    )[0]
    # Native where Neo4j can hold the value, so Cypher can filter on it.
    assert row["node"] == {
        "model": "m-1",
        "n": 3,
        "f": 2.0,
        "ok": True,
        "tags": ["a", "b"],
        "ints": [1, 2],
        "empty": [],
        "with space`and(quote": "x",
    }
    assert row["key_order"] == list(metadata)
    assert set(json.loads(row["encoded"])) == {
        "none",
        "nested",
        "mixed",
        "huge",
        "",
        "bools",
    }
    hits = cypher(
        server,
        f"MATCH (m:`{c.message_label}`)-[:HAS_METADATA]->(x:`{c.metadata_label}` {{model: 'm-1'}}) "
        "RETURN count(m) AS c",
    )
    assert hits[0]["c"] == 1


def test_full_corpus_and_created_at_as_native_datetime(server: ServerInfo, repository: Any) -> None:
    corpus = [m.with_store_fields(created_at=FIXED_TS, position=None) for m in full_corpus()]
    repository.save_all("ts", corpus)
    back = repository.find_by_conversation_id("ts")
    assert back == corpus and all(m.created_at == FIXED_TS for m in back)
    c = repository.config
    value = cypher(
        server,
        f"MATCH (m:`{c.message_label}` {{conversation_id: 'ts', position: 0}}) "
        "RETURN m.created_at AS t",
    )[0]["t"]
    assert isinstance(value, neo4j.time.DateTime) and value.to_native() == FIXED_TS


def test_pre_epoch_timestamps_are_exact(repository: Any) -> None:
    from datetime import datetime, timezone

    old = datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=timezone.utc)
    repository.save_all("old", [UserMessage("x", created_at=old)])
    assert repository.find_by_conversation_id("old")[0].created_at == old


# -- locking and isolation ----------------------------------------------------------------------
def test_readers_wait_for_a_writer_holding_the_session_lock(
    server: ServerInfo, repository: Any
) -> None:
    repository.save_all("lock", [UserMessage("old")])
    from chatmem.neo4j._codec import message_params, shape_of

    batch = [
        message_params(m.with_store_fields(created_at=FIXED_TS, position=None))
        for m in [UserMessage("new1"), UserMessage("new2")]
    ]
    seen: list[list[str]] = []
    with driver_of(server).session() as session:
        tx = session.begin_transaction()
        tx.run(repository.schema.save_all(shape_of(batch)), cid="lock", messages=batch).consume()
        reader = threading.Thread(
            target=lambda: seen.append([m.text for m in repository.find_by_conversation_id("lock")])
        )
        reader.start()
        time.sleep(1.0)
        assert reader.is_alive() and not seen, "a reader ran while the replace was uncommitted"
        tx.commit()
        reader.join(30)
    assert seen == [["new1", "new2"]]


def test_concurrent_appends_get_distinct_positions(repository: Any) -> None:
    threads = [
        threading.Thread(
            target=lambda w=w: [repository.append("c", UserMessage(f"{w}:{i}")) for i in range(25)]
        )
        for w in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    positions = [m.position for m in repository.find_by_conversation_id("c")]
    assert positions == list(range(150))


# -- window trimming ----------------------------------------------------------------------------
def test_window_adds_keep_the_stored_log_bounded(server: ServerInfo, repository: Any) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=10)
    reference = MessageWindowChatMemory(InMemoryChatMemoryRepository(), max_messages=10)
    for m in [SystemMessage("rules")] + [
        UserMessage(f"u{i}") if i % 2 == 0 else AssistantMessage(f"a{i}") for i in range(400)
    ]:
        memory.add("w", m)
        reference.add("w", m)
    stored = repository.find_by_conversation_id("w")
    assert len(stored) <= 1 + 11 + TRIM_EVERY * 11
    assert isinstance(stored[0], SystemMessage) and stored[-1].text == "a399"
    assert memory.get("w") == reference.get("w")
    c = repository.config
    orphans = cypher(
        server,
        f"MATCH (x) WHERE (x:`{c.media_label}` OR x:`{c.metadata_label}`) "
        "AND NOT EXISTS { ()-->(x) } RETURN count(x) AS c",
    )
    assert orphans[0]["c"] == 0


def test_an_overlong_history_shrinks_as_the_window_is_used(repository: Any) -> None:
    repository.save_all("long", [UserMessage(f"m{i}") for i in range(2000)])
    memory = MessageWindowChatMemory(repository, max_messages=20)
    for i in range(200):
        memory.add("long", UserMessage(f"n{i}"))
    stored = len(repository.find_by_conversation_id("long"))
    trimmed = 2000 + 200 - stored
    assert trimmed >= (200 // (TRIM_EVERY * 21)) * (TRIM_LIMIT - TRIM_EVERY) * 21
    assert [m.text for m in memory.get("long")][-1] == "n199"


# -- URLs, databases, errors --------------------------------------------------------------------
def test_from_url_owns_and_closes_its_driver(server: ServerInfo) -> None:
    labels = fresh_labels("Url")
    assert server.url is not None
    repo = Neo4jChatMemoryRepository.from_url(server.url, **labels)
    try:
        repo.save_all("u", [UserMessage("hi")])
        assert [m.text for m in repo.find_by_conversation_id("u")] == ["hi"]
        other = repository_from_url(server.url.replace("bolt://", "neo4j://"), **labels)
        assert isinstance(other, Neo4jChatMemoryRepository)
        assert [m.text for m in other.find_by_conversation_id("u")] == ["hi"]
        other.close()
    finally:
        repo.delete_by_conversation_id("u")
        for statement in repo.schema.drop_ddl():
            driver_of(server).execute_query(statement)
        repo.close()
    with pytest.raises(BackendError):
        repo.find_by_conversation_id("u")  # its own driver is closed


def test_a_callers_driver_is_never_closed(server: ServerInfo, make_repository: Make) -> None:
    with make_repository() as repo:
        repo.save_all("x", [UserMessage("y")])
    assert driver_of(server).execute_query("RETURN 1 AS one").records[0]["one"] == 1


def test_urls_are_split_into_uri_and_credentials() -> None:
    assert parse_url("neo4j://neo4j:p%40ss@db.example:7687") == Neo4jUrl(
        "neo4j://db.example:7687", "neo4j", "p@ss"
    )
    assert parse_url("bolt+s://h") == Neo4jUrl("bolt+s://h", None, None)
    assert parse_url("neo4j://u@[::1]:7687?policy=x").uri == "neo4j://[::1]:7687?policy=x"


def test_credentials_in_the_url_reach_the_server(server: ServerInfo) -> None:
    assert server.url is not None
    host_port = server.url.split("://", 1)[1].split("@")[-1]
    repo = Neo4jChatMemoryRepository.from_url(f"bolt://neo4j:p%40ss@{host_port}")
    try:  # the test server has auth off, so any credentials are accepted
        assert repo.find_by_conversation_id("none") == []
    finally:
        repo.close()


@pytest.mark.parametrize("url", ["http://host:7474", "neo4j://", "not a url", 7687])
def test_bad_urls_are_rejected(url: object) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        Neo4jChatMemoryRepository.from_url(url)  # type: ignore[arg-type]
    assert info.value.argument == "url"


def test_database_option(server: ServerInfo, make_repository: Make) -> None:
    repo = make_repository(database="neo4j")
    repo.save_all("db", [UserMessage("x")])
    assert repo.find_conversation_ids() == ["db"]
    if server.extra.get("edition") == "community":
        with pytest.raises(BackendError) as info:  # the default checks the schema at once
            Neo4jChatMemoryRepository(driver_of(server), database="nosuchdb")
        assert isinstance(info.value.__cause__, neo4j.exceptions.Neo4jError)
        bad = Neo4jChatMemoryRepository(
            driver_of(server), database="nosuchdb", initialize_schema="never"
        )
        with pytest.raises(BackendError) as info:
            bad.find_by_conversation_id("db")
        assert isinstance(info.value.__cause__, neo4j.exceptions.Neo4jError)


def test_unreachable_server_is_backend_unavailable() -> None:
    driver = neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{free_port()}", connection_timeout=2)
    try:
        with pytest.raises(BackendUnavailableError) as info:  # the default creates the schema
            Neo4jChatMemoryRepository(driver)
        assert isinstance(info.value.__cause__, neo4j.exceptions.ServiceUnavailable)
        repo = Neo4jChatMemoryRepository(driver, initialize_schema="never")
        with pytest.raises(BackendUnavailableError) as info:
            repo.find_by_conversation_id("x")
        assert isinstance(info.value.__cause__, neo4j.exceptions.ServiceUnavailable)
    finally:
        driver.close()


def test_injection_attempts_are_plain_values(repository: Any) -> None:
    evil = "x'}) MATCH (n) DETACH DELETE n //"
    repository.save_all(evil, [UserMessage(evil, metadata={evil: evil})])
    assert repository.find_by_conversation_id(evil)[0].metadata == {evil: evil}
    assert repository.find_conversation_ids() == [evil]


def test_driver_options_reach_the_driver(server: ServerInfo) -> None:
    assert server.url is not None
    repo = Neo4jChatMemoryRepository.from_url(
        server.url, driver_options={"connection_timeout": 4.5, "max_transaction_retry_time": 3.0}
    )
    try:
        assert repo._driver._pool.pool_config.connection_timeout == 4.5
        assert repo.find_by_conversation_id("none") == []
    finally:
        repo.close()
    with pytest.raises(InvalidArgumentError) as info:
        Neo4jChatMemoryRepository.from_url(server.url, driver_options=["x"])  # type: ignore[arg-type]
    assert info.value.argument == "driver_options"
