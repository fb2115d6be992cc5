"""Redis Cluster (``--backend redis_cluster``): what the shared suite does not show: the keys
of a write share one slot, conversations spread over every master and list in pages across
slots, searches see every master or fail, ``redis+cluster://`` URLs on both twins, and a
master's failover."""

from __future__ import annotations

import asyncio
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

from chatmem.core import (
    AssistantMessage,
    BackendUnavailableError,
    InvalidArgumentError,
    SchemaError,
    UserMessage,
    async_repository_from_url,
    repository_from_url,
)
from chatmem.redis import AsyncRedisChatMemoryRepository, RedisChatMemoryRepository
from chatmem.redis._native.cluster import key_slot, split_cluster_url
from chatmem.redis.provision.cluster import RedisClusterHarness, cluster_client
from chatmem.testing.harness import ServerInfo

pytestmark = pytest.mark.backend("redis_cluster")

IDS = [f"conv-{i}" for i in range(60)] + ["A", "a", "a ", "{x}", "ünï", "c,d"]


@pytest.fixture
def repo(server: ServerInfo, harness: Any) -> Iterator[Any]:
    r = harness.make_repository(server)
    yield r
    harness.cleanup(server, r)


def masters_of(repo: Any, ids: list[str]) -> set[str]:
    client: RedisCluster = repo.client
    return {client.get_node_from_key(repo._layout.conversation(c).log).name for c in ids}


def test_each_write_script_touches_one_slot() -> None:
    from chatmem.redis._schema import Layout

    layout = Layout("p:", cluster=True)
    for cid in IDS:
        keys = layout.conversation(cid)
        assert {key_slot(k) for k in [*keys.script_keys, keys.doc_prefix + "7"]} == {
            key_slot(keys.log)
        }


def test_conversations_spread_over_every_master_and_list_in_pages(repo: Any) -> None:
    for cid in IDS:
        repo.append(cid, UserMessage(f"hi {cid}"))
    assert len(masters_of(repo, IDS)) == 3
    seen: list[str] = []
    after = None
    while True:
        page = repo.find_conversation_ids_page(limit=7, after=after)
        assert len(page.ids) <= 7
        seen += page.ids
        if page.next_after is None:
            break
        after = page.next_after
    assert sorted(seen) == sorted(IDS) and len(seen) == len(IDS)  # each id once
    assert sorted(repo.find_conversation_ids()) == sorted(IDS)
    repo.delete_by_conversation_id("conv-3")
    assert "conv-3" not in repo.find_conversation_ids()
    with pytest.raises(InvalidArgumentError, match="after"):
        repo.find_conversation_ids_page(limit=5, after="not a cursor")


def test_searches_see_every_master_oldest_first(repo: Any) -> None:
    for i, cid in enumerate(IDS):
        repo.append(cid, [UserMessage(f"needle {i}"), AssistantMessage("hay")])
    hits = repo.find_by_content("needle", limit=1000)
    assert sorted(h.conversation_id for h in hits) == sorted(IDS)  # complete
    times = [h.created_at for h in hits]
    assert times == sorted(times)
    first = repo.find_by_content("needle", limit=5)
    assert [h.message for h in first] == [h.message for h in hits[:5]]  # merged, not per shard
    assert [h.message.text for h in repo.find_by_content("needle", conversation_id="a ")] == [
        f"needle {IDS.index('a ')}"
    ]
    assert len(repo.find_by_type("ASSISTANT", limit=1000)) == len(IDS)


def test_a_master_without_its_index_fails_the_search_instead_of_a_partial_answer(
    repo: Any,
) -> None:
    repo.append("x", UserMessage("needle"))
    client: RedisCluster = repo.client
    names = repo._indexes.names()
    assert len(names) == 3  # one index per master, each routed to its own master
    assert {client.get_node_from_key(n).name for n in names} == {
        n.name for n in client.get_primaries()
    }
    node = client.get_node_from_key(names[1])
    client.get_redis_connection(node).execute_command("FT.DROPINDEX", names[1])
    with pytest.raises(SchemaError, match="search index"):
        repo.find_by_content("needle")
    repo.create_schema()  # recreates the missing one
    assert [h.message.text for h in repo.find_by_content("needle")] == ["needle"]


