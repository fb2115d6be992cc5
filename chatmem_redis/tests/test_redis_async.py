"""The async twin on ``redis.asyncio``: what the shared suite (run with ``--twin async``)
does not cover: deferred and eager index creation, the client lifecycle, one script call
per operation, TTL on every key, the WATCH/MULTI window edit under concurrent tasks and
cancellation, and the awaitable advanced queries with their escaping and re-checks."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import redis.asyncio

from chatmem.core import (
    AssistantMessage,
    AsyncChatMemoryRepository,
    AsyncMessageWindowChatMemory,
    BackendUnavailableError,
    InvalidArgumentError,
    InvalidIdentifierError,
    Media,
    SchemaError,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    async_repository_from_url,
)
from chatmem.redis import (
    DEFAULT_ASYNC_MAX_CONNECTIONS,
    AsyncAdvancedRedisChatMemoryRepository,
    AsyncRedisChatMemoryRepository,
    MetadataField,
    RedisChatMemoryRepository,
)
from chatmem.testing.harness import ServerInfo, free_port

pytestmark = pytest.mark.backend("redis")

T0 = datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
FIELDS = [MetadataField.tag("priority"), MetadataField.numeric("score"), MetadataField.text("note")]


def run(body: Callable[[], Awaitable[None]]) -> None:
    """Run one test body on a fresh event loop (the async clients are made inside it)."""
    asyncio.run(body())  # type: ignore[arg-type]


def every_kind() -> list[Any]:
    return [
        SystemMessage("sys", metadata={"v": 1}),
        UserMessage(
            "look",
            metadata={"n": 1, "f": 1.0, "big": 10**25, "l": [1, {"a": None}]},
            media=[Media(mime_type="image/png", data=b"\x00\x01\xff", id="m1", name="pic")],
        ),
        AssistantMessage(None, tool_calls=[ToolCall(id="c1", name="f", arguments='{"x": 1}')]),
        ToolResponseMessage([ToolResponse(id="c1", name="f", response_data='{"ok": true}')]),
        AssistantMessage("done", metadata={"finish": "stop"}),
    ]


def sync_client(server: ServerInfo, **kwargs: Any) -> redis.Redis:
    assert server.url is not None
    return redis.Redis.from_url(server.url, **kwargs)


def indexes(server: ServerInfo) -> list[str]:
    return [x.decode() for x in sync_client(server).execute_command("FT._LIST")]


@asynccontextmanager
async def async_repo(
    server: ServerInfo, harness: Any, **options: Any
) -> AsyncIterator[AsyncRedisChatMemoryRepository]:
    """A repository on a caller's asyncio client (in a fresh namespace), cleaned up after."""
    assert server.url is not None
    client = redis.asyncio.Redis.from_url(server.url)
    repo = AsyncRedisChatMemoryRepository(client, **{**harness.namespace_options(), **options})
    try:
        yield repo
    finally:
        await client.aclose()
        harness.cleanup(server, repo)


@contextmanager
def monitored(server: ServerInfo) -> Iterator[list[str]]:
    """Top-level commands clients sent while the block ran (script-internal ones left out)."""
    watcher = sync_client(server)
    commands: list[str] = []
    with watcher.monitor() as m:
        marker = sync_client(server)
        marker.echo("chatmem-monitor-start")
        for event in m.listen():
            if "chatmem-monitor-start" in event["command"]:
                break
        yield commands
        marker.echo("chatmem-monitor-stop")
        for event in m.listen():
            if "chatmem-monitor-stop" in event["command"]:
                break
            if event.get("client_type") != "lua":
                commands.append(event["command"].split()[0].strip('"').upper())
        marker.close()
    watcher.close()


