"""The Spring AI layout checked against Spring AI itself: its own ``JdbcChatMemoryRepository``
and ``MessageWindowChatMemory`` (2.0, run by ``scripts/servers/spring-ai/SpringAiHarness.java``
in a JVM) on the same PostgreSQL or MariaDB as chatmem (``--backend postgres`` or
``--backend mariadb``), or the same SQLite file (``--backend sqlite``: Spring through
sqlite-jdbc)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

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
from chatmem.jdbc import (
    AsyncSpringAiJdbcChatMemoryRepository,
    JdbcChatMemoryRepository,
    SpringAiJdbcChatMemoryRepository,
    make_engine,
    spring_ai_schema,
)
from chatmem.testing.harness import ServerInfo, unique_suffix
from conformance_tests.spring_ai import (
    as_spring,
    assert_windows_agree,
    cid,
    msg,
    race_appenders,
    same_instants,
)

pytestmark = pytest.mark.backend("postgres", "mariadb", "sqlite")

Repo = SpringAiJdbcChatMemoryRepository
VERSION = os.environ.get("CHATMEM_SPRING_AI_VERSION", "2.0.1")
HOME = Path(os.environ.get("CHATMEM_CACHE", Path.home() / ".cache" / "chatmem"))
SPRING = HOME / f"spring-ai-{VERSION}"
CLASSPATH = f"{SPRING}/lib/*:{SPRING}/classes"


def _required(backend: str) -> bool:
    names = {n.strip() for n in os.environ.get("CHATMEM_REQUIRE_BACKENDS", "").split(",")}
    return "all" in names or backend in names


def _kind(server: ServerInfo) -> str:
    """The backend as Spring's JDBC URL and schema script name it."""
    name = sa.engine.make_url(server.url).get_backend_name()
    return {"mysql": "mariadb", "postgres": "postgresql"}.get(name, name)


def _resolution_us(server: ServerInfo) -> int:
    """The timestamp column's resolution: MariaDB's TIMESTAMP keeps seconds; Spring's SQLite
    column, epoch milliseconds; PostgreSQL, microseconds."""
    return {"mariadb": 1_000_000, "sqlite": 1_000}.get(_kind(server), 1)


@pytest.fixture(scope="module")
def jdbc_url(server: ServerInfo) -> str:
    """The JDBC URL of the server (or SQLite file) the kit started, with Spring's table created
    by Spring's own ``schema-postgresql.sql`` / ``schema-mariadb.sql`` / ``schema-sqlite.sql``
    from its jar."""
    ready = (SPRING / ".complete").is_file() and (SPRING / "classes").is_dir()
    if not ready:
        reason = f"Spring AI harness not installed in {SPRING} (run scripts/install/spring-ai.sh)"
        if _required({"postgresql": "postgres"}.get(_kind(server), _kind(server))):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    url = sa.engine.make_url(server.url)
    kind = _kind(server)
    if kind == "sqlite":
        jdbc = f"jdbc:sqlite:{url.database}"  # the file chatmem opens
    else:
        auth = f"?user={url.username}" + (f"&password={url.password}" if url.password else "")
        jdbc = f"jdbc:{kind}://{url.host}:{url.port}/{url.database}{auth}"
    assert spring(jdbc, "schema")["script"].endswith(f"schema-{kind}.sql")
    return jdbc


