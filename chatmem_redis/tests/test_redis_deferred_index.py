"""Search documents written at the next search, not on every append (one node): a search
sees every message written before it began, and never one that was removed before it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
import redis

from chatmem.core import AssistantMessage, MessageWindowChatMemory, SystemMessage, UserMessage
from chatmem.testing.harness import ServerInfo

pytestmark = pytest.mark.backend("redis")

Make = Callable[..., Any]


def client_of(server: ServerInfo) -> redis.Redis:
    assert server.url is not None
    return redis.Redis.from_url(server.url)


def texts(hits: list[Any]) -> list[str]:
    return [h.message.text for h in hits]


def test_an_append_leaves_its_documents_pending_until_a_search(
    make_repository: Make, server: ServerInfo
) -> None:
    repo = make_repository()
    repo.append("c", [UserMessage("alpha one"), AssistantMessage("alpha two")])
    keys = repo._layout.conversation("c")
    client = client_of(server)
    assert client.hlen(keys.pending_docs) == 2
    assert client.smembers(repo._layout.pending) == {keys.tag.encode()}
    assert texts(repo.find_by_content("alpha")) == ["alpha one", "alpha two"]
    assert not client.exists(keys.pending_docs) and not client.exists(repo._layout.pending)
    assert client.exists(keys.doc_prefix + "0", keys.doc_prefix + "1") == 2


def test_pending_documents_are_written_whole_from_either_form(
    make_repository: Make, server: ServerInfo
) -> None:
    """An append keeps a document as the client sent it (no position: the search adds it);
    one a release that built the whole document in the append left pending is written as
    it is."""
    repo = make_repository()
    repo.append("c", [UserMessage("alpha new"), UserMessage("alpha old")])
    keys = repo._layout.conversation("c")
    client = client_of(server)
    sent = client.hget(keys.pending_docs, "1")
    assert sent is not None and sent.startswith(b'"conversation_id":"c",')
    client.hset(keys.pending_docs, "1", b'{"position":1,' + sent.replace(b"new", b"old"))
    assert texts(repo.find_by_content("alpha")) == ["alpha new", "alpha old"]
    for p in (0, 1):
        doc = json.loads(client.execute_command("JSON.GET", keys.doc_prefix + str(p)))
        assert doc["position"] == p and doc["conversation_id"] == "c"


def test_a_read_counts_the_system_messages_it_last_saw(
    make_repository: Make, server: ServerInfo
) -> None:
    """A conversation with several system messages is read in one ``ZRANGE`` once this
    process has seen them (its tail's length counts them), and read again when another
    writer added more."""
    repo = make_repository()
    other = make_repository(key_prefix=repo.config.key_prefix, index_name=repo.config.index_name)
    chat = [UserMessage(f"q{i}") if i % 2 == 0 else AssistantMessage(f"a{i}") for i in range(40)]
    repo.save_all("s", [*(SystemMessage(f"rule {i}") for i in range(3)), *chat])
    client = client_of(server)

    def rules() -> list[str | None]:
        return [m.text for m in repo.window_get("s", 4) if isinstance(m, SystemMessage)]

    client.config_resetstat()
    assert rules() == ["rule 0", "rule 1", "rule 2"]
    assert client.info("commandstats")["cmdstat_zrange"]["calls"] == 1
    other.append("s", [SystemMessage("rule 3"), SystemMessage("rule 4")])
    assert rules() == [f"rule {i}" for i in range(5)]  # read again: more than it knew
    assert rules() == [f"rule {i}" for i in range(5)]
    assert client.info("commandstats")["cmdstat_zrange"]["calls"] == 4  # 1, 2, then 1


def test_a_search_writes_backlogs_larger_than_one_batch(make_repository: Make) -> None:
    repo = make_repository()
    # one conversation above the batch (written in parts) and many small ones
    repo.save_all("big", [UserMessage(f"bulk {i}") for i in range(2_300)])
    for c in range(40):
        repo.append(f"small-{c}", [UserMessage(f"bulk small {c}"), AssistantMessage("ok")])
    hits = repo.find_by_content("bulk", limit=10_000)
    assert len(hits) == 2_340
    assert sorted(h.message.text for h in hits if h.conversation_id == "big") == sorted(
        f"bulk {i}" for i in range(2_300)
    )


def test_messages_removed_while_pending_are_never_indexed(
    make_repository: Make, server: ServerInfo
) -> None:
    repo = make_repository()
    client = client_of(server)
    repo.append("gone", UserMessage("ghost word"))
    repo.delete_by_conversation_id("gone")
    repo.append("replaced", UserMessage("ghost word"))
    repo.save_all("replaced", [UserMessage("kept word")])
    memory = MessageWindowChatMemory(repo, max_messages=2)
    memory.add("trimmed", [UserMessage("ghost word"), AssistantMessage("x")])
    for i in range(6):  # the window trims the oldest, pending, messages away
        memory.add("trimmed", [UserMessage(f"later {i}"), AssistantMessage("y")])
    memory.add("edited", SystemMessage("ghost word"))
    memory.add("edited", SystemMessage("new rules"))  # replaces the pending system message
    assert repo.find_by_content("ghost") == []
    assert texts(repo.find_by_content("kept")) == ["kept word"]
    assert texts(repo.find_by_content("rules")) == ["new rules"]
    for cid in ("gone", "replaced", "trimmed", "edited"):
        keys = repo._layout.conversation(cid)
        docs = {
            k.decode().rsplit(":", 1)[1]
            for k in client.scan_iter(match=keys.doc_prefix.replace("{", "[{]") + "*")
        }
        assert docs == {str(m.position) for m in repo.find_by_conversation_id(cid)}


def test_a_search_sees_every_append_that_returned_before_it(make_repository: Make) -> None:
    repo = make_repository()
    searcher = make_repository(**{"key_prefix": repo.config.key_prefix,
                                  "index_name": repo.config.index_name})  # fmt: skip
    done = [0] * 4

    def write(w: int) -> None:
        for i in range(150):
            repo.append(f"w{w}", UserMessage(f"racing w{w} n{i}"))
            done[w] = i + 1

    writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in writers:
        t.start()
    short: list[tuple[int, int]] = []
    while any(t.is_alive() for t in writers):
        before = sum(done)
        seen = len(searcher.find_by_content("racing", limit=1_000))
        if seen < before:
            short.append((seen, before))
    for t in writers:
        t.join()
    assert short == []
    assert len(searcher.find_by_content("racing", limit=1_000)) == 600


def test_on_the_default_path_a_search_sees_every_append_from_threads_and_processes(
    harness: Any, server: ServerInfo
) -> None:
    """``repository_from_url(url)`` as README shows, on a cold server (no index, no keys),
    writers in 4 threads and 2 processes, then one search: every message is found."""
    import subprocess
    import sys

    from chatmem.core import repository_from_url

    url = harness.cold_default_url(server)
    worker = (
        "import sys\n"
        "from chatmem.core import UserMessage, repository_from_url\n"
        "repo = repository_from_url(sys.argv[1])\n"
        "for i in range(50):\n"
        "    repo.append(f'p{sys.argv[2]}', UserMessage(f'coldword p{sys.argv[2]} n{i}'))\n"
    )
    try:
        procs = [subprocess.Popen([sys.executable, "-c", worker, url, str(p)]) for p in range(2)]

        def write(t: int) -> None:
            repo = repository_from_url(url)
            for i in range(50):
                repo.append(f"t{t}", UserMessage(f"coldword t{t} n{i}"))

        threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
        hits = repository_from_url(url).find_by_content("coldword", limit=1_000)
        assert len(hits) == 300
        assert {h.conversation_id for h in hits} == {"p0", "p1", "t0", "t1", "t2", "t3"}
    finally:
        harness.cleanup_cold_default(server, url)
