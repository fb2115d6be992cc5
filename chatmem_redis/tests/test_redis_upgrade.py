"""Upgrade from the two-set layout: conversations written by the previous release's scripts
(``_legacy_layout``) read whole, take writes, stay searchable and lose nothing to concurrent
writers while they are moved into the log, on the sync and the async twin."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import redis.asyncio

from chatmem.core import (
    AssistantMessage,
    ChatTurn,
    InMemoryChatMemoryRepository,
    Media,
    MessageWindowChatMemory,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.redis import (
    AsyncRedisChatMemoryRepository,
    RedisChatMemoryRepository,
)
from chatmem.testing.harness import ServerInfo

from ._legacy_layout import legacy_append, legacy_save_all

pytestmark = pytest.mark.backend("redis")

T0 = datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)


def history() -> list[Any]:
    """Every kind, non-ASCII and a newline included, with distinct timestamps."""
    ms = [
        SystemMessage("Be terse. ünïcode 😀", metadata={"v": 1}),
        UserMessage(
            "weather in Paris?\nplease",
            metadata={"n": 1, "big": 10**25, "l": [1, {"a": None}]},
            media=[Media(mime_type="image/png", data=b"\x00\xff", id="m1", name="pic")],
        ),
        AssistantMessage(
            None, tool_calls=[ToolCall(id="c1", name="w", arguments='{"x": 1}', type="function")]
        ),
        ToolResponseMessage([ToolResponse(id="c1", name="w", response_data="sunny 21C")]),
        AssistantMessage("Sunny in Paris.", metadata={"finish": "stop"}),
    ]
    return [
        m.with_store_fields(created_at=T0 + timedelta(seconds=i), position=None)
        for i, m in enumerate(ms)
    ]


@pytest.fixture
def client(server: ServerInfo) -> Iterator[redis.Redis]:
    assert server.url is not None
    c = redis.Redis.from_url(server.url)
    yield c
    c.close()


@pytest.fixture
def repo(server: ServerInfo, harness: Any, client: redis.Redis) -> Iterator[Any]:
    r = RedisChatMemoryRepository(client, **harness.namespace_options())
    yield r
    harness.cleanup(server, r)


def old_keys(client: redis.Redis, repo: Any, cid: str) -> dict[str, bool]:
    keys = repo._layout.conversation(cid)
    return {k: bool(client.exists(getattr(keys, k))) for k in ("old_sys", "old_msg", "log")}


def assert_migrated(client: redis.Redis, repo: Any, cid: str, n: int) -> None:
    """The old sets are gone, the log holds ``n`` entries, no document keeps its copy."""
    keys = repo._layout.conversation(cid)
    assert old_keys(client, repo, cid) == {"old_sys": False, "old_msg": False, "log": True}
    assert client.zcard(keys.log) == n
    repo.index_pending()  # documents of new messages wait for a search
    for entry in client.zrange(keys.log, 0, -1):
        key = keys.doc_prefix + entry.split()[0].decode()
        doc = json.loads(client.execute_command("JSON.GET", key))
        assert "message" not in doc


def test_a_legacy_conversation_reads_whole_with_its_positions_and_times(
    client: redis.Redis, repo: Any
) -> None:
    prefix = repo.config.key_prefix
    legacy_save_all(client, prefix, "Conv A", history())
    legacy_append(client, prefix, "Conv A", [UserMessage("and Rome?")])
    assert old_keys(client, repo, "Conv A")["log"] is False  # really the old layout
    got = repo.find_by_conversation_id("Conv A")
    assert got == [*history(), UserMessage("and Rome?")]
    assert [m.position for m in got] == [0, 1, 2, 3, 4, 5]
    assert [m.created_at for m in got[:5]] == [m.created_at for m in history()]
    assert got[1].metadata["big"] == 10**25 and got[1].media[0].data == b"\x00\xff"
    assert_migrated(client, repo, "Conv A", 6)
    assert repo.find_by_conversation_id("Conv A") == got  # and again, from the log


def test_window_reads_and_a_chat_turn_on_a_legacy_conversation(
    client: redis.Redis, repo: Any
) -> None:
    prefix = repo.config.key_prefix
    legacy_save_all(client, prefix, "w", history())
    oracle = InMemoryChatMemoryRepository()
    oracle.save_all("w", history())
    for size in (2, 4):  # the window read of the legacy data matches the in-memory store's
        memory = MessageWindowChatMemory(repo, max_messages=size)
        assert memory.get("w") == MessageWindowChatMemory(oracle, max_messages=size).get("w")
    assert memory.get("w")[0] == history()[0]  # the system message is kept
    legacy_save_all(client, prefix, "t", history())
    with ChatTurn(repo, "t", last=20) as turn:
        assert turn.messages == history()
        turn.append([UserMessage("next?"), AssistantMessage("Rome.")])
    assert repo.find_by_conversation_id("t") == [
        *history(),
        UserMessage("next?"),
        AssistantMessage("Rome."),
    ]
    assert [m.position for m in repo.find_by_conversation_id("t")] == list(range(7))


def test_every_write_on_a_legacy_conversation_migrates_it_first(
    client: redis.Redis, repo: Any
) -> None:
    prefix = repo.config.key_prefix
    for cid in ("append", "save", "delete", "system"):
        legacy_save_all(client, prefix, cid, history())
    repo.append("append", UserMessage("more"))
    assert repo.find_by_conversation_id("append") == [*history(), UserMessage("more")]
    assert_migrated(client, repo, "append", 6)
    repo.save_all("save", [UserMessage("fresh")])
    assert repo.find_by_conversation_id("save") == [UserMessage("fresh")]
    assert_migrated(client, repo, "save", 1)
    repo.delete_by_conversation_id("delete")
    assert repo.find_by_conversation_id("delete") == []
    keys = repo._layout.conversation("delete")
    assert list(client.scan_iter(match=keys.doc_prefix.replace("{", "[{]") + "*")) == []
    assert not any(old_keys(client, repo, "delete").values())
    # a new system message goes through the WATCH/MULTI window edit
    MessageWindowChatMemory(repo, max_messages=10).add("system", SystemMessage("New rules."))
    got = repo.find_by_conversation_id("system")
    assert got == [*history()[1:], SystemMessage("New rules.")]
    assert sorted(repo.find_conversation_ids()) == ["append", "save", "system"]


def test_search_finds_legacy_messages_before_and_after_migration(
    server: ServerInfo, harness: Any, client: redis.Redis
) -> None:
    repo = RedisChatMemoryRepository(client, **harness.namespace_options())
    try:
        legacy_save_all(client, repo.config.key_prefix, "s", history())
        hits = repo.find_by_content("Paris")
        assert [(h.conversation_id, h.message.text) for h in hits] == [
            ("s", "weather in Paris?\nplease"),
            ("s", "Sunny in Paris."),
        ]
        assert hits[0].message == history()[1] and hits[0].created_at == history()[1].created_at
        repo.find_by_conversation_id("s")  # migrates
        assert_migrated(client, repo, "s", 5)
        again = repo.find_by_content("Paris")
        assert [h.message for h in again] == [h.message for h in hits]
        assert [h.message for h in repo.find_by_type("TOOL")] == [history()[3]]
    finally:
        harness.cleanup(server, repo)


def test_a_legacy_ttl_is_kept_by_a_migrating_read(
    server: ServerInfo, harness: Any, client: redis.Redis
) -> None:
    repo = RedisChatMemoryRepository(client, **harness.namespace_options())
    try:
        legacy_save_all(client, repo.config.key_prefix, "ttl", history(), ttl_ms=600_000)
        assert len(repo.find_by_conversation_id("ttl")) == 5
        keys = repo._layout.conversation("ttl")
        assert 0 < client.pttl(keys.log) <= 600_000
    finally:
        harness.cleanup(server, repo)


def test_concurrent_writers_and_readers_during_the_upgrade_lose_nothing(
    client: redis.Redis, repo: Any
) -> None:
    prefix = repo.config.key_prefix
    conversations = [f"c{i}" for i in range(8)]
    for cid in conversations:
        legacy_save_all(client, prefix, cid, history())
    stop = threading.Event()
    short_reads: list[int] = []

    def writer(w: int) -> None:
        for cid in conversations:
            repo.append(cid, UserMessage(f"w{w}"))

    def reader() -> None:
        while not stop.is_set():
            for cid in conversations:
                n = len(repo.find_by_conversation_id(cid))
                if n < 5:
                    short_reads.append(n)

    with ThreadPoolExecutor(8) as pool:
        readers = [pool.submit(reader) for _ in range(2)]
        for f in [pool.submit(writer, w) for w in range(6)]:
            f.result()
        stop.set()
        for f in readers:
            f.result()
    assert short_reads == []  # no read saw a conversation empty or half moved
    for cid in conversations:
        got = repo.find_by_conversation_id(cid)
        assert got[:5] == history()
        assert sorted(m.text or "" for m in got[5:]) == [f"w{w}" for w in range(6)]
        assert [m.position for m in got] == list(range(11))
        assert_migrated(client, repo, cid, 11)


def test_the_async_twin_reads_writes_and_searches_legacy_data(
    server: ServerInfo, harness: Any, client: redis.Redis
) -> None:
    options = harness.namespace_options()
    prefix = options["key_prefix"]
    for cid in ("read", "append", "many", "search"):
        legacy_save_all(client, prefix, cid, history())

    async def body() -> None:
        assert server.url is not None
        aclient = redis.asyncio.Redis.from_url(server.url)
        repo = AsyncRedisChatMemoryRepository(aclient, **options)
        try:
            assert await repo.find_by_conversation_id("read") == history()
            await repo.append("append", UserMessage("more"))
            assert await repo.find_by_conversation_id("append") == [*history(), UserMessage("more")]
            async with ChatTurn(repo, "append", last=20) as turn:
                turn.append([UserMessage("q"), AssistantMessage("a")])
            assert len(await repo.find_by_conversation_id("append")) == 8
            # 50 tasks append to one legacy conversation at once: the first migrates it
            await asyncio.gather(*(repo.append("many", UserMessage(f"t{i}")) for i in range(50)))
            got = await repo.find_by_conversation_id("many")
            assert got[:5] == history() and len(got) == 55
            assert sorted(m.text or "" for m in got[5:]) == sorted(f"t{i}" for i in range(50))
            hits = await repo.find_by_content("Paris", conversation_id="search")
            assert [h.message for h in hits] == [history()[1], history()[4]]
        finally:
            await aclient.aclose()

    repo = RedisChatMemoryRepository(client, **options)
    try:
        asyncio.run(body())
        for cid, n in (("read", 5), ("append", 8), ("many", 55)):
            assert_migrated(client, repo, cid, n)
    finally:
        harness.cleanup(server, repo)
