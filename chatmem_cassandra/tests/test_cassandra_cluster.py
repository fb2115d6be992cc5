"""Node failures on the 3-node cluster (``--backend cassandra_cluster``): real JVMs stopped
with SIGKILL or SIGTERM by the harness, never mocks.

- one node down: writes and reads at QUORUM (the default ``LOCAL_QUORUM`` and an explicit
  ``QUORUM``) keep working from several threads and lose nothing, and the lightweight-
  transaction guard still serialises concurrent appends to one conversation;
- two nodes down: every operation fails with ``BackendUnavailableError`` within
  ``STATED_BOUND`` (the driver's ``request_timeout``, set with ``from_url``, plus slack), and
  works again once the nodes are back and the ring is up.

Every test leaves all three nodes up (a failed one restarts them), so the order is free.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chatmem.cassandra import CassandraChatMemoryRepository, NetworkTopologyStrategy
from chatmem.cassandra.provision._node import LOCAL_DC
from chatmem.cassandra.provision.cluster import ADDRESSES, CassandraClusterHarness
from chatmem.core import BackendUnavailableError, ChatMemoryError, UserMessage
from chatmem.testing.harness import ServerInfo, Unavailable, unique_suffix

pytestmark = pytest.mark.backend("cassandra_cluster")

REQUEST_TIMEOUT = 5.0
"""The driver's client-side bound on one statement (``from_url(request_timeout=...)``)."""
STATED_BOUND = REQUEST_TIMEOUT + 3.0
"""What the docs state: a failing operation raises within ``request_timeout`` plus the
driver's retry of an ``Unavailable`` on the next host and scheduling slack."""
WRITERS = 6
ADDS = 12
DRIVER_SEES = 60.0
"""Seconds the repository's driver may take to see a stopped node down or a back one up."""

Make = Callable[..., CassandraChatMemoryRepository]


@pytest.fixture
def ring(harness: Any, server: ServerInfo) -> Iterator[CassandraClusterHarness]:
    """The harness, on a cluster whose nodes it controls; all nodes up before and after."""
    assert isinstance(harness, CassandraClusterHarness)
    try:
        harness.nodes(server)
    except Unavailable as exc:
        pytest.skip(str(exc))  # an env-route cluster: not ours to stop
    harness.wait_all_up(server)
    try:
        yield harness
    finally:
        for index in range(len(ADDRESSES)):
            harness.start_node(server, index)
        harness.wait_all_up(server)


@pytest.fixture
def rf3(server: ServerInfo) -> Iterator[Make]:
    """Repositories from the cluster URL (all three contact points), in a fresh keyspace the
    first one creates with the ``replication`` option (factor 3); dropped afterwards."""
    keyspace = f"rf3_{unique_suffix()}"
    table = f"t_{unique_suffix()}"
    made: list[CassandraChatMemoryRepository] = []

    def make(**options: Any) -> CassandraChatMemoryRepository:
        repo = CassandraChatMemoryRepository.from_url(
            str(server.url),
            keyspace=keyspace,
            table_name=table,
            replication=NetworkTopologyStrategy({LOCAL_DC: 3}),
            request_timeout=REQUEST_TIMEOUT,
            connect_timeout=REQUEST_TIMEOUT,
            **options,
        )
        made.append(repo)
        return repo

    yield make
    for repo in made:
        repo.close()
    server.extra["session"].execute(f'DROP KEYSPACE IF EXISTS "{keyspace}"', timeout=120)


def host_state(repo: CassandraChatMemoryRepository, address: str) -> bool | None:
    """Whether the repository's own driver sees ``address`` up."""
    host = repo._owned.metadata.get_host(address)
    return None if host is None else bool(host.is_up)


def wait_driver(repo: CassandraChatMemoryRepository, address: str, up: bool) -> None:
    deadline = time.monotonic() + DRIVER_SEES
    while host_state(repo, address) is not up:
        assert time.monotonic() < deadline, f"driver never saw {address} {'up' if up else 'down'}"
        time.sleep(0.2)


def positions(server: ServerInfo, repo: CassandraChatMemoryRepository, cid: str) -> list[int]:
    c = repo.config
    rows = server.extra["session"].execute(
        f'SELECT "{c.position_column}" FROM "{c.keyspace}"."{c.table_name}" '
        f'WHERE "{c.conversation_id_column}" = %s',
        (cid,),
    )
    return [r[0] for r in rows]


def test_the_cluster_has_three_nodes_and_the_keyspace_replicates_to_all(
    ring: CassandraClusterHarness, server: ServerInfo, rf3: Make
) -> None:
    repo = rf3()
    hosts = repo._owned.metadata.all_hosts()
    assert sorted(h.address for h in hosts) == list(ADDRESSES)
    assert all(h.is_up for h in hosts)
    row = (
        server.extra["session"]
        .execute(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s",
            (repo.config.keyspace,),
        )
        .one()
    )
    assert dict(row[0]) == {
        "class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
        LOCAL_DC: "3",
    }
    assert repo.config.consistency == "LOCAL_QUORUM"  # the default the suite runs at