# -- construction, index creation, lifecycle ----------------------------------------------
def test_the_async_twin_is_exported_and_implements_both_protocols(
    server: ServerInfo, harness: Any
) -> None:
    async def body() -> None:
        async with async_repo(server, harness) as repo:
            assert isinstance(repo, AsyncChatMemoryRepository)
            assert isinstance(repo, AsyncAdvancedRedisChatMemoryRepository)
            assert not isinstance(repo, RedisChatMemoryRepository)
            await repo.save_all("k", every_kind())
            assert await repo.find_by_conversation_id("k") == every_kind()
            await repo.append("k", UserMessage("more"))
            assert (await repo.find_last("k", 1)) == [UserMessage("more")]
            assert await repo.find_conversation_ids() == ["k"]
            await repo.delete_by_conversation_id("k")
            assert await repo.find_by_conversation_id("k") == []

    run(body)


def test_the_constructor_does_no_io_and_the_first_call_creates_the_index(
    server: ServerInfo, harness: Any
) -> None:
    async def body() -> None:
        dead = redis.asyncio.Redis(port=free_port(), socket_connect_timeout=0.2)
        AsyncRedisChatMemoryRepository(dead)  # nothing to reach yet: no error
        with pytest.raises(InvalidIdentifierError):  # options still fail before any I/O
            AsyncRedisChatMemoryRepository(dead, key_prefix="bad prefix")
        await dead.aclose()
        async with async_repo(server, harness) as repo:
            assert repo.config.index_name not in indexes(server)
            assert await repo.find_by_conversation_id("x") == []
            assert repo.config.index_name in indexes(server)

    run(body)


def test_concurrent_first_calls_create_the_index_once(server: ServerInfo, harness: Any) -> None:
    async def body() -> None:
        async with async_repo(server, harness) as repo:
            with monitored(server) as commands:
                await asyncio.gather(*(repo.append(f"c{i}", UserMessage("x")) for i in range(20)))
            assert commands.count("FT.CREATE") == 1 and commands.count("EVALSHA") >= 21
            assert len(await repo.find_conversation_ids()) == 20

    run(body)


def test_from_url_creates_the_index_and_owns_its_client(server: ServerInfo, harness: Any) -> None:
    async def body() -> None:
        assert server.url is not None
        options = harness.namespace_options()
        name = f"owned-{options['index_name']}"

        def connections() -> int:
            listed = sync_client(server).client_list()
            return sum(c["name"] == name for c in listed)

        url = f"{server.url}?client_name={name}"
        async with await AsyncRedisChatMemoryRepository.from_url(url, **options) as repo:
            assert options["index_name"] in indexes(server)
            await repo.save_all("u", [UserMessage("x")])
            assert connections() == 1
        assert connections() == 0  # its own client is closed
        via_registry = await async_repository_from_url(server.url, **options)
        assert isinstance(via_registry, AsyncRedisChatMemoryRepository)
        assert await via_registry.find_by_conversation_id("u") == [UserMessage("x")]
        await via_registry.close()
        await via_registry.close()  # closing twice is a no-op
        client = redis.asyncio.Redis.from_url(server.url)
        given = AsyncRedisChatMemoryRepository(client, **options)
        await given.close()
        assert await client.ping()  # a given client stays open
        await client.aclose()
        harness.cleanup(server, given)

    run(body)


