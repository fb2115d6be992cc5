"""The async twin's MongoDB-specific behaviour, on ``AsyncMongoClient`` against the server the
harness started (never mocked). The shared suite runs on this twin too (``--twin async``);
these cover what it does not: commands sent (or not) before I/O, deferred and eager schema
creation, TTL index reconciliation, the 16 MiB refusal and the client lifecycle."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import bson
import pytest
from pymongo import AsyncMongoClient, MongoClient, monitoring

from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    BackendUnavailableError,
    InvalidArgumentError,
    Media,
    SchemaError,
    SystemMessage,
    UserMessage,
    async_repository_from_url,
)
from chatmem.mongo import (
    POSITION_INDEX,
    TTL_INDEX,
    AsyncMongoChatMemoryRepository,
    async_ensure_indexes,
)
from chatmem.mongo._native.snapshots import CHUNK
from chatmem.testing.harness import ServerInfo, unique_suffix

pytestmark = pytest.mark.backend("mongo")

_HANDSHAKE = ("hello", "isMaster", "ismaster", "endSessions")


class Commands(monitoring.CommandListener):
    """Records every command a client sends (to prove "before any I/O")."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in _HANDSHAKE:
            self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@dataclass
class Ctx:
    """One test's async client (watched), database and fresh collection name."""

    client: AsyncMongoClient[Any]
    database: str
    collection_name: str
    commands: Commands
    made: list[AsyncMongoChatMemoryRepository] = field(default_factory=list)

    def make(self, **options: Any) -> AsyncMongoChatMemoryRepository:
        options.setdefault("collection_name", self.collection_name)
        repo = AsyncMongoChatMemoryRepository(self.client[self.database], **options)
        self.made.append(repo)
        return repo

    async def indexes(self) -> list[dict[str, Any]]:
        cursor = await self.client[self.database][self.collection_name].list_indexes()
        return [
            {**ix, "key": [(k, int(v)) for k, v in ix["key"].items()]}
            for ix in await cursor.to_list()
        ]

    async def ttl_expiries(self) -> list[int]:
        return [
            int(ix["expireAfterSeconds"]) for ix in await self.indexes() if ix["key"] == TTL_INDEX
        ]


Scenario = Callable[[Ctx], Coroutine[Any, Any, None]]


@pytest.fixture
def run(server: ServerInfo) -> Callable[[Scenario], None]:
    """Run one scenario on a fresh event loop with its own client; drop its collection."""

    def go(scenario: Scenario) -> None:
        async def main() -> None:
            commands = Commands()
            client: AsyncMongoClient[Any] = AsyncMongoClient(server.url, event_listeners=[commands])
            ctx = Ctx(client, server.extra["database"], f"cm_async_{unique_suffix()}", commands)
            try:
                await scenario(ctx)
            finally:
                await client[ctx.database].drop_collection(ctx.collection_name)
                await client.close()

        asyncio.run(main())

    return go