def test_one_node_down_quorum_writes_and_reads_keep_working_and_lose_nothing(
    ring: CassandraClusterHarness, server: ServerInfo, rf3: Make
) -> None:
    local_quorum, quorum = rf3(), rf3(consistency="QUORUM")
    shared = "shared"
    local_quorum.append(shared, UserMessage("before"))
    # the seed, which also holds the drivers' control connections: the hardest one to lose
    victim = ADDRESSES[0]
    ring.stop_node(server, 0, kill=True)
    for repo in (local_quorum, quorum):
        wait_driver(repo, victim, up=False)

    errors: list[BaseException] = []
    start = threading.Barrier(WRITERS)

    def writer(w: int) -> None:
        repo = local_quorum if w % 2 else quorum
        try:
            start.wait()
            for i in range(ADDS):
                repo.append(shared, UserMessage(f"w{w}-{i}"))  # one conversation: LWT races
                repo.append(f"own-{w}", UserMessage(f"w{w}-{i}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert host_state(local_quorum, victim) is False  # still down: everything ran on two nodes

    for reader in (local_quorum, quorum):
        texts = [m.text for m in reader.find_by_conversation_id(shared)]
        assert texts[0] == "before" and len(texts) == 1 + WRITERS * ADDS
        assert sorted(texts[1:]) == sorted(f"w{w}-{i}" for w in range(WRITERS) for i in range(ADDS))
        for w in range(WRITERS):  # each writer's adds in its own order, none twice
            assert [t for t in texts if t.startswith(f"w{w}-")] == [
                f"w{w}-{i}" for i in range(ADDS)
            ]
            own = [m.text for m in reader.find_by_conversation_id(f"own-{w}")]
            assert own == [f"w{w}-{i}" for i in range(ADDS)]
    stored = positions(server, local_quorum, shared)
    assert len(stored) == len(set(stored)) == 1 + WRITERS * ADDS  # no position taken twice

    ring.start_node(server, 0)
    ring.wait_all_up(server)
    wait_driver(local_quorum, victim, up=True)
    assert len(quorum.find_by_conversation_id(shared)) == 1 + WRITERS * ADDS


def test_two_nodes_down_fail_typed_within_the_timeout_and_work_again_when_they_return(
    ring: CassandraClusterHarness, server: ServerInfo, rf3: Make
) -> None:
    repo = rf3()
    repo.save_all("c", [UserMessage("kept")])
    ring.stop_node(server, 1)  # SIGTERM: each drains and announces its shutdown
    ring.stop_node(server, 2)
    for address in ADDRESSES[1:]:
        wait_driver(repo, address, up=False)

    operations: dict[str, Callable[[], object]] = {
        "append": lambda: repo.append("c", UserMessage("lost")),
        "save_all": lambda: repo.save_all("c", [UserMessage("replaced")]),
        "find": lambda: repo.find_by_conversation_id("c"),
        "find_last": lambda: repo.find_last("c", 1),
        "delete": lambda: repo.delete_by_conversation_id("c"),
        "list": lambda: repo.find_conversation_ids(),
    }
    took: dict[str, float] = {}
    for name, operation in operations.items():
        began = time.monotonic()
        with pytest.raises(BackendUnavailableError) as caught:
            operation()
        took[name] = time.monotonic() - began
        assert isinstance(caught.value, ChatMemoryError)
        assert type(caught.value.__cause__).__module__.startswith("cassandra")
    slow = {name: round(s, 1) for name, s in took.items() if s > STATED_BOUND}
    assert not slow, f"over the stated {STATED_BOUND} s: {slow}"

    ring.start_node(server, 1)
    ring.start_node(server, 2)
    ring.wait_all_up(server)
    for address in ADDRESSES[1:]:
        wait_driver(repo, address, up=True)
    # the first try after the ring is back works, and no failed write landed
    assert [m.text for m in repo.find_by_conversation_id("c")] == ["kept"]
    repo.append("c", UserMessage("after"))
    assert [m.text for m in repo.find_by_conversation_id("c")] == ["kept", "after"]


def test_a_node_killed_mid_write_loses_no_acknowledged_add_and_writes_none_twice(
    ring: CassandraClusterHarness, server: ServerInfo, rf3: Make
) -> None:
    """SIGKILL a node while writers race on three conversations (each coordinated by some
    node): requests in flight on it fail typed (their outcome unknown), none is resent."""
    repo = rf3()
    conversations = [f"hot-{k}" for k in range(3)]
    acked: dict[str, list[str]] = {c: [] for c in conversations}
    failed: dict[str, list[str]] = {c: [] for c in conversations}
    untyped: list[BaseException] = []
    lock = threading.Lock()
    done = threading.Event()

    def writer(w: int) -> None:
        cid = conversations[w % 3]
        i = 0
        while not done.is_set():
            text = f"w{w}-{i}"
            i += 1
            try:
                repo.append(cid, UserMessage(text))
            except ChatMemoryError:
                with lock:
                    failed[cid].append(text)
            except BaseException as exc:
                untyped.append(exc)
                return
            else:
                with lock:
                    acked[cid].append(text)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 60
        while sum(map(len, acked.values())) < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        ring.stop_node(server, 1, kill=True)
        wait_driver(repo, ADDRESSES[1], up=False)
        after = sum(map(len, acked.values()))
        while sum(map(len, acked.values())) < after + 30 and time.monotonic() < deadline:
            time.sleep(0.05)  # and the writers go on, on two nodes
    finally:
        done.set()
        for t in threads:
            t.join()
    assert untyped == []
    assert sum(map(len, acked.values())) >= 60
    for cid in conversations:
        texts = [m.text for m in repo.find_by_conversation_id(cid)]
        assert len(texts) == len(set(texts)), f"{cid}: a message was written twice"
        assert set(acked[cid]) <= set(texts), f"{cid}: an acknowledged add was lost"
        assert set(texts) <= set(acked[cid]) | set(failed[cid])
        stored = positions(server, repo, cid)
        assert len(stored) == len(set(stored)) == len(texts)
    print(f"killed mid-write: {sum(map(len, failed.values()))} adds failed typed")