def spring(jdbc: str, command: str, ops: list[dict[str, Any]] | None = None) -> Any:
    """Run the Spring AI harness (one JVM) and return its JSON output."""
    java = (SPRING / "java").read_text().strip()
    done = subprocess.run(
        [java, "-Duser.timezone=UTC", "-cp", CLASSPATH, "SpringAiHarness", jdbc, command],
        input=json.dumps(ops or []),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def repo(server: ServerInfo, jdbc_url: str) -> Any:
    with SpringAiJdbcChatMemoryRepository.from_url(server.url, initialize_schema="never") as r:
        yield r


def test_spring_writes_and_chatmem_reads_the_same(
    repo: Repo, jdbc_url: str, server: ServerInfo
) -> None:
    one, two = cid("s1"), cid("s2")
    t = "2026-01-02T03:04:05.123456Z"
    first = [msg("SYSTEM", "be brief", t), msg("USER", "hi", t), msg("ASSISTANT", "hello", t)]
    replaced = [
        *first[:2],
        msg("ASSISTANT", "hello again", "2026-01-02T03:04:06Z"),
        msg("USER", "more", "2026-01-02T03:04:07.5Z"),
    ]
    *_, read_one, read_two, ids = spring(
        jdbc_url,
        "script",
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
    same_instants(as_spring(mine), read_one)
    same_instants(read_one, replaced, resolution_us=_resolution_us(server))
    same_instants(as_spring(repo.find_by_conversation_id(two)), read_two)
    assert [m.position for m in mine] == [0, 1, 2, 3]  # Spring's sequence_id
    assert {one, two} <= set(repo.find_conversation_ids())


def test_chatmem_ls_lists_springs_ids(server: ServerInfo, jdbc_url: str) -> None:
    ids = [cid("ls"), cid("ls")]
    spring(
        jdbc_url, "script", [{"op": "save", "cid": c, "messages": [msg("USER", c)]} for c in ids]
    )
    url = f"{server.url}?layout=spring-ai"
    done = subprocess.run(
        [sys.executable, "-m", "chatmem.core._cli", "ls", "--url", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert set(ids) <= set(done.stdout.split())


def test_chatmem_writes_and_spring_reads_the_same(repo: Repo, jdbc_url: str) -> None:
    window, saved, gone = cid("w"), cid("sa"), cid("del")
    memory = MessageWindowChatMemory(repo, max_messages=4)
    memory.add(window, SystemMessage("sys"))
    for i in range(5):
        memory.add(window, [UserMessage(f"q{i}"), AssistantMessage(f"a{i}")])
    repo.save_all(saved, [UserMessage("x"), AssistantMessage("y"), UserMessage("z")])
    repo.save_all(gone, [UserMessage("soon gone")])
    repo.delete_by_conversation_id(gone)
    read_window, read_saved, read_gone, ids = spring(
        jdbc_url,
        "script",
        [
            {"op": "read", "cid": window},
            {"op": "read", "cid": saved},
            {"op": "read", "cid": gone},
            {"op": "ids"},
        ],
    )
    # the layout stores exactly the window, as Spring's MessageWindowChatMemory does
    assert [m["text"] for m in read_window] == ["sys", "q4", "a4"]
    same_instants(read_window, as_spring(memory.get(window)))
    same_instants(read_saved, as_spring(repo.find_by_conversation_id(saved)))
    assert read_gone == [] and gone not in ids and {window, saved} <= set(ids)


SIZES = (1, 2, 3, 5, 8)


def test_windows_agree_with_springs(repo: Repo, jdbc_url: str, server: ServerInfo) -> None:
    """For a few window sizes (one JVM for all): Spring's MessageWindowChatMemory and
    chatmem's give the same window, each over the other's rows too."""
    resolution = _resolution_us(server)

    def compare(rows: list[dict[str, Any]], messages: list[Message]) -> None:
        same_instants(rows, as_spring(messages), resolution_us=resolution)

    assert_windows_agree(repo, lambda ops: spring(jdbc_url, "script", ops), SIZES, compare)


def test_what_the_layout_cannot_hold_is_refused_by_name(repo: Repo, jdbc_url: str) -> None:
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
    assert repo.find_by_conversation_id(c) == []  # nothing was written
    with pytest.raises(InvalidArgumentError, match="lossy"):
        SpringAiJdbcChatMemoryRepository(repo.engine, lossy=("everything",))
    # opted in by name: dropped as Spring's own saveAll drops them
    lossy = SpringAiJdbcChatMemoryRepository(repo.engine, lossy=("tool_calls", "metadata"))
    lossy.save_all(c, [UserMessage("q", metadata={"k": 1}), call, AssistantMessage("42")])
    (read,) = spring(
        jdbc_url,
        "script",
        [
            {
                "op": "save",
                "cid": c + "j",
                "messages": [
                    msg("USER", "q"),
                    {
                        "type": "ASSISTANT",
                        "text": "let me look",
                        "tool_calls": [{"id": "t1", "name": "lookup", "arguments": "{}"}],
                    },
                    msg("ASSISTANT", "42"),
                ],
            },
            {"op": "read", "cid": c + "j"},
        ],
    )[1:]
    assert [m.text for m in lossy.find_by_conversation_id(c)] == ["q", "42"]
    assert [m["text"] for m in read] == ["q", "42"]


def test_eight_concurrent_chatmem_appenders_lose_nothing(repo: Repo, jdbc_url: str) -> None:
    c = cid("race")
    log = race_appenders(repo, c, writers=8, each=25)
    assert [m.position for m in log] == list(range(8 * 25))  # unique, gap-free
    (read,) = spring(jdbc_url, "script", [{"op": "read", "cid": c}])
    assert [m["text"] for m in read] == [m.text for m in log]


def test_a_concurrent_spring_writer_can_drop_a_chatmem_append(repo: Repo, jdbc_url: str) -> None:
    """What docs/backends/postgres.md warns of: Spring's add is read, then saveAll (delete
    and re-insert) without chatmem's lock, so an append between the two is lost."""
    c = cid("lost")
    repo.append(c, UserMessage("first"))
    (seen,) = spring(jdbc_url, "script", [{"op": "read", "cid": c}])
    repo.append(c, UserMessage("chatmem's, in between"))
    spring(
        jdbc_url, "script", [{"op": "save", "cid": c, "messages": [*seen, msg("USER", "spring's")]}]
    )
    assert [m.text for m in repo.find_by_conversation_id(c)] == ["first", "spring's"]


_PG_FACTS = (
    "SELECT column_name, data_type, character_maximum_length, is_nullable"
    " FROM information_schema.columns WHERE table_schema = current_schema()"
    " AND table_name = :t ORDER BY ordinal_position",
    "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE conrelid = to_regclass(:t) AND contype = 'c'",
    "SELECT split_part(indexdef, ' USING ', 2) FROM pg_indexes WHERE tablename = :t"
    " ORDER BY indexname",
)
_MARIADB_FACTS = (
    "SELECT column_name, data_type, character_maximum_length, is_nullable"
    " FROM information_schema.columns WHERE table_schema = DATABASE()"
    " AND table_name = :t ORDER BY ordinal_position",
    "SELECT check_clause FROM information_schema.check_constraints"
    " WHERE constraint_schema = DATABASE() AND table_name = :t",
    "SELECT index_name, seq_in_index, column_name FROM information_schema.statistics"
    " WHERE table_schema = DATABASE() AND table_name = :t ORDER BY index_name, seq_in_index",
)

_SQLITE_FACTS = (
    'SELECT name, type, "notnull", pk FROM pragma_table_info(:t) ORDER BY cid',
    "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = :t",
    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = :t ORDER BY name",
)
FACTS = {
    "mariadb": (_MARIADB_FACTS, "SPRING_AI_CHAT_MEMORY"),
    "sqlite": (_SQLITE_FACTS, "SPRING_AI_CHAT_MEMORY"),
    "postgresql": (_PG_FACTS, "spring_ai_chat_memory"),
}


def _engine(server: ServerInfo) -> sa.Engine:
    """The kit's engine for the server (SQLite's harness makes one at first use)."""
    engine: sa.Engine | None = server.extra.get("engine")
    if engine is None:
        engine = server.extra["engine"] = make_engine(server.url)
    return engine


def test_chatmem_ddl_is_springs(server: ServerInfo, jdbc_url: str) -> None:
    """The table chatmem creates has the columns, check and indexes of Spring's script."""
    name = f"spring_{unique_suffix()}"
    engine = _engine(server)
    made = SpringAiJdbcChatMemoryRepository(engine, table_name=name, initialize_schema="always")
    queries, spring_table = FACTS[_kind(server)]

    def facts(conn: sa.Connection, table: str) -> list[list[tuple[Any, ...]]]:
        out = [[tuple(r) for r in conn.execute(sa.text(q), {"t": table})] for q in queries]

        # index names (and SQLite's stored DDL) hold the table's name: compare the rest
        # (whitespace aside: Spring's script runner joins a statement's lines)
        def norm(v: Any) -> str:
            return " ".join(str(v).lower().replace(table.lower(), "").split())

        for i in (1, 2):
            out[i] = [tuple(norm(v) for v in r) for r in out[i]]
        return out

    try:
        with engine.connect() as conn:
            theirs, ours = facts(conn, spring_table), facts(conn, name)
        assert theirs == ours
        assert [c[0].lower() for c in ours[0]] == [
            "conversation_id",
            "content",
            "type",
            "timestamp",
            "sequence_id",
        ]
        assert ours[1] and ours[2]  # the check and both indexes are there
        made.save_all("c", [UserMessage("x")])
        assert made.find_by_conversation_id("c") == [UserMessage("x")]
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {name}"))


def test_springs_schema_default_creates_nothing_on_a_server(server: ServerInfo) -> None:
    """``"embedded"``: nothing on a server; on SQLite (chatmem's embedded database, though
    Spring Boot's initializer counts only H2, HSQLDB and Derby as embedded) Spring's table."""
    name = f"spring_{unique_suffix()}"
    repo = SpringAiJdbcChatMemoryRepository(_engine(server), table_name=name)
    assert repo.config.initialize_schema == "embedded"
    if _kind(server) != "sqlite":
        with pytest.raises(SchemaError, match=f"table {name}"):
            repo.find_by_conversation_id("c")
        return
    try:
        repo.append("c", UserMessage("x"))
        assert [m.text for m in repo.find_by_conversation_id("c")] == ["x"]
        assert repo.schema_statements() == spring_ai_schema(name, "sqlite")
    finally:
        with repo.engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {name}"))


def test_layout_is_chosen_by_name_and_ids_are_springs_width(server: ServerInfo) -> None:
    with JdbcChatMemoryRepository.from_url(
        server.url, layout="spring-ai", initialize_schema="never"
    ) as r:
        assert isinstance(r, SpringAiJdbcChatMemoryRepository)
        with pytest.raises(InvalidArgumentError, match="conversation_id"):
            r.find_by_conversation_id("x" * 37)  # Spring's VARCHAR(36)
    with pytest.raises(InvalidArgumentError, match="layout"):
        JdbcChatMemoryRepository.from_url(server.url, layout="spring")


def test_the_async_twin_shares_the_table(server: ServerInfo, jdbc_url: str) -> None:
    c = cid("async")

    async def run() -> list[Message]:
        async with await AsyncSpringAiJdbcChatMemoryRepository.from_url(
            server.url, initialize_schema="never"
        ) as r:
            await r.save_all(c, [SystemMessage("s"), UserMessage("u")])
            await r.append(c, AssistantMessage("a"))
            return await r.find_by_conversation_id(c)

    log = asyncio.run(run())
    (read,) = spring(jdbc_url, "script", [{"op": "read", "cid": c}])
    same_instants(read, as_spring(log))
    assert [m["type"] for m in read] == ["SYSTEM", "USER", "ASSISTANT"]


def test_chatmem_schema_prints_springs_ddl_for_the_layout(server: ServerInfo) -> None:
    """``chatmem schema --url ...?layout=spring-ai`` exports Spring's DDL, not chatmem's (no
    connection is made for it)."""
    url = f"{server.url}{'&' if '?' in server.url else '?'}layout=spring-ai"
    expected = SpringAiJdbcChatMemoryRepository.schema_statements_for_url(server.url)
    assert JdbcChatMemoryRepository.schema_statements_for_url(url) == expected
    out = subprocess.run(
        [sys.executable, "-m", "chatmem.core._cli", "schema", "--url", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "SPRING_AI_CHAT_MEMORY" in out.upper() and "sequence_id" in out
    assert "ai_chat_memory_conversation" not in out


SCRIPTS = {
    "postgresql": "postgresql",
    "mysql": "mariadb",
    "sqlite": "sqlite",
    "mssql": "sqlserver",
    "oracle": "oracle",
}


@pytest.mark.parametrize("flavour", sorted(SCRIPTS))
def test_chatmem_ddl_is_springs_script_text(flavour: str) -> None:
    """chatmem's DDL is Spring's ``schema-<database>.sql`` from its jar, statement by
    statement (whitespace aside): on SQL Server and Oracle, which no server here runs, this
    is what the layout offers (DDL export)."""
    jar = SPRING / "lib" / f"spring-ai-model-chat-memory-repository-jdbc-{VERSION}.jar"
    if not jar.is_file():
        reason = f"Spring AI's jars not installed in {SPRING} (run scripts/install/spring-ai.sh)"
        if _required("postgres"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    path = f"org/springframework/ai/chat/memory/repository/jdbc/schema-{SCRIPTS[flavour]}.sql"
    with zipfile.ZipFile(jar) as archive:
        script = archive.read(path).decode()

    def statements(text: str) -> list[str]:
        return [" ".join(s.split()) for s in text.split(";") if s.strip()]

    ours = spring_ai_schema("SPRING_AI_CHAT_MEMORY", flavour)
    assert [" ".join(s.split()) for s in ours] == statements(script)
    url = {"mssql": "mssql+pyodbc://u:p@h/db", "oracle": "oracle+oracledb://u:p@h/db"}
    if flavour in url:  # exported without a connection; the layout itself refuses to run
        assert (
            JdbcChatMemoryRepository.schema_statements_for_url(f"{url[flavour]}?layout=spring-ai")
            == ours
        )