def test_from_url_bounds_its_pool_and_reads_no_metadata_per_connection(
    server: ServerInfo, harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[str] = []
    real_version = importlib.metadata.version

    def version(name: str) -> str:
        looked_up.append(name)
        return real_version(name)

    async def body() -> None:
        assert server.url is not None
        options = harness.namespace_options()
        for query, bound in (("", DEFAULT_ASYNC_MAX_CONNECTIONS), ("&max_connections=3", 3)):
            name = f"pool-{options['index_name']}-{bound}"
            url = f"{server.url}?client_name={name}{query}"
            repo = await AsyncRedisChatMemoryRepository.from_url(url, **options)
            looked_up.clear()
            await asyncio.gather(*(repo.append(f"c{i}", UserMessage("x")) for i in range(60)))
            if hasattr(redis, "driver_info"):  # redis-py 7+: a DriverInfo per client
                assert "redis" not in looked_up, "a new connection read the package metadata"
            opened = sum(c["name"] == name for c in sync_client(server).client_list())
            assert 1 <= opened <= bound  # the other tasks waited for a free connection
            await repo.close()
        harness.cleanup(server, repo)

    monkeypatch.setattr(importlib.metadata, "version", version)
    run(body)


def test_an_unreachable_server_is_backend_unavailable() -> None:
    async def body() -> None:
        url = f"redis://127.0.0.1:{free_port()}/0"
        with pytest.raises(BackendUnavailableError) as info:
            await AsyncRedisChatMemoryRepository.from_url(url)  # eager: fails here
        assert isinstance(info.value.__cause__, redis.ConnectionError)
        repo = await AsyncRedisChatMemoryRepository.from_url(url, initialize_schema="never")
        with pytest.raises(BackendUnavailableError):
            await repo.find_by_conversation_id("x")
        with pytest.raises(InvalidArgumentError):  # validation first, no I/O
            await repo.find_by_conversation_id("")
        await repo.close()

    run(body)


def test_never_mode_creates_nothing_and_search_names_the_option(
    server: ServerInfo, harness: Any
) -> None:
    async def body() -> None:
        async with async_repo(server, harness, initialize_schema="never") as repo:
            await repo.save_all("h", [UserMessage("x")])
            assert await repo.find_by_conversation_id("h") == [UserMessage("x")]
            assert repo.config.index_name not in indexes(server)
            with pytest.raises(SchemaError, match="initialize_schema"):
                await repo.find_by_type("USER")
            await repo.create_schema()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30  # existing documents are indexed in the background
            while not (hits := await repo.find_by_type("USER", conversation_id="h")):
                assert loop.time() < deadline, "the new index never served the stored message"
                await asyncio.sleep(0.1)
            assert [h.message for h in hits] == [UserMessage("x")]

    run(body)


def test_an_index_missing_a_configured_field_is_a_schema_error(
    server: ServerInfo, harness: Any
) -> None:
    async def body() -> None:
        assert server.url is not None
        options = harness.namespace_options()
        repo = await AsyncRedisChatMemoryRepository.from_url(server.url, **options)
        with pytest.raises(SchemaError, match="metadata_priority"):
            await AsyncRedisChatMemoryRepository.from_url(
                server.url, metadata_fields=[MetadataField.tag("priority")], **options
            )
        await repo.close()
        harness.cleanup(server, repo)

    run(body)


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("decode", [False, True])
def test_any_async_client_flavour_works(
    server: ServerInfo, harness: Any, protocol: int, decode: bool
) -> None:
    async def body() -> None:
        assert server.url is not None
        client = redis.asyncio.Redis.from_url(
            server.url, protocol=protocol, decode_responses=decode
        )
        repo = AsyncRedisChatMemoryRepository(client, **harness.namespace_options())
        try:
            await repo.save_all("é,{x}", every_kind())
            assert await repo.find_by_conversation_id("é,{x}") == every_kind()
            assert await repo.find_conversation_ids() == ["é,{x}"]
            assert len(await repo.find_by_type("ASSISTANT")) == 2
            memory = AsyncMessageWindowChatMemory(repo, max_messages=3)
            await memory.add("é,{x}", SystemMessage("new"))  # the WATCH/MULTI edit
            assert (await memory.get("é,{x}"))[0] == SystemMessage("new")
        finally:
            await client.aclose()
            harness.cleanup(server, repo)

    run(body)


# -- round trips, TTL ------------------------------------------------------------------------
def test_every_operation_is_one_script_call_or_one_read(server: ServerInfo, harness: Any) -> None:
    async def body() -> None:
        async with async_repo(server, harness) as repo:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=4)
            for i in range(6):
                await memory.add("rt", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
            await repo.save_all("rt2", [UserMessage("x")])
            await repo.delete_by_conversation_id("rt2")  # every script is loaded now
            await repo.find_last("rt", 2)
            script, read = ["EVALSHA"], ["ZRANGE"]
            for call, expected in (
                (lambda: memory.add("rt", UserMessage("one more")), script),
                (lambda: memory.get("rt"), read),
                (lambda: repo.find_last("rt", 3), read),
                (lambda: repo.save_all("rt2", every_kind()), script),
                (lambda: repo.delete_by_conversation_id("rt2"), script),
                (lambda: repo.find_conversation_ids_page(limit=10), script),
            ):
                with monitored(server) as commands:
                    await call()
                assert [c.split()[0] for c in commands] == expected, commands

    run(body)


def test_ttl_expires_the_conversation_whole_and_its_documents_after_it(
    server: ServerInfo, harness: Any
) -> None:
    async def body() -> None:
        async with async_repo(server, harness, ttl=timedelta(hours=1)) as repo:
            await repo.save_all("ttl", every_kind())
            await asyncio.sleep(0.01)
            memory = AsyncMessageWindowChatMemory(repo, max_messages=10)
            await memory.add("ttl", [SystemMessage("new"), UserMessage("later")])
            keys = repo._layout.conversation("ttl")
            client = sync_client(server)
            pending = [k for k in [keys.seq, keys.log, keys.pending_docs] if client.exists(k)]
            assert len(pending) == 3  # the documents wait for a search, with the same expiry
            assert len({client.pexpiretime(k) for k in pending}) == 1
            await repo.index_pending()
            docs = client.keys(keys.doc_prefix.replace("{", "\\{").replace("}", "\\}") + "*")
            found = [k for k in [keys.seq, keys.log, keys.pending_docs, *docs] if client.exists(k)]
            assert len(found) == 2 + 6  # the old system message was replaced; none pending
            expiries = {client.pexpiretime(k) for k in found}
            assert len(expiries) == 1 and expiries.pop() > 0  # the conversation expires whole
            raw = client.execute_command("JSON.GET", keys.doc_prefix + "1")
            assert json.loads(raw)["conversation_id"] == "ttl"

    run(body)


# -- the window edit under concurrent tasks and cancellation ------------------------------
def test_concurrent_system_edits_on_one_loop_lose_no_message(
    server: ServerInfo, harness: Any
) -> None:
    async def body() -> None:
        async with async_repo(server, harness) as repo:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=100, keep_history=True)
            await asyncio.gather(
                *(
                    memory.add("w", [SystemMessage(f"s{i}"), UserMessage(f"u{i}")])
                    for i in range(20)
                )
            )
            stored = await repo.find_by_conversation_id("w")
            systems = [m for m in stored if isinstance(m, SystemMessage)]
            users = sorted(m.text for m in stored if isinstance(m, UserMessage))
            assert len(systems) == 1 and users == sorted(f"u{i}" for i in range(20))
            positions = [m.position for m in stored]
            assert positions == sorted(positions) and len(set(positions)) == len(positions)

    run(body)