# -- construction and schema --------------------------------------------------------------
def test_the_constructor_sends_nothing_and_the_first_call_creates_the_schema(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(ctx: Ctx) -> None:
        repo = ctx.make()
        assert ctx.commands.names == []  # an async constructor cannot do I/O
        assert await repo.find_by_conversation_id("none") == []
        assert ctx.commands.names[:1] == ["listIndexes"] and "createIndexes" in ctx.commands.names
        assert any(ix["key"] == POSITION_INDEX for ix in await ctx.indexes())
        ctx.commands.names.clear()
        await repo.append("c", UserMessage("x"))
        assert "listIndexes" not in ctx.commands.names and "createIndexes" not in ctx.commands.names

    run(scenario)


def test_concurrent_first_calls_create_the_schema_once_per_repository(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(ctx: Ctx) -> None:
        repo = ctx.make()
        await asyncio.gather(*(repo.append(f"c{i}", UserMessage("x")) for i in range(20)))
        assert ctx.commands.names.count("listIndexes") == 1
        assert len(await repo.find_conversation_ids()) == 20

    run(scenario)


def test_ttl_index_is_recreated_when_the_ttl_changes(run: Callable[[Scenario], None]) -> None:
    async def scenario(ctx: Ctx) -> None:
        await ctx.make(ttl=timedelta(hours=1)).create_schema()
        assert await ctx.ttl_expiries() == [3600]
        await ctx.make(ttl=timedelta(minutes=5)).find_conversation_ids()  # deferred set-up
        assert await ctx.ttl_expiries() == [300]
        never = ctx.make(ttl=None, initialize_schema="never")
        assert await never.find_conversation_ids() == []  # not managing: untouched
        assert await ctx.ttl_expiries() == [300]
        await ctx.make(ttl=timedelta(seconds=1.2)).create_schema()  # whole seconds, rounded up
        assert await ctx.ttl_expiries() == [2]
        await ctx.make(ttl=None).create_schema()  # managing, no TTL: dropped
        assert await ctx.ttl_expiries() == []
        assert any(ix["key"] == POSITION_INDEX for ix in await ctx.indexes())

    run(scenario)


def test_concurrent_constructors_with_a_ttl_agree_on_one_index(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(ctx: Ctx) -> None:
        repos = [ctx.make(ttl=timedelta(minutes=7)) for _ in range(6)]
        await asyncio.gather(*(r.append("c", UserMessage(f"m{i}")) for i, r in enumerate(repos)))
        assert await ctx.ttl_expiries() == [420]
        assert len(await repos[0].find_by_conversation_id("c")) == 6

    run(scenario)


def test_never_creates_no_index_and_refuses_until_created(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(ctx: Ctx) -> None:
        repo = ctx.make(initialize_schema="never", ttl=timedelta(hours=1))
        with pytest.raises(SchemaError, match="create_schema"):
            await repo.append("c", UserMessage("refused"))
        assert [ix for ix in await ctx.indexes() if ix["key"] != [("_id", 1)]] == []
        await repo.create_schema()
        await repo.append("c", UserMessage("stored"))
        assert [m.text for m in await repo.find_by_conversation_id("c")] == ["stored"]
        assert await ctx.ttl_expiries() == [3600]

    run(scenario)


def test_async_ensure_indexes_is_the_public_twin(run: Callable[[Scenario], None]) -> None:
    async def scenario(ctx: Ctx) -> None:
        await async_ensure_indexes(ctx.client[ctx.database][ctx.collection_name], None)
        assert any(ix["key"] == POSITION_INDEX for ix in await ctx.indexes())
        ctx.commands.names.clear()
        await async_ensure_indexes(ctx.client[ctx.database][ctx.collection_name], None)
        assert ctx.commands.names == ["listIndexes"]  # already matching: no DDL

    run(scenario)


# -- ids, clients and URLs ------------------------------------------------------------------
@pytest.mark.parametrize("bad", [{"$ne": None}, {"$gt": ""}, ["a"], 42, None])
def test_operator_ids_never_reach_the_server(run: Callable[[Scenario], None], bad: object) -> None:
    async def scenario(ctx: Ctx) -> None:
        repo = ctx.make()
        await repo.save_all("victim", [UserMessage("keep me")])
        ctx.commands.names.clear()
        memory = AsyncMessageWindowChatMemory(repo)
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: repo.find_by_conversation_id(bad),  # type: ignore[arg-type]
            lambda: repo.delete_by_conversation_id(bad),  # type: ignore[arg-type]
            lambda: repo.save_all(bad, [UserMessage("x")]),  # type: ignore[arg-type]
            lambda: repo.append(bad, UserMessage("x")),  # type: ignore[arg-type]
            lambda: repo.find_last(bad, 2),  # type: ignore[arg-type]
            lambda: memory.add(bad, UserMessage("x")),  # type: ignore[arg-type]
            lambda: memory.get(bad),  # type: ignore[arg-type]
        ]
        for call in calls:
            with pytest.raises(InvalidArgumentError) as info:
                await call()
            assert info.value.argument == "conversation_id"
        assert ctx.commands.names == []
        assert [m.text for m in await repo.find_by_conversation_id("victim")] == ["keep me"]

    run(scenario)


def test_a_blocking_client_is_refused(server: ServerInfo) -> None:
    client: MongoClient[Any] = MongoClient(server.url, connect=False)
    try:
        for bad in (client, client[server.extra["database"]]):
            with pytest.raises(InvalidArgumentError, match="AsyncMongoClient") as info:
                AsyncMongoChatMemoryRepository(bad)  # type: ignore[arg-type]
            assert info.value.argument == "client"
    finally:
        client.close()


def test_default_collection_and_database_from_the_client(run: Callable[[Scenario], None]) -> None:
    async def scenario(ctx: Ctx) -> None:
        repo = AsyncMongoChatMemoryRepository(ctx.client, initialize_schema="never")
        assert repo.collection.name == "ai_chat_memory"
        assert repo.database.name == ctx.database  # the URL's
        other = AsyncMongoChatMemoryRepository(ctx.client, database_name="other_db")
        assert other.database.name == "other_db"
        assert ctx.commands.names == []

    run(scenario)


def test_from_url_owns_its_client_and_a_passed_client_stays_open(
    run: Callable[[Scenario], None], server: ServerInfo
) -> None:
    async def scenario(ctx: Ctx) -> None:
        assert server.url is not None
        url_repo = await AsyncMongoChatMemoryRepository.from_url(
            server.url, collection_name=ctx.collection_name
        )
        # created eagerly, before any call
        assert any(ix["key"] == POSITION_INDEX for ix in await ctx.indexes())
        async with url_repo as repo:
            await repo.save_all("u", [UserMessage("via url")])
            owned = repo._owned
            assert owned is not None
        with pytest.raises(Exception, match=r"closed|after close"):
            await owned.admin.command("ping")
        await ctx.make().close()  # a passed client is never closed
        assert (await ctx.client.admin.command("ping"))["ok"]
        via_core = await async_repository_from_url(server.url, collection_name=ctx.collection_name)
        assert isinstance(via_core, AsyncMongoChatMemoryRepository)
        assert [m.text for m in await via_core.find_by_conversation_id("u")] == ["via url"]
        await via_core.close()

    run(scenario)


def test_from_url_needs_a_database_and_a_mongodb_url(server: ServerInfo) -> None:
    async def scenario() -> None:
        assert server.url is not None
        no_db = server.url.replace(f"/{server.extra['database']}", "/")
        with pytest.raises(InvalidArgumentError) as info:
            await AsyncMongoChatMemoryRepository.from_url(no_db)
        assert info.value.argument == "database_name"
        with pytest.raises(InvalidArgumentError):
            await AsyncMongoChatMemoryRepository.from_url("redis://localhost/0")
        with pytest.raises(InvalidArgumentError) as bad:
            await AsyncMongoChatMemoryRepository.from_url("mongodb://host:notaport/db")
        assert bad.value.argument == "url"

    asyncio.run(scenario())


def test_unreachable_server_is_backend_unavailable() -> None:
    url, options = "mongodb://127.0.0.1:9/chatmem", {"serverSelectionTimeoutMS": 300}

    async def scenario() -> None:
        with pytest.raises(BackendUnavailableError) as info:  # "always": indexes at once
            await AsyncMongoChatMemoryRepository.from_url(url, client_options=options)
        assert info.value.__cause__ is not None
        repo = await AsyncMongoChatMemoryRepository.from_url(
            url, client_options=options, initialize_schema="never"
        )
        with pytest.raises(BackendUnavailableError) as info:
            await repo.find_by_conversation_id("x")
        assert info.value.__cause__ is not None
        await repo.close()

    asyncio.run(scenario())


# -- writes ------------------------------------------------------------------------------------
def test_window_adds_keep_the_document_the_size_of_the_window(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(ctx: Ctx) -> None:
        repo = ctx.make()
        memory = AsyncMessageWindowChatMemory(repo, max_messages=4)
        await memory.add("w", SystemMessage("sys"))
        for i in range(30):
            await memory.add("w", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
        doc = await repo.collection.find_one({"_id": "w"})
        assert doc is not None and len(doc["messages"]) <= 1 + 5 and doc["next_position"] == 61
        assert [m.text for m in await memory.get("w")] == ["sys", "u29", "a29"]

    run(scenario)


def test_tasks_on_two_repositories_lose_nothing(run: Callable[[Scenario], None]) -> None:
    async def scenario(ctx: Ctx) -> None:
        repos = [ctx.make(), ctx.make()]

        async def writer(w: int) -> None:
            memory = AsyncMessageWindowChatMemory(repos[w % 2], max_messages=1000)
            for n in range(15):
                await memory.add("race", UserMessage(f"w{w}:{n}"))

        await asyncio.gather(*(writer(w) for w in range(6)))
        got = await repos[0].find_by_conversation_id("race")
        for w in range(6):
            assert [m.text for m in got if m.text and m.text.startswith(f"w{w}:")] == [
                f"w{w}:{n}" for n in range(15)
            ]
        assert [m.position for m in got] == list(range(90))

    run(scenario)


def test_writers_with_stale_snapshots_lose_nothing(run: Callable[[Scenario], None]) -> None:
    async def scenario(ctx: Ctx) -> None:
        first, second = ctx.make(), ctx.make()
        for i in range(5):  # each add starts from a snapshot the other repository made stale
            await first.append("s", UserMessage(f"a{i}"))
            await second.append("s", UserMessage(f"b{i}"))
        await first.delete_by_conversation_id("s")
        await second.append("s", UserMessage("after delete"))  # its snapshot is of a deleted doc
        await second.save_all("s", [UserMessage("replaced")])
        await first.append("s", UserMessage("appended"))
        assert [(m.text, m.position) for m in await first.find_by_conversation_id("s")] == [
            ("replaced", 0),
            ("appended", 1),
        ]

    run(scenario)


def test_a_conversation_over_16_mib_is_refused_with_a_clear_error(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(ctx: Ctx) -> None:
        repo = ctx.make()
        await repo.save_all("big", [UserMessage("small")])
        huge = Media(mime_type="application/octet-stream", data=b"\x00" * (17 * 1024 * 1024))
        writes: list[Callable[[], Awaitable[None]]] = [
            lambda: repo.save_all("big", [UserMessage("x", media=(huge,))]),
            lambda: repo.append("big", UserMessage("x", media=(huge,))),
        ]
        for write in writes:
            with pytest.raises(InvalidArgumentError, match="16 MiB") as info:
                await write()
            assert info.value.argument == "messages"
        assert [m.text for m in await repo.find_by_conversation_id("big")] == ["small"]

    run(scenario)


def test_a_foreign_document_under_an_id_is_a_schema_error(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(ctx: Ctx) -> None:
        repo = ctx.make()
        await repo.collection.insert_one({"_id": "foreign", "something": "else"})
        await repo.collection.insert_one({"_id": 12345, "not": "a string id"})
        with pytest.raises(SchemaError, match="not a chatmem conversation"):
            await repo.find_by_conversation_id("foreign")
        with pytest.raises(SchemaError):
            await repo.append("foreign", UserMessage("x"))
        await repo.save_all("mine", [UserMessage("ok")])
        assert sorted(await repo.find_conversation_ids()) == ["foreign", "mine"]

    run(scenario)


class Replies(monitoring.CommandListener):
    """The array elements each ``find`` reply carried (messages, systems, chunks)."""

    def __init__(self) -> None:
        self.finds: list[tuple[int, int]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if event.command_name == "find":
            docs = (event.reply.get("cursor") or {}).get("firstBatch") or ()
            got = sum(len(v) for d in docs for v in d.values() if isinstance(v, list))
            self.finds.append((got, len(bson.encode(event.reply))))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def test_every_read_after_save_all_of_a_long_history_is_bounded(server: ServerInfo) -> None:
    """Issue 19 on the async twin: after save_all of 10,000 messages, the window read,
    find_last and a cold writer's snapshot read return what they need, not the document."""
    payload = "x" * 300
    history = [SystemMessage("be terse")] + [UserMessage(f"{i} {payload}") for i in range(10_000)]

    def bounded(finds: list[tuple[int, int]], elements: int) -> None:
        assert finds
        for got, size in finds:
            assert got <= elements and size <= elements * (len(payload) + 200) + 1_000

    async def scenario() -> None:
        replies = Replies()
        client: AsyncMongoClient[Any] = AsyncMongoClient(server.url, event_listeners=[replies])
        name = f"cm_async_{unique_suffix()}"
        repo = AsyncMongoChatMemoryRepository(
            client[server.extra["database"]], collection_name=name
        )
        try:
            await repo.save_all("long", history)
            replies.finds.clear()
            window = await AsyncMessageWindowChatMemory(repo, max_messages=20).get("long")
            assert [m.text for m in window][1:] == [m.text for m in history[-19:]]
            bounded(replies.finds, 1 + 21)
            replies.finds.clear()
            assert [m.position for m in await repo.find_last("long", 3)] == [9998, 9999, 10000]
            bounded(replies.finds, 3 + 3)
            replies.finds.clear()
            cold = AsyncMongoChatMemoryRepository(
                client[server.extra["database"]], collection_name=name
            )
            memory = AsyncMessageWindowChatMemory(cold, max_messages=20, keep_history=True)
            await memory.add("long", [UserMessage("q"), AssistantMessage("a")])
            await memory.add("long", [SystemMessage("new rules"), UserMessage("q2")])
            bounded(replies.finds, 1 + 2 * CHUNK)
            assert len(await repo.find_by_conversation_id("long")) == 10_000 + 1 + 3
        finally:
            await repo.collection.drop()
            await client.close()

    asyncio.run(scenario())