def test_cluster_urls_build_both_twins_on_the_same_data(server: ServerInfo, harness: Any) -> None:
    assert server.url is not None and server.url.startswith("redis+cluster://")
    options = harness.namespace_options()
    repo = repository_from_url(server.url, **options)
    try:
        assert isinstance(repo, RedisChatMemoryRepository)
        assert isinstance(repo.client, RedisCluster)
        repo.append("u", UserMessage("from sync"))

        async def body() -> None:
            assert server.url is not None
            twin = await async_repository_from_url(server.url, **options)
            assert isinstance(twin, AsyncRedisChatMemoryRepository)
            try:
                await twin.append("u", AssistantMessage("from async"))
                page = await twin.find_conversation_ids_page(limit=10)
                assert page.ids == ["u"] and page.next_after is None
                hits = await twin.find_by_content("from")
                assert [h.message.text for h in hits] == ["from sync", "from async"]
            finally:
                await twin.close()

        asyncio.run(body())
        assert [m.text for m in repo.find_by_conversation_id("u")] == ["from sync", "from async"]
    finally:
        harness.cleanup(server, repo)
        repo.close()
    with pytest.raises(InvalidArgumentError, match="url"):
        split_cluster_url("redis+cluster://host-without-port")


def _replicated(master: int, replica: int) -> bool:
    """The replica has applied everything the master has (replication offsets match)."""
    m = redis.Redis(port=master).info("replication")
    r = redis.Redis(port=replica).info("replication")
    return bool(r.get("master_link_status") == "up") and int(m["master_repl_offset"]) == int(
        r["slave_repl_offset"]
    )


def test_a_killed_master_fails_over_and_loses_no_replicated_write() -> None:
    """On its own cluster (the session's stays whole): kill the master of a conversation's
    slot with SIGKILL; writes fail with a typed error until its replica is promoted and
    resume after; every write acknowledged (and replicated) before the kill is still there,
    and searches still see every master."""
    harness = RedisClusterHarness()
    server = harness.start_local(Path(tempfile.mkdtemp(prefix="chatmem-failover-")))
    try:
        assert server.url is not None
        client = cluster_client(server.url)
        repo = RedisChatMemoryRepository(client, **harness.namespace_options())
        acked = []
        for i in range(50):
            repo.append("f", UserMessage(f"m{i}"))
            acked.append(f"m{i}")
        master = client.get_node_from_key(repo._layout.conversation("f").log)
        ports = server.extra["ports"]
        procs = server.extra["procs"]
        replica_port = next(
            p
            for p in ports
            if redis.Redis(port=p).info("replication").get("master_port") == master.port
        )
        deadline = time.monotonic() + 30
        while not _replicated(master.port, replica_port):
            assert time.monotonic() < deadline, "the replica never caught up"
            time.sleep(0.05)
        # The replica is paused across the kill, so the client's own retries cannot ride
        # out the failover: the write in between must fail, typed, and write nothing.
        replica = procs[ports.index(replica_port)]
        replica.send_signal(signal.SIGSTOP)
        try:
            procs[ports.index(master.port)].send_signal(signal.SIGKILL)
            with pytest.raises(BackendUnavailableError):
                repo.append("f", UserMessage("lost"))
        finally:
            replica.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 60
        while True:
            try:
                repo.append("f", UserMessage("after"))
                break
            except BackendUnavailableError:
                assert time.monotonic() < deadline, "no master took over within 60 s"
                time.sleep(0.2)
        assert redis.Redis(port=replica_port).info("replication")["role"] == "master"
        texts = [m.text for m in repo.find_by_conversation_id("f")]
        assert texts == [*acked, "after"]
        # the promoted replica holds the replicated index too: searches stay complete
        assert [h.message.text for h in repo.find_by_content("after")] == ["after"]
        assert len(repo.find_by_type("USER", limit=1000)) == len(texts)
        client.close()
    finally:
        server.stop()


def test_ttl_on_a_cluster_documents_written_at_once_expire_with_the_log(
    server: ServerInfo, harness: Any
) -> None:
    from datetime import timedelta

    r = harness.make_repository(server, ttl=timedelta(hours=1))
    try:
        r.save_all("ttl", [UserMessage(f"m{i}") for i in range(50)])
        time.sleep(0.05)
        for i in range(3):  # written between refreshes: they take the documents' expiry
            r.append("ttl", UserMessage(f"later {i}"))
        client: RedisCluster = r.client
        keys = r._layout.conversation("ttl")
        expiry = client.pexpiretime(keys.log)
        assert expiry > 0 and client.pexpiretime(keys.seq) == expiry
        docs = [keys.doc_prefix + str(p) for p in range(53)]
        assert all(client.exists(d) for d in docs)  # a cluster indexes at once
        assert {client.pexpiretime(d) for d in docs} == {expiry}  # one expiry, the log's
    finally:
        harness.cleanup(server, r)