def test_cancelled_window_edits_leave_old_or_new_and_the_pool_usable(
    server: ServerInfo, harness: Any
) -> None:
    async def body() -> None:
        async with async_repo(server, harness) as repo:
            memory = AsyncMessageWindowChatMemory(repo, max_messages=10)
            await memory.add("c", [SystemMessage("old"), UserMessage("q")])
            for delay in (0.0, 0.0005, 0.001, 0.002, 0.005):
                task = asyncio.ensure_future(
                    memory.add("c", [SystemMessage(f"new{delay}"), UserMessage(f"q{delay}")])
                )
                await asyncio.sleep(delay)
                task.cancel()  # at whatever step it has reached; it may also be done
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                stored = await repo.find_by_conversation_id("c")
                texts = [m.text for m in stored]
                assert texts[-1] in ("q", f"q{delay}") and texts.count(f"q{delay}") <= 1
                assert len([m for m in stored if isinstance(m, SystemMessage)]) == 1
                await memory.add("c", [SystemMessage("old"), UserMessage("q")])  # edits still run
            await memory.add("c", UserMessage("after"))
            assert (await memory.get("c"))[-1] == UserMessage("after")

    run(body)


# -- advanced queries, awaited ---------------------------------------------------------------
@asynccontextmanager
async def searchable(server: ServerInfo, harness: Any) -> AsyncIterator[Any]:
    async with async_repo(server, harness, metadata_fields=FIELDS) as repo:
        await repo.save_all(
            "Conv-1",
            [
                SystemMessage("You are terse.", created_at=T0),
                UserMessage(
                    "What is the weather in Paris?",
                    metadata={"priority": "high", "score": 3, "note": "first question"},
                    created_at=T0 + timedelta(seconds=1),
                ),
                ToolResponseMessage(
                    [ToolResponse(id="c1", name="weather", response_data="sunny 21C")],
                    created_at=T0 + timedelta(seconds=2),
                ),
                AssistantMessage(
                    "Sunny.", metadata={"score": 4.5}, created_at=T0 + timedelta(seconds=3)
                ),
            ],
        )
        await repo.save_all(
            "conv-1",  # differs only in case: a different conversation
            [
                UserMessage("Weather in Rome?", metadata={"priority": "low", "score": 3},
                            created_at=T0 + timedelta(seconds=10)),
                AssistantMessage("Rainy.", metadata={"priority": "High", "score": "3"},
                                 created_at=T0 + timedelta(seconds=11)),
            ],
        )  # fmt: skip
        yield repo


