"""Cassandra storage: schema shape, prepared statements and round trips, TTL, names,
replication, schema switches, guards shared by several clients, URLs and errors."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from cassandra.query import BatchStatement, BoundStatement

from chatmem.cassandra import (
    DEFAULT_KEYSPACE,
    DEFAULT_REPLICATION,
    DEFAULT_TABLE_NAME,
    CassandraChatMemoryRepository,
    CassandraConfig,
    NetworkTopologyStrategy,
    SimpleStrategy,
    parse_url,
    schema_cql,
)
from chatmem.cassandra._native.policies import LWT_RETRY_POLICY, is_conditional
from chatmem.cassandra._sync.transactions import GONE_AFTER
from chatmem.core import (
    AssistantMessage,
    BackendUnavailableError,
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
)
from chatmem.core.backend import from_micros
from chatmem.testing.harness import ServerInfo, free_port, unique_suffix

pytestmark = pytest.mark.backend("cassandra")

Make = Callable[..., Any]


def session_of(server: ServerInfo) -> Any:
    return server.extra["session"]


def raw(server: ServerInfo, repo: Any, cql: str, *params: Any) -> list[Any]:
    c = repo.config
    table = f'"{c.keyspace}"."{c.table_name}"'
    return list(session_of(server).execute(cql.replace("{t}", table), params))


@contextmanager
def requests(server: ServerInfo) -> Iterator[list[Any]]:
    """Every statement the session sends inside the block."""
    seen: list[Any] = []
    session = session_of(server)

    def listener(future: Any) -> None:
        seen.append(future.query)

    session.add_request_init_listener(listener)
    try:
        yield seen
    finally:
        session.remove_request_init_listener(listener)


def cql_of(statement: Any) -> str:
    if isinstance(statement, BoundStatement):
        return str(statement.prepared_statement.query_string)
    if isinstance(statement, BatchStatement):
        return "BATCH"
    return str(statement)


EVERY_KIND = [
    SystemMessage("be brief", metadata={"v": 1}),
    UserMessage(
        "look",
        metadata={"n": 3, "f": 1.5, "b": True, "s": "x", "l": [1, "a"], "d": {"k": None}},
        media=(
            Media(mime_type="image/png", data=b"\x00\x01\xff", id="m1", name="pic"),
            Media(mime_type="text/uri-list", data="https://example.com/a.png"),
        ),
    ),
    AssistantMessage(
        None,
        tool_calls=(ToolCall(id="c1", name="lookup", arguments='{"q": "x"}', type="function"),),
    ),
    ToolResponseMessage((ToolResponse(id="c1", name="lookup", response_data='{"r": 42}'),)),
    AssistantMessage("done", metadata={"model": "m"}),
]


# -- schema and storage shape ------------------------------------------------------------
def test_partition_per_conversation_clustered_by_position_newest_first(
    repository: Any, server: ServerInfo
) -> None:
    c = repository.config
    cols = {
        r.column_name: (r.kind, r.clustering_order, r.type)
        for r in session_of(server).execute(
            "SELECT column_name, kind, clustering_order, type FROM system_schema.columns "
            "WHERE keyspace_name = %s AND table_name = %s",
            (c.keyspace, c.table_name),
        )
    }
    assert cols["conversation_id"] == ("partition_key", "none", "text")
    assert cols["position"] == ("clustering", "desc", "bigint")
    assert cols["next_position"][0] == cols["origin"][0] == cols["system_messages"][0] == "static"
    assert {"message_type", "content", "created_at"} <= set(cols)


def test_every_field_of_every_kind_is_stored_and_read_back(
    repository: Any, server: ServerInfo
) -> None:
    repository.save_all("k", EVERY_KIND)
    back = repository.find_by_conversation_id("k")
    assert back == EVERY_KIND
    assert [m.position for m in back] == [0, 1, 2, 3, 4]
    rows = raw(
        server,
        repository,
        "SELECT position, message_type, content FROM {t} WHERE conversation_id = %s",
        "k",
    )
    assert [r.message_type for r in rows] == ["ASSISTANT", "TOOL", "ASSISTANT", "USER"]
    assert '"tool_calls"' in rows[2].content and '"data_b64"' in rows[3].content
    (static,) = raw(
        server,
        repository,
        "SELECT DISTINCT conversation_id, system_messages FROM {t} WHERE conversation_id = %s",
        "k",
    )
    ((_, (_, content)),) = static.system_messages.items()
    assert '"be brief"' in content


def test_created_at_keeps_microseconds(repository: Any, server: ServerInfo) -> None:
    ts = from_micros(1_700_000_000_123_457)
    repository.save_all("t", [UserMessage("u", created_at=ts), SystemMessage("s", created_at=ts)])
    assert [m.created_at for m in repository.find_by_conversation_id("t")] == [ts, ts]
    (row,) = raw(server, repository, "SELECT created_at FROM {t} WHERE conversation_id = %s", "t")
    assert row.created_at == 1_700_000_000_123_457


def test_every_statement_is_prepared_and_the_window_costs_one_read_and_one_write(
    repository: Any, server: ServerInfo
) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=20)
    memory.add("p", UserMessage("warm up"))
    with requests(server) as seen:
        memory.add("p", UserMessage("hello"))
        memory.add("p", AssistantMessage("hi"))
        window = memory.get("p")
    assert [m.text for m in window] == ["warm up", "hello", "hi"]
    assert [type(s) for s in seen] == [BatchStatement, BatchStatement, BoundStatement]
    read = cql_of(seen[2])
    assert "LIMIT ?" in read and "ORDER BY" not in read  # clustering order is newest first


def test_every_write_is_one_batch_of_prepared_statements(
    repository: Any, server: ServerInfo
) -> None:
    repository.save_all("g", [UserMessage("a"), SystemMessage("s")])
    with requests(server) as seen:
        repository.save_all("g", [UserMessage("a"), SystemMessage("s")])
        repository.append("g", UserMessage("b"))
        MessageWindowChatMemory(repository, max_messages=5).add("g", SystemMessage("s2"))
        repository.delete_by_conversation_id("g")
    # the window add with a new system message reads its source first (one bounded read)
    assert [type(s) for s in seen] == [
        BatchStatement,
        BatchStatement,
        BoundStatement,
        BatchStatement,
        BatchStatement,
    ]
    # every write is a lightweight transaction: never resent after a lost coordinator
    assert all(s.retry_policy is LWT_RETRY_POLICY for s in seen if isinstance(s, BatchStatement))


def test_a_lightweight_transaction_is_never_resent_after_a_connection_error() -> None:
    """A coordinator lost mid-request may have applied it: resending would find our own
    write, not apply, and make the repository write the messages twice."""
    from cassandra import ConsistencyLevel
    from cassandra.connection import ConnectionShutdown
    from cassandra.policies import RetryPolicy
    from cassandra.protocol import OverloadedErrorMessage

    q = ConsistencyLevel.LOCAL_QUORUM
    lost = ConnectionShutdown("connection to 127.0.0.2 was closed")
    assert LWT_RETRY_POLICY.on_request_error(None, q, lost, 0) == (RetryPolicy.RETHROW, None)
    overloaded = OverloadedErrorMessage(0x1001, "overloaded", {})  # rejected: nothing ran
    default = RetryPolicy().on_request_error(None, q, overloaded, 0)
    assert LWT_RETRY_POLICY.on_request_error(None, q, overloaded, 0) == default
    assert default[0] == RetryPolicy.RETRY_NEXT_HOST
    assert is_conditional("UPDATE t SET a = ? WHERE k = ? IF a = ?")
    assert is_conditional("INSERT INTO t (k) VALUES (?) IF NOT EXISTS")
    assert not is_conditional('SELECT "if" FROM t WHERE k = ?')


def test_the_log_stays_bounded_under_window_adds(repository: Any, server: ServerInfo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=6)
    for i in range(40):
        memory.add("b", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    assert [m.text for m in memory.get("b")] == ["u37", "a37", "u38", "a38", "u39", "a39"]
    rows = raw(server, repository, "SELECT position FROM {t} WHERE conversation_id = %s", "b")
    assert len(rows) <= 7


def test_a_new_conversation_reads_positions_from_zero_after_delete(repository: Any) -> None:
    repository.append("z", [UserMessage("a"), UserMessage("b")])
    repository.delete_by_conversation_id("z")
    repository.append("z", UserMessage("c"))
    assert [(m.position, m.text) for m in repository.find_by_conversation_id("z")] == [(0, "c")]


def test_listing_reads_partition_keys_only_with_an_opaque_token_cursor(
    repository: Any, server: ServerInfo
) -> None:
    ids = {f"c{i}" for i in range(23)} | {"A", "a", "a ", "naïve", "x,y*"}
    for cid in ids:
        repository.append(cid, UserMessage("m"))
    with requests(server) as seen:
        pages, after = [], None
        while True:
            page = repository.find_conversation_ids_page(limit=5, after=after)
            pages.append(page.ids)
            if page.next_after is None:
                break
            assert isinstance(page.next_after, str)
            after = page.next_after
    listed = [cid for p in pages for cid in p]
    assert sorted(listed) == sorted(ids) and all(len(p) <= 5 for p in pages)
    for statement in seen:
        cql = cql_of(statement)
        assert cql.startswith("SELECT DISTINCT") and "token(" in cql and "content" not in cql
    with pytest.raises(InvalidArgumentError):
        repository.find_conversation_ids_page(limit=5, after="not a cursor")


def test_any_row_factory_works(server: ServerInfo, harness: Any) -> None:
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy
    from cassandra.query import dict_factory

    port = int(str(server.url).split(":")[2].split("/")[0])
    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy(["127.0.0.1"]), row_factory=dict_factory
    )
    cluster = Cluster(["127.0.0.1"], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    try:
        session = cluster.connect()
        repo = CassandraChatMemoryRepository(
            session, keyspace=server.extra["keyspace"], table_name=f"t_{unique_suffix()}"
        )
        other = harness.make_repository(server, table_name=repo.config.table_name)
        repo.save_all("d", EVERY_KIND)
        other.append("d", UserMessage("from another client"))  # repo's guard is now stale
        repo.append("d", UserMessage("again"))
        assert repo.find_by_conversation_id("d")[-2:] == [
            UserMessage("from another client"),
            UserMessage("again"),
        ]
        assert repo.find_conversation_ids() == ["d"]
        harness.cleanup(server, repo)
    finally:
        cluster.shutdown()


def test_stale_guards_of_other_clients_never_lose_or_trim_wrong_rows(
    repository: Any, harness: Any, server: ServerInfo
) -> None:
    other = harness.make_repository(server, table_name=repository.config.table_name)
    mine, theirs = (MessageWindowChatMemory(r, max_messages=4) for r in (repository, other))
    mine.add("s", [UserMessage("u0"), AssistantMessage("a0")])
    theirs.add("s", [UserMessage("u1"), AssistantMessage("a1")])
    mine.add("s", [UserMessage("u2"), AssistantMessage("a2")])
    assert [m.text for m in theirs.get("s")] == ["u1", "a1", "u2", "a2"]
    other.save_all("s", [UserMessage("x")])
    mine.add("s", AssistantMessage("y"))
    assert [m.text for m in repository.find_by_conversation_id("s")] == ["x", "y"]
    other.delete_by_conversation_id("s")
    mine.add("s", UserMessage("fresh"))
    assert [(m.position, m.text) for m in theirs.get("s")] == [(0, "fresh")]


# -- TTL -------------------------------------------------------------------------------------
def ttls(server: ServerInfo, repo: Any, cid: str) -> list[int]:
    rows = raw(
        server,
        repo,
        "SELECT ttl(content) AS r, ttl(next_position) AS s FROM {t} WHERE conversation_id = %s",
        cid,
    )
    return [v for r in rows for v in (r.r, r.s)]


def test_ttl_is_applied_on_every_write_to_every_row(
    make_repository: Make, server: ServerInfo
) -> None:
    repo = make_repository(ttl=timedelta(minutes=10))
    memory = MessageWindowChatMemory(repo, max_messages=10)
    memory.add("t", [SystemMessage("s"), UserMessage("u"), AssistantMessage("a")])
    repo.append("t", UserMessage("plain append"))
    repo.save_all("t2", [UserMessage("saved")])
    for cid in ("t", "t2"):
        values = ttls(server, repo, cid)
        assert values and all(590 <= v <= 600 for v in values), values
    (static,) = raw(
        server, repo, "SELECT ttl(origin) AS o FROM {t} WHERE conversation_id = %s LIMIT 1", "t"
    )
    assert 590 <= static.o <= 600


def test_every_row_kept_shares_one_expiry_so_no_orphan_tool_result_is_left(
    make_repository: Make, server: ServerInfo
) -> None:
    repo = make_repository(ttl=timedelta(seconds=30))
    memory = MessageWindowChatMemory(repo, max_messages=4)
    memory.add(
        "o", [UserMessage("q"), AssistantMessage(None, tool_calls=(ToolCall(id="1", name="f"),))]
    )
    time.sleep(2.2)
    memory.add("o", ToolResponseMessage((ToolResponse(id="1", name="f", response_data="r"),)))
    values = ttls(server, repo, "o")
    assert max(values) - min(values) <= 1, values


def test_a_ttl_set_later_takes_effect_on_an_existing_table(
    make_repository: Make, server: ServerInfo
) -> None:
    plain = make_repository()
    plain.save_all("l", [UserMessage("old"), AssistantMessage("old")])
    assert ttls(server, plain, "l") == [None] * 4
    expiring = make_repository(
        table_name=plain.config.table_name, ttl=timedelta(seconds=2), initialize_schema="never"
    )
    MessageWindowChatMemory(expiring, max_messages=10).add("l", UserMessage("new"))
    assert all(v is not None and v <= 2 for v in ttls(server, plain, "l"))
    time.sleep(3.2)
    assert plain.find_by_conversation_id("l") == []


# -- names, replication, schema switches --------------------------------------------------------
def test_defaults() -> None:
    c = CassandraConfig()
    assert (c.keyspace, c.table_name, c.ttl, c.initialize_schema) == (
        DEFAULT_KEYSPACE,
        DEFAULT_TABLE_NAME,
        None,
        "always",
    )
    assert c.replication == DEFAULT_REPLICATION == SimpleStrategy(1)
    assert "'replication_factor': '1'" in schema_cql(c)[0]


def test_configured_names_are_used_quoted(make_repository: Make, server: ServerInfo) -> None:
    names = {
        "keyspace": f"Ks_{unique_suffix()}",
        "table_name": "Memory",
        "conversation_id_column": "Session",
        "position_column": "select",  # a reserved word works quoted
        "message_type_column": "kind",
        "content_column": "body",
        "created_at_column": "ts",
        "next_position_column": "nxt",
        "origin_column": "org",
        "system_messages_column": "systems",
    }
    repo = make_repository(**names)
    repo.save_all("n", EVERY_KIND)
    assert repo.find_by_conversation_id("n") == EVERY_KIND
    assert repo.find_conversation_ids() == ["n"]
    columns = {
        r.column_name
        for r in session_of(server).execute(
            "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND "
            "table_name = %s",
            (names["keyspace"], "Memory"),
        )
    }
    assert columns == {v for k, v in names.items() if k not in ("keyspace", "table_name")}


def replication_of(server: ServerInfo, keyspace: str) -> dict[str, str]:
    row = (
        session_of(server)
        .execute(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
        )
        .one()
    )
    return dict(row.replication)


def test_created_keyspace_uses_simple_strategy_by_default(
    make_repository: Make, server: ServerInfo
) -> None:
    keyspace = f"ks_{unique_suffix()}"
    make_repository(keyspace=keyspace)
    got = replication_of(server, keyspace)
    assert got["class"].endswith("SimpleStrategy") and got["replication_factor"] == "1"


def test_network_topology_strategy_is_supported(make_repository: Make, server: ServerInfo) -> None:
    keyspace = f"ks_{unique_suffix()}"
    repo = make_repository(
        keyspace=keyspace, replication=NetworkTopologyStrategy({"datacenter1": 1})
    )
    got = replication_of(server, keyspace)
    assert got["class"].endswith("NetworkTopologyStrategy") and got["datacenter1"] == "1"
    repo.save_all("r", [UserMessage("replicated")])
    assert repo.find_by_conversation_id("r") == [UserMessage("replicated")]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("table_name", "bad-name"),
        ("table_name", "1abc"),
        ("table_name", 'x"; DROP TABLE y; --'),
        ("table_name", ""),
        ("table_name", "a" * 49),
        ("table_name", None),
        ("keyspace", "key space"),
        ("keyspace", "_leading"),
        ("conversation_id_column", "a.b"),
        ("content_column", "naïve"),
        ("position_column", "conversation_id"),  # duplicate of another column
    ],
)
def test_invalid_names_are_rejected_before_any_io(
    option: str, value: Any, server: ServerInfo
) -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        CassandraChatMemoryRepository(session_of(server), **{option: value})
    assert info.value.argument in (option, "columns")


def test_bad_replication_is_rejected() -> None:
    for bad in (
        lambda: SimpleStrategy(0),
        lambda: NetworkTopologyStrategy({"dc'1": 3}),
        lambda: NetworkTopologyStrategy({"dc1": 0}),
        lambda: NetworkTopologyStrategy({}),
        lambda: CassandraConfig(replication={"class": "SimpleStrategy"}),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidArgumentError):
            bad()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("ttl", timedelta(milliseconds=500)),
        ("ttl", timedelta(days=365 * 21)),
        ("ttl", 60),
        ("initialize_schema", "yes"),
        ("consistency", "MOST"),
        ("serial_consistency", "QUORUM"),
        ("fetch_size", 0),
    ],
)
def test_bad_options_are_rejected(option: str, value: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        CassandraConfig(**{option: value})


def test_initialize_schema_false_creates_nothing_and_fails_clearly(server: ServerInfo) -> None:
    table = f"t_{unique_suffix()}"
    repo = CassandraChatMemoryRepository(
        session_of(server),
        keyspace=server.extra["keyspace"],
        table_name=table,
        initialize_schema="never",
    )
    with pytest.raises(SchemaError, match="initialize_schema") as info:
        repo.find_by_conversation_id("x")
    assert "create_schema()" in str(info.value) and table in str(info.value)
    tables = {
        r.table_name
        for r in session_of(server).execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s",
            (server.extra["keyspace"],),
        )
    }
    assert table not in tables


def test_a_table_of_another_shape_is_a_schema_error(server: ServerInfo) -> None:
    session = session_of(server)
    table = f"t_{unique_suffix()}"
    ks = server.extra["keyspace"]
    session.execute(f'CREATE TABLE "{ks}"."{table}" (conversation_id text PRIMARY KEY, x int)')
    try:
        with pytest.raises(SchemaError, match="position"):
            CassandraChatMemoryRepository(session, keyspace=ks, table_name=table)
    finally:
        session.execute(f'DROP TABLE "{ks}"."{table}"')


def test_a_table_loaded_without_its_columns_is_reloaded_not_called_wrong(
    repository: Any, server: ServerInfo
) -> None:
    # the driver reads tables and columns with separate queries; a table another process
    # created between the two shows no columns (seen in CI with four cold processes)
    c = repository.config
    metadata = session_of(server).cluster.metadata
    metadata.keyspaces[c.keyspace].tables[c.table_name].columns.clear()
    again = CassandraChatMemoryRepository(
        session_of(server), keyspace=c.keyspace, table_name=c.table_name
    )
    assert again.config.table_name == c.table_name
    assert c.conversation_id_column in metadata.keyspaces[c.keyspace].tables[c.table_name].columns


def test_a_table_missing_from_stale_metadata_is_not_taken_for_dropped(
    make_repository: Make, server: ServerInfo
) -> None:
    # after a "table does not exist" from a node that lags, the driver's metadata may lack
    # the table too (refreshed from such a node, seen on 3 nodes): reloaded, not dropped
    repo = make_repository()
    c = repo.config
    metadata = session_of(server).cluster.metadata
    long_ago = time.monotonic() - GONE_AFTER
    del metadata.keyspaces[c.keyspace].tables[c.table_name]
    assert repo._table_gone(long_ago) is False
    assert c.table_name in metadata.keyspaces[c.keyspace].tables
    metadata.keyspaces[c.keyspace].tables[c.table_name].columns.clear()
    assert repo._table_gone(long_ago) is False
    session_of(server).execute(f'DROP TABLE "{c.keyspace}"."{c.table_name}"')
    assert repo._table_gone(time.monotonic()) is False  # not believed before GONE_AFTER
    assert repo._table_gone(long_ago) is True


def test_a_table_that_even_reloaded_metadata_lacks_for_a_moment_is_waited_for(
    make_repository: Make, server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CI, 3 nodes, cold keyspace: a writer preparing its first statement got "table does
    # not exist" and the reloaded metadata lacked the table too, for a moment; asking the
    # metadata at once called it dropped (SchemaError). Both answers are injected here for
    # the first two tries (one node cannot lag); the third prepare runs on the real server.
    from cassandra import InvalidRequest

    from chatmem.cassandra._sync import transactions as _transactions

    repo = make_repository()
    repo.append("lag", UserMessage("kept"))
    fresh = CassandraChatMemoryRepository(
        session_of(server), keyspace=repo.config.keyspace, table_name=repo.config.table_name
    )
    real_prepare, refused = _transactions.prepare, []

    def lagging(session: Any, query: str) -> Any:
        if len(refused) < 2:
            refused.append(query)
            table = repo.config.table_name
            raise InvalidRequest(
                f'Error from server: code=2200 [Invalid query] message="table {table} '
                'does not exist"'
            )
        return real_prepare(session, query)

    fresh._schema_check()  # passed once at set-up, as on CI; only the answers after lag
    monkeypatch.setattr(_transactions, "prepare", lagging)
    monkeypatch.setattr(_transactions, "missing_schema", lambda *_: ["table (lagging)"])
    monkeypatch.setattr(_transactions, "reloaded_missing", lambda *_: ["table (lagging)"])
    assert fresh.find_by_conversation_id("lag") == [UserMessage("kept")]
    assert len(refused) == 2


def test_an_append_retries_a_coordinator_that_has_not_opened_the_table_yet(
    repository: Any, server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On 3 nodes a coordinator that has not applied a table created a moment ago answers an
    # append's conditional batch with "table ... does not exist" (found by the cluster's cold
    # default-path test; one node cannot lag, so its answer is injected here, before the real
    # server runs the batch). Nothing ran, so the append is retried and lands once; a table
    # really dropped still fails typed (test_a_dropped_table_is_a_schema_error_soon).
    from cassandra import InvalidRequest

    from chatmem.cassandra._sync import transactions as _transactions

    real, refused = _transactions.execute, []

    def lagging(session: Any, statement: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(statement, BatchStatement) and len(refused) < 2:
            refused.append(statement)
            table = repository.config.table_name
            raise InvalidRequest(
                f"Error from server: code=2200 [Invalid query] "
                f'message="table {table} does not exist"'
            )
        return real(session, statement, *args, **kwargs)

    monkeypatch.setattr(_transactions, "execute", lagging)
    repository.append("lag", UserMessage("once"))
    assert len(refused) == 2
    assert repository.find_by_conversation_id("lag") == [UserMessage("once")]


def test_a_dropped_table_is_a_schema_error_soon(make_repository: Make, server: ServerInfo) -> None:
    repo = make_repository()
    repo.append("gone", UserMessage("before"))
    c = repo.config
    session_of(server).execute(f'DROP TABLE "{c.keyspace}"."{c.table_name}"')
    started = time.monotonic()
    with pytest.raises(SchemaError, match=r"does not exist|missing"):
        repo.append("gone", UserMessage("after"))
    assert time.monotonic() - started < GONE_AFTER + 6  # not 40 tries ending in another type


def test_construction_on_an_existing_schema_runs_no_ddl(
    repository: Any, server: ServerInfo
) -> None:
    with requests(server) as seen:
        CassandraChatMemoryRepository(
            session_of(server),
            keyspace=repository.config.keyspace,
            table_name=repository.config.table_name,
        )
    assert seen == []


# -- URLs, ownership, errors ---------------------------------------------------------------------
def test_parse_url() -> None:
    u = parse_url("cassandra://u%40x:p%3Aw@h1:9043,h2:9043/ks?local_dc=dc1")
    assert (u.contact_points, u.port, u.keyspace, u.local_dc, u.username, u.password) == (
        ("h1", "h2"),
        9043,
        "ks",
        "dc1",
        "u@x",
        "p:w",
    )
    assert parse_url("cassandra://localhost").port == 9042
    # one port for every contact point, written once (the cluster harness's URL) or on each
    many = parse_url("cassandra://127.0.0.1,127.0.0.2,127.0.0.3:9043/ks")
    assert (many.contact_points, many.port) == (("127.0.0.1", "127.0.0.2", "127.0.0.3"), 9043)
    assert parse_url("cassandra://h1:9043,h2").port == 9043
    for bad in ("redis://h", "cassandra://h/bad-ks", "cassandra://h?x=1", "cassandra://h:1,g:2"):
        with pytest.raises(InvalidArgumentError):
            parse_url(bad)


def test_from_url_owns_its_cluster_and_a_given_session_stays_open(
    repository: Any, server: ServerInfo
) -> None:
    c = repository.config
    with CassandraChatMemoryRepository.from_url(
        str(server.url), table_name=c.table_name, initialize_schema="never"
    ) as repo:
        assert repo.config.keyspace == server.extra["keyspace"]
        repo.save_all("u", [UserMessage("via url")])
        cluster = repo._owned
    assert cluster.is_shutdown
    assert repository.find_by_conversation_id("u") == [UserMessage("via url")]
    assert not session_of(server).is_shutdown


def test_an_unreachable_server_is_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailableError):
        CassandraChatMemoryRepository.from_url(f"cassandra://127.0.0.1:{free_port()}/ks")


def test_without_the_driver_the_import_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['cassandra'] = None\n"
        "try:\n    import chatmem.cassandra\n"
        "except ImportError as e:\n    print(type(e).__name__, e)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (
        "MissingDependencyError" in out.stdout and 'pip install "chatmem[cassandra]"' in out.stdout
    )


@pytest.mark.parametrize("option", ["request_timeout", "connect_timeout"])
@pytest.mark.parametrize("value", [0, -1.0, "5", True, None])
def test_bad_driver_timeouts_are_rejected_before_connecting(option: str, value: Any) -> None:
    with pytest.raises(InvalidArgumentError, match=option):
        CassandraChatMemoryRepository.from_url("cassandra://127.0.0.1:1/ks", **{option: value})


def test_from_url_applies_the_driver_timeouts(repository: Any, server: ServerInfo) -> None:
    from cassandra.cluster import EXEC_PROFILE_DEFAULT

    c = repository.config
    with CassandraChatMemoryRepository.from_url(
        str(server.url),
        table_name=c.table_name,
        initialize_schema=False,
        request_timeout=3.5,
        connect_timeout=2.5,
    ) as repo:
        cluster = repo._owned
        assert cluster.profile_manager.profiles[EXEC_PROFILE_DEFAULT].request_timeout == 3.5
        assert cluster.connect_timeout == 2.5
        repo.save_all("timeouts", [UserMessage("ok")])
    assert repository.find_by_conversation_id("timeouts") == [UserMessage("ok")]


def test_an_unknown_lwt_outcome_is_settled_by_what_the_write_claimed() -> None:
    """After a CAS timeout, CAS_WRITE_UNKNOWN or a lost coordinator, a serial read of the
    claimed positions tells: stored (done) or not (write again: stored once)."""
    from chatmem.cassandra._plan import Claims, claims

    msg = UserMessage("hi", created_at=from_micros(1_700_000_000_000_000))
    mine = claims(10, [msg])
    row = mine.rows[10]
    assert mine.verdict({}, {10: row}) is True  # stored
    assert mine.verdict({}, {}) is False  # not there (never applied, or trimmed since)
    other = ("user", '{"other": 1}', 1)
    assert mine.verdict({}, {10: other}) is False  # another write took position 10
    system = claims(5, [SystemMessage("s", created_at=from_micros(1))])
    assert system.verdict({5: system.systems[5]}, {}) is True
    assert system.verdict({}, {}) is False
    assert Claims().verdict({}, {}) is False  # a replace or a delete: repeat it


@pytest.mark.parametrize(
    ("applied", "rival", "mine", "rivals"),
    [
        (True, None, "m:4", []),  # it applied: nothing more is popped
        (False, None, "m:4", []),  # it did not: popped again, once
        (False, "before", "m:3", ["m:4"]),  # a rival popped the same message first
        (True, "after", "m:4", ["m:3"]),  # it applied and a rival popped on top of it
    ],
)
def test_an_unknown_outcome_of_pop_last_is_settled_by_its_receipt(
    repository: Any,
    harness: Any,
    server: ServerInfo,
    monkeypatch: pytest.MonkeyPatch,
    applied: bool,
    rival: str | None,
    mine: str,
    rivals: list[str],
) -> None:
    # Under contention on 3 nodes a pop's conditional batch timed out (CAS) after it had
    # applied; tried again, it popped a second message (found by the cluster's concurrent
    # pop_last test). Here the timeout is raised after or instead of running the real batch,
    # with another client's pop before or after it, and the pop settles by its receipt.
    import cassandra

    from chatmem.cassandra._sync import transactions as _transactions

    repository.save_all("c", [UserMessage(f"m:{i}") for i in range(5)])
    other = harness.make_repository(server, table_name=repository.config.table_name)
    real, armed, popped = _transactions.execute, [True], []

    def timing_out(session: Any, statement: Any, *args: Any, **kwargs: Any) -> Any:
        if not (isinstance(statement, BatchStatement) and armed[0]):
            return real(session, statement, *args, **kwargs)
        armed[0] = False
        if rival == "before":
            popped.append(other.pop_last("c"))
        if applied:
            real(session, statement, *args, **kwargs)
        if rival == "after":
            popped.append(other.pop_last("c"))
        raise cassandra.WriteTimeout("CAS timed out", write_type=cassandra.WriteType.CAS)

    monkeypatch.setattr(_transactions, "execute", timing_out)
    got = repository.pop_last("c")
    assert not armed[0]
    assert got is not None and got.text == mine
    assert [m.text for m in popped if m is not None] == rivals
    left = [m.text for m in repository.find_by_conversation_id("c")]
    assert left == [f"m:{i}" for i in range(5 - 1 - len(rivals))]


def test_receipts_are_invisible_and_bounded(repository: Any, server: ServerInfo) -> None:
    """A pop's receipt sits in the system-message map at the position it deleted: never read
    back as a message, carried on by later edits, at most RECEIPT_LIMIT of them."""
    from chatmem.cassandra._plan import RECEIPT_LIMIT, RECEIPT_MARK

    history = [SystemMessage("rules"), *(UserMessage(f"m:{i}") for i in range(40))]
    repository.save_all("r", history)
    for _ in range(RECEIPT_LIMIT + 5):
        repository.pop_last("r")
    repository.append("r", UserMessage("after"))
    left = repository.find_by_conversation_id("r")
    assert [m.text for m in left] == ["rules", *(f"m:{i}" for i in range(3)), "after"]
    (statics,) = raw(
        server,
        repository,
        "SELECT system_messages FROM {t} WHERE conversation_id = %s LIMIT 1",
        "r",
    )
    entries = dict(statics.system_messages)
    receipts = [p for p, (created, _) in entries.items() if created == RECEIPT_MARK]
    assert len(receipts) == RECEIPT_LIMIT and len(entries) == RECEIPT_LIMIT + 1


def test_cas_write_unknown_is_a_typed_unknown_outcome() -> None:
    """Paxos v1's CAS_WRITE_UNKNOWN (0x1700) reaches us as a bare driver ErrorMessage."""
    from cassandra.protocol import ErrorMessage

    from chatmem.cassandra._errors import translate_errors, unknown_outcome

    raw = ErrorMessage(0x1700, "CAS operation result is unknown - proposal accepted by 1", {})
    unknown = pytest.raises(BackendUnavailableError, match="may or may not have applied")
    with unknown as caught, translate_errors("an append"):
        raise raw
    assert caught.value.__cause__ is raw and unknown_outcome(raw)
    assert not unknown_outcome(ErrorMessage(0x2200, "invalid", {}))


def test_every_server_timeout_of_a_lightweight_transaction_is_an_unknown_outcome() -> None:
    """Under load on 3 nodes a pop's conditional batch failed with a read timeout (Paxos v2
    reads the condition at ONE) and was raised instead of settled; a timed-out commit may
    have applied as well. Only an Unavailable (nothing ran) and other errors are known."""
    import cassandra

    from chatmem.cassandra._errors import unknown_outcome

    assert unknown_outcome(cassandra.ReadTimeout("condition read", consistency=1))
    assert unknown_outcome(cassandra.WriteTimeout("commit", write_type=cassandra.WriteType.SIMPLE))
    assert unknown_outcome(cassandra.WriteTimeout("cas", write_type=cassandra.WriteType.CAS))
    assert not unknown_outcome(cassandra.Unavailable("down", consistency=1))
    assert not unknown_outcome(cassandra.InvalidRequest("bad"))
