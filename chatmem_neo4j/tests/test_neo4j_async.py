"""The async twin on Neo4j: what the shared suite (run on it with ``--twin async``) does not
reach. Construction on an ``AsyncDriver`` (deferred schema, never closing the caller's
driver), the awaitable ``from_url`` (eager schema, owned driver, ``driver_options``), the
``"never"`` mode, labels, errors, the session lock as seen by tasks on one loop, and window
trimming through the async window memory. Each test runs its own event loop with its own
driver (an ``AsyncDriver`` belongs to the loop it was first used on). Real server only."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import neo4j
import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    BackendError,
    BackendUnavailableError,
    InvalidArgumentError,
    InvalidIdentifierError,
    SchemaError,
    SystemMessage,
    UserMessage,
    async_repository_from_url,
)
from chatmem.neo4j import AsyncNeo4jChatMemoryRepository, Neo4jChatMemoryRepository, Neo4jConfig
from chatmem.neo4j._codec import message_params, shape_of
from chatmem.neo4j._config import LABEL_OPTIONS
from chatmem.neo4j._schema import TRIM_EVERY, Schema
from chatmem.testing.corpus import FIXED_TS
from chatmem.testing.harness import ServerInfo, free_port, unique_suffix

pytestmark = pytest.mark.backend("neo4j")

T = TypeVar("T")
Repo = AsyncNeo4jChatMemoryRepository


def run(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapped() -> T:
        return await main()

    return asyncio.run(wrapped())


def cypher(server: ServerInfo, query: str, **params: Any) -> list[Any]:
    records, _, _ = server.extra["driver"].execute_query(query, params)
    return list(records)


def schema_names(server: ServerInfo, labels: dict[str, str]) -> set[str]:
    schema = Schema.of(Neo4jConfig(**labels))
    rows = cypher(server, "SHOW INDEXES YIELD name RETURN name")
    return {r["name"] for r in rows} & {schema.constraint_name, schema.index_name}


@pytest.fixture
def labels(server: ServerInfo) -> Iterator[dict[str, str]]:
    """Fresh labels for the test; their nodes and schema are removed afterwards."""
    suffix = unique_suffix()
    made = {option: f"A{i}_{suffix}" for i, option in enumerate(LABEL_OPTIONS)}
    yield made
    for label in made.values():
        cypher(server, f"MATCH (n:`{label}`) DETACH DELETE n")
    for statement in Schema.of(Neo4jConfig(**made)).drop_ddl():
        cypher(server, statement)


def async_driver(server: ServerInfo, **options: Any) -> neo4j.AsyncDriver:
    assert server.url is not None
    return neo4j.AsyncGraphDatabase.driver(server.url, **options)


# -- construction ---------------------------------------------------------------------------
def test_the_async_twin_takes_an_async_driver_only(server: ServerInfo) -> None:
    with pytest.raises(InvalidArgumentError, match="AsyncDriver") as info:
        AsyncNeo4jChatMemoryRepository(server.extra["driver"])
    assert info.value.argument == "driver"
    with pytest.raises(InvalidArgumentError, match=r"neo4j\.Driver,"):
        Neo4jChatMemoryRepository(async_driver(server))  # type: ignore[arg-type]


def test_options_are_checked_in_the_constructor_before_any_io(server: ServerInfo) -> None:
    driver = async_driver(server)
    with pytest.raises(InvalidIdentifierError) as bad_label:
        Repo(driver, message_label="not-a-label")
    assert bad_label.value.argument == "message_label"
    with pytest.raises(InvalidArgumentError) as unknown:
        Repo(driver, table_name="x")
    assert unknown.value.argument == "table_name"
    assert Repo(driver).config == Neo4jConfig()  # the same defaults as the sync twin


def test_the_constructor_defers_the_schema_to_the_first_call(
    server: ServerInfo, labels: dict[str, str]
) -> None:
    async def main() -> list[str | None]:
        driver = async_driver(server)
        try:
            repo = Repo(driver, **labels)
            assert repo._init_pending and schema_names(server, labels) == set()
            await repo.save_all("c", [UserMessage("hi")])
            assert not repo._init_pending and len(schema_names(server, labels)) == 2
            return [m.text for m in await repo.find_by_conversation_id("c")]
        finally:
            await driver.close()

    assert run(main) == ["hi"]


def test_concurrent_first_calls_create_the_schema_once(
    server: ServerInfo, labels: dict[str, str]
) -> None:
    async def main() -> None:
        driver = async_driver(server)
        try:
            repos = [Repo(driver, **labels) for _ in range(5)]
            await asyncio.gather(
                *(r.append("c", UserMessage(f"m{i}")) for i, r in enumerate(repos) for _ in "ab")
            )
            assert len(await repos[0].find_by_conversation_id("c")) == 10
        finally:
            await driver.close()

    run(main)
    assert len(schema_names(server, labels)) == 2


def test_never_mode_creates_nothing_and_refuses_until_create_schema(
    server: ServerInfo, labels: dict[str, str]
) -> None:
    async def main() -> None:
        driver = async_driver(server)
        try:
            repo = Repo(driver, **labels, initialize_schema="never")
            with pytest.raises(SchemaError, match="create_schema"):
                await repo.append("never", UserMessage("refused"))
            assert schema_names(server, labels) == set()
            await repo.create_schema()
            await repo.create_schema()  # idempotent
            await repo.append("never", UserMessage("now stored"))
            assert [m.text for m in await repo.find_by_conversation_id("never")] == ["now stored"]
        finally:
            await driver.close()

    run(main)
    assert len(schema_names(server, labels)) == 2


def test_a_callers_driver_is_never_closed(server: ServerInfo, labels: dict[str, str]) -> None:
    async def main() -> int:
        driver = async_driver(server)
        try:
            async with Repo(driver, **labels) as repo:
                await repo.save_all("x", [UserMessage("y")])
            await repo.close()
            records, _, _ = await driver.execute_query("RETURN 1 AS one")
            return int(records[0]["one"])
        finally:
            await driver.close()

    assert run(main) == 1


# -- from_url -------------------------------------------------------------------------------
def test_from_url_creates_the_schema_and_owns_its_driver(
    server: ServerInfo, labels: dict[str, str]
) -> None:
    assert server.url is not None
    url = server.url

    async def main() -> None:
        repo = await Repo.from_url(url, **labels)
        assert not repo._init_pending and len(schema_names(server, labels)) == 2
        try:
            await repo.save_all("u", [UserMessage("hi")])
            other = await async_repository_from_url(url.replace("bolt://", "neo4j://"), **labels)
            assert isinstance(other, Repo)
            async with other:
                assert [m.text for m in await other.find_by_conversation_id("u")] == ["hi"]
        finally:
            await repo.close()
        await repo.close()  # twice is a no-op
        with pytest.raises(BackendError):
            await repo.find_by_conversation_id("u")  # its own driver is closed

    run(main)


def test_from_url_rejects_bad_input_before_connecting() -> None:
    async def main() -> None:
        url = f"bolt://127.0.0.1:{free_port()}"  # nothing listens: any I/O would fail
        with pytest.raises(InvalidArgumentError) as info:
            await Repo.from_url("http://host:7474")
        assert info.value.argument == "url"
        with pytest.raises(InvalidIdentifierError):
            await Repo.from_url(url, session_label="bad label")
        with pytest.raises(InvalidArgumentError) as info:
            await Repo.from_url(url, driver_options=["x"])  # type: ignore[arg-type]
        assert info.value.argument == "driver_options"

    run(main)


def test_from_url_fails_at_once_on_an_unreachable_server() -> None:
    async def main() -> None:
        url = f"bolt://127.0.0.1:{free_port()}"
        options = {"driver_options": {"connection_timeout": 2}}
        with pytest.raises(BackendUnavailableError) as info:
            await Repo.from_url(url, **options)  # type: ignore[arg-type]
        assert isinstance(info.value.__cause__, neo4j.exceptions.ServiceUnavailable)
        repo = await Repo.from_url(url, initialize_schema="never", **options)  # type: ignore[arg-type]
        try:
            with pytest.raises(BackendUnavailableError):
                await repo.find_by_conversation_id("x")
        finally:
            await repo.close()

    run(main)


def test_driver_options_reach_the_async_driver(server: ServerInfo, labels: dict[str, str]) -> None:
    assert server.url is not None
    url = server.url

    async def main() -> None:
        options = {"connection_timeout": 4.5, "max_transaction_retry_time": 3.0}
        repo = await Repo.from_url(url, driver_options=options, **labels)
        try:
            assert isinstance(repo._driver, neo4j.AsyncDriver)
            assert repo._driver._pool.pool_config.connection_timeout == 4.5
            assert await repo.find_by_conversation_id("none") == []
        finally:
            await repo.close()

    run(main)


def test_database_option_and_an_unknown_database(
    server: ServerInfo, labels: dict[str, str]
) -> None:
    async def main() -> None:
        driver = async_driver(server)
        try:
            repo = Repo(driver, database="neo4j", **labels)
            await repo.save_all("db", [UserMessage("x")])
            assert await repo.find_conversation_ids() == ["db"]
            if server.extra.get("edition") == "community":
                bad = Repo(driver, database="nosuchdb")
                with pytest.raises(BackendError) as info:  # the first call creates the schema
                    await bad.find_by_conversation_id("db")
                assert isinstance(info.value.__cause__, neo4j.exceptions.Neo4jError)
        finally:
            await driver.close()

    run(main)


# -- the graph and its locks, seen from tasks ---------------------------------------------------
def test_custom_labels_hold_the_whole_graph(server: ServerInfo, labels: dict[str, str]) -> None:
    async def main() -> None:
        driver = async_driver(server)
        try:
            repo = Repo(driver, **labels)
            await repo.save_all(
                "g",
                [SystemMessage("s"), UserMessage("u", metadata={"k": 1}), AssistantMessage("a")],
            )
        finally:
            await driver.close()

    run(main)
    rows = cypher(server, "MATCH (n) UNWIND labels(n) AS l RETURN l, count(*) AS c")
    counts = {r["l"]: r["c"] for r in rows}
    assert counts[labels["session_label"]] == 1
    assert counts[labels["message_label"]] == 3
    assert counts[labels["metadata_label"]] == 1


def test_a_reader_task_waits_for_a_writer_holding_the_session_lock(
    server: ServerInfo, labels: dict[str, str]
) -> None:
    async def main() -> list[str]:
        driver = async_driver(server)
        try:
            repo = Repo(driver, **labels)
            await repo.save_all("lock", [UserMessage("old")])
            batch = [
                message_params(m.with_store_fields(created_at=FIXED_TS, position=None))
                for m in [UserMessage("new1"), UserMessage("new2")]
            ]
            async with driver.session() as session:
                tx = await session.begin_transaction()
                statement = repo.schema.save_all(shape_of(batch))
                await (await tx.run(statement, cid="lock", messages=batch)).consume()
                reader = asyncio.create_task(repo.find_by_conversation_id("lock"))
                await asyncio.sleep(1.0)
                assert not reader.done(), "a reader ran while the replace was uncommitted"
                await tx.commit()
                seen = await asyncio.wait_for(reader, 30)
            return [m.text or "" for m in seen]
        finally:
            await driver.close()

    assert run(main) == ["new1", "new2"]


def test_concurrent_append_tasks_get_distinct_positions(
    server: ServerInfo, labels: dict[str, str]
) -> None:
    async def main() -> list[int | None]:
        driver = async_driver(server)
        try:
            repo = Repo(driver, **labels)

            async def writer(w: int) -> None:
                for i in range(10):
                    await repo.append("c", UserMessage(f"{w}:{i}"))

            await asyncio.gather(*(writer(w) for w in range(8)))
            return [m.position for m in await repo.find_by_conversation_id("c")]
        finally:
            await driver.close()

    assert run(main) == list(range(80))


def test_writer_tasks_of_one_conversation_queue_in_the_repository(
    server: ServerInfo, labels: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """100 tasks on one conversation reach the server one at a time, so none is rejected
    for a deadlock (about 1,200 re-runs per 100 appends without the queue); the queue
    holds an entry only while a writer uses it."""
    from chatmem.neo4j._async import repository as _async_repository
    from chatmem.neo4j._errors import rejected_before_commit as counted

    rejected: list[BaseException] = []

    def counting(exc: BaseException) -> bool:
        rejected.append(exc)
        return counted(exc)

    monkeypatch.setattr(_async_repository, "rejected_before_commit", counting)

    async def main() -> tuple[list[int | None], int]:
        driver = async_driver(server)
        try:
            repo = Repo(driver, **labels)
            await repo.append("q", UserMessage("first"))
            await asyncio.gather(
                *(repo.append("q", UserMessage(f"m{i}")) for i in range(100)),
                *(repo.append(f"other{i}", UserMessage("x")) for i in range(5)),
            )
            positions = [m.position for m in await repo.find_by_conversation_id("q")]
            return positions, len(repo._writers)
        finally:
            await driver.close()

    positions, entries_left = run(main)
    assert positions == list(range(101))
    assert rejected == []
    assert entries_left == 0


def test_window_adds_keep_the_stored_log_bounded(
    server: ServerInfo, labels: dict[str, str]
) -> None:
    async def main() -> None:
        driver = async_driver(server)
        try:
            repo = Repo(driver, **labels)
            memory = AsyncMessageWindowChatMemory(repo, max_messages=10)
            reference = AsyncMessageWindowChatMemory(max_messages=10)  # in memory
            for m in [SystemMessage("rules")] + [
                UserMessage(f"u{i}") if i % 2 == 0 else AssistantMessage(f"a{i}")
                for i in range(200)
            ]:
                await memory.add("w", m)
                await reference.add("w", m)
            stored = await repo.find_by_conversation_id("w")
            assert len(stored) <= 1 + 11 + TRIM_EVERY * 11
            assert isinstance(stored[0], SystemMessage) and stored[-1].text == "a199"
            assert await memory.get("w") == await reference.get("w")
        finally:
            await driver.close()

    run(main)