def texts(hits: list[Any]) -> list[tuple[str, str | None]]:
    return [(h.conversation_id, h.message.text) for h in hits]


def test_advanced_queries_are_awaitable_exact_and_oldest_first(
    server: ServerInfo, harness: Any
) -> None:
    async def body() -> None:
        async with searchable(server, harness) as repo:
            assert texts(await repo.find_by_metadata("priority", "high")) == [
                ("Conv-1", "What is the weather in Paris?")
            ]
            assert texts(await repo.find_by_metadata("priority", "High")) == [("conv-1", "Rainy.")]
            by_score = await repo.find_by_metadata("score", 3)  # "3" (a str) is not a number
            assert [h.conversation_id for h in by_score] == ["Conv-1", "conv-1"]
            assert len(await repo.find_by_metadata("note", "question")) == 1
            weather = await repo.find_by_content("weather")
            assert [h.conversation_id for h in weather] == ["Conv-1", "conv-1"]
            assert texts(await repo.find_by_content("weather", conversation_id="conv-1")) == [
                ("conv-1", "Weather in Rome?")
            ]
            assert len(await repo.find_by_content("sunny 21C")) == 1  # tool response data
            tools = await repo.find_by_type("TOOL")
            assert [h.created_at for h in tools] == [T0 + timedelta(seconds=2)]
            window = await repo.find_by_time_range(
                T0 + timedelta(seconds=1), T0 + timedelta(seconds=10)
            )
            assert len(window) == 4 and window == sorted(window, key=lambda h: h.created_at)
            raw = await repo.execute_query("@message_type:{ASSISTANT}", limit=1)
            assert texts(raw) == [("Conv-1", "Sunny.")]

    run(body)


@pytest.mark.parametrize("value", ["high | low", "high}|{low", "*", "hi*", "-high", "high,low"])
def test_tag_and_content_injection_match_nothing(
    server: ServerInfo, harness: Any, value: str
) -> None:
    async def body() -> None:
        async with searchable(server, harness) as repo:
            assert await repo.find_by_metadata("priority", value) == []
            assert await repo.find_by_content(f"Rome) | @content:(Paris {value}") == []

    run(body)


def test_advanced_queries_validate_before_any_io() -> None:
    async def body() -> None:
        dead = redis.asyncio.Redis(port=free_port(), socket_connect_timeout=0.2)
        repo = AsyncRedisChatMemoryRepository(dead, metadata_fields=FIELDS)
        for call, error in (
            (lambda: repo.find_by_type("NOPE"), "message_type"),
            (lambda: repo.find_by_content(""), "text"),
            (lambda: repo.find_by_time_range(T0, T0 - timedelta(1)), "end"),
            (lambda: repo.find_by_metadata("unknown", "x"), "key"),
            (lambda: repo.find_by_metadata("score", "3"), "value"),
            (lambda: repo.execute_query(" "), "query"),
            (lambda: repo.find_by_type("USER", limit=0), "limit"),
            (lambda: repo.find_by_type("USER", conversation_id=""), "conversation_id"),
        ):
            with pytest.raises(InvalidArgumentError, match=error):
                await call()
        await dead.aclose()

    run(body)
