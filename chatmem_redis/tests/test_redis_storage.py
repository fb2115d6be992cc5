"""Redis storage: documents, keys, round trips, listing, TTL, caps, schema and errors."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
import redis

from chatmem.core import (
    AssistantMessage,
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
from chatmem.redis import (
    DEFAULT_INDEX_NAME,
    DEFAULT_KEY_PREFIX,
    MetadataField,
    RedisChatMemoryRepository,
)
from chatmem.redis._plan import TTL_SLACK
from chatmem.testing.harness import ServerInfo, free_port

pytestmark = pytest.mark.backend("redis")

Make = Callable[..., Any]


def client_of(server: ServerInfo, **kwargs: Any) -> redis.Redis:
    assert server.url is not None
    return redis.Redis.from_url(server.url, **kwargs)


def every_kind() -> list[Any]:
    return [
        SystemMessage("sys", metadata={"v": 1}),
        UserMessage(
            "look",
            metadata={"n": 1, "f": 1.0, "big": 10**25, "s": "x", "l": [1, {"a": None}]},
            media=[
                Media(mime_type="image/png", data=b"\x00\x01\xff", id="m1", name="pic"),
                Media(mime_type="text/html", data="https://example.com/a"),
            ],
        ),
        AssistantMessage(
            None, tool_calls=[ToolCall(id="c1", name="f", arguments='{"x": 1}', type="function")]
        ),
        ToolResponseMessage([ToolResponse(id="c1", name="f", response_data='{"ok": true}')]),
        AssistantMessage("done", metadata={"finish": "stop"}),
    ]


@contextmanager
def monitored(server: ServerInfo) -> Iterator[list[str]]:
    """Top-level commands the server received from clients (script-internal calls, marked
    ``lua`` by MONITOR, are left out) while the block ran."""
    watcher = client_of(server)
    commands: list[str] = []
    with watcher.monitor() as m:
        marker = client_of(server)
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
                commands.append(event["command"])
        marker.close()
    watcher.close()


# -- documents and keys -------------------------------------------------------------------
def test_every_kind_is_one_log_entry_and_an_index_document(
    repository: Any, server: ServerInfo
) -> None:
    messages = every_kind()
    repository.save_all("doc", messages)
    assert repository.find_by_conversation_id("doc") == messages
    keys = repository._layout.conversation("doc")
    client = client_of(server)
    assert not client.exists(keys.doc_prefix + "1")  # pending until a search
    repository.index_pending()
    assert not client.exists(keys.pending_docs)
    doc = json.loads(client.execute_command("JSON.GET", keys.doc_prefix + "1"))
    assert doc["conversation_id"] == "doc" and doc["position"] == 1
    assert doc["message_type"] == "USER" and doc["content"] == "look"
    assert "message" not in doc  # the payload is stored once, in the log entry
    [(entry, score)] = client.zrange(keys.log, 1, 1, byscore=True, withscores=True)
    position, micros, wire = entry.split(b" ", 2)
    assert int(position) == score == 1 and int(micros) > 0
    payload = json.loads(wire)
    assert payload["media"][0]["data_b64"] == "AAH/" and payload["metadata"]["big"] == 10**25


def test_created_at_microseconds_and_positions_are_kept(repository: Any) -> None:
    repository.save_all("ts", [UserMessage("a"), AssistantMessage("b")])
    first = repository.find_by_conversation_id("ts")
    repository.save_all("ts", [*first, UserMessage("c")])
    again = repository.find_by_conversation_id("ts")
    assert [m.created_at for m in again[:2]] == [m.created_at for m in first]
    assert [m.position for m in again] == [0, 1, 2]


def test_history_reads_never_touch_the_index(repository: Any, server: ServerInfo) -> None:
    repository.save_all("noidx", every_kind())
    client_of(server).execute_command("FT.DROPINDEX", repository.config.index_name)
    assert repository.find_by_conversation_id("noidx") == every_kind()
    memory = MessageWindowChatMemory(repository, max_messages=3)
    memory.add("noidx", UserMessage("more"))
    assert memory.get("noidx")[-1] == UserMessage("more")


def test_no_indexing_failures_with_mixed_metadata(
    make_repository: Make, server: ServerInfo
) -> None:
    repo = make_repository(metadata_fields=[MetadataField.numeric("n"), MetadataField.tag("s")])
    repo.save_all("mixed", [UserMessage("x", metadata={"n": "high", "s": 3.5}), *every_kind()])
    repo.index_pending()
    info = client_of(server, decode_responses=True, protocol=2).execute_command(
        "FT.INFO", repo.config.index_name
    )
    assert info[info.index("hash_indexing_failures") + 1] == 0
    assert info[info.index("num_docs") + 1] == 6


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("decode", [False, True])
def test_any_client_flavour_works(
    server: ServerInfo, harness: Any, protocol: int, decode: bool
) -> None:
    client = client_of(server, protocol=protocol, decode_responses=decode)
    repo = RedisChatMemoryRepository(client, **harness.namespace_options())
    try:
        repo.save_all("é,{x}", every_kind())
        assert repo.find_by_conversation_id("é,{x}") == every_kind()
        assert repo.find_conversation_ids() == ["é,{x}"]
        assert len(repo.find_by_type("ASSISTANT")) == 2
    finally:
        harness.cleanup(server, repo)
        client.close()


# -- reads of the log's tail --------------------------------------------------------------
@pytest.mark.parametrize("systems", [0, 1, 2, 5])
def test_tail_reads_hold_every_system_message_however_many(
    repository: Any, server: ServerInfo, systems: int
) -> None:
    # system messages sort last in the log; a read expects one and reads again for more
    log: list[Any] = []
    for i in range(30):
        system = i % 6 == 1 and i // 6 < systems
        log.append(SystemMessage(f"s{i}") if system else UserMessage(f"u{i}"))
    reference = InMemoryChatMemoryRepository()
    for repo in (repository, reference):
        repo.save_all("tail", log)
    for n in (1, 3, 10, 29, 30, 31):
        assert repository.find_last("tail", n) == reference.find_last("tail", n), n
        assert repository.window_get("tail", n) == reference.window_get("tail", n), n
    assert repository.find_by_conversation_id("tail") == log
    assert [m.position for m in repository.find_by_conversation_id("tail")] == list(range(30))


def test_an_append_caches_exactly_what_a_read_would_decode(
    repository: Any, server: ServerInfo
) -> None:
    from datetime import datetime, timezone

    from chatmem.redis._codec import parse_entry

    local = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=2)))
    repository.append("seeded", every_kind())
    repository.append("seeded", UserMessage("zoned", created_at=local))
    entries = client_of(server).zrange(repository._layout.conversation("seeded").log, 0, -1)
    cached = repository.find_by_conversation_id("seeded")
    fresh = sorted((parse_entry(e) for e in entries), key=lambda m: m.position or 0)
    assert cached == fresh
    for a, b in zip(cached, fresh, strict=True):
        assert (a.position, a.created_at, repr(a.created_at)) == (
            b.position,
            b.created_at,
            repr(b.created_at),
        )
        assert a.metadata == b.metadata and type(a) is type(b)


def test_a_replace_caches_the_tail_a_read_returns_next(
    repository: Any, server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem.redis import _codec

    many = [UserMessage(f"m{i}") for i in range(300)]
    repository.save_all("replaced", [*every_kind(), *many])
    decoded: list[Any] = []
    real = _codec.parse_entry
    monkeypatch.setattr(_codec, "parse_entry", lambda raw: decoded.append(raw) or real(raw))
    window = repository.find_last("replaced", 20)
    assert decoded == [] and window == many[-20:]  # the newest 256 of a replace are cached
    entries = client_of(server).zrange(repository._layout.conversation("replaced").log, 0, -1)
    fresh = sorted((real(e) for e in entries), key=lambda m: m.position or 0)[-20:]
    assert [(m.position, repr(m)) for m in window] == [(m.position, repr(m)) for m in fresh]
    repository.find_by_conversation_id("replaced")
    assert len(decoded) == 305 - 256 - 1  # older ones decode as usual; the system one did not


# -- round trips ---------------------------------------------------------------------------
# A read is one ZRANGE of the log's tail.
READ_COMMANDS = ["ZRANGE"]


def test_window_add_and_get_are_one_round_trip_each(repository: Any, server: ServerInfo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=4)
    for i in range(6):
        memory.add("rt", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    repository.find_last("rt", 2)  # scripts are loaded
    with monitored(server) as add:
        memory.add("rt", UserMessage("one more"))
    with monitored(server) as get:
        window = memory.get("rt")
    with monitored(server) as last:
        repository.find_last("rt", 3)
    assert [c.split()[0] for c in add] == ["EVALSHA"], add
    assert [c.split()[0] for c in get] == READ_COMMANDS, get
    assert [c.split()[0] for c in last] == READ_COMMANDS, last
    assert window[-1] == UserMessage("one more")


def test_save_all_and_delete_are_one_round_trip(repository: Any, server: ServerInfo) -> None:
    repository.save_all("rt2", [UserMessage("x")])
    repository.delete_by_conversation_id("rt2")
    with monitored(server) as save:
        repository.save_all("rt2", every_kind())
    with monitored(server) as delete:
        repository.delete_by_conversation_id("rt2")
    assert len(save) == 1 and len(delete) == 1


def test_the_log_stays_bounded_under_window_adds(repository: Any, server: ServerInfo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=5)
    for i in range(100):
        memory.add("bounded", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    stored = repository.find_by_conversation_id("bounded")
    assert len(stored) <= 2 * (5 + 1) + 2
    assert [m.text for m in memory.get("bounded")] == ["u98", "a98", "u99", "a99"]
    pending = client_of(server).hkeys(repository._layout.conversation("bounded").pending_docs)
    assert sorted(int(p) for p in pending) == [m.position for m in stored]  # trimmed: gone
    repository.index_pending()
    keys = client_of(server).keys(repository._layout.doc_prefix + "*")
    assert len(keys) == len(stored)


# -- listing -------------------------------------------------------------------------------
def test_listing_pages_explicitly_without_keys_or_scan(repository: Any, server: ServerInfo) -> None:
    ids = [f"id-{i:02d}" for i in range(25)] + ["A", "a", "a ", "x,y", "{t}", "naïve", "naive"]
    for cid in ids:
        repository.append(cid, UserMessage(cid))
    with monitored(server) as commands:
        pages = []
        page = repository.find_conversation_ids_page(limit=10)
        pages.append(page.ids)
        while page.next_after is not None:
            page = repository.find_conversation_ids_page(limit=10, after=page.next_after)
            pages.append(page.ids)
    assert [len(p) for p in pages] == [10, 10, 10, 2]
    assert sorted(i for p in pages for i in p) == sorted(ids)
    assert not [c for c in commands if c.split()[0].strip('"').upper() in ("KEYS", "SCAN")]


def test_ids_compare_exactly(repository: Any) -> None:
    ids = ["A", "a", "a ", " a", "naïve", "naive", "x,y", "x", "{a}", "a-b:c*", "é" * 255]
    for cid in ids:
        repository.save_all(cid, [UserMessage(cid)])
    for cid in ids:
        assert repository.find_by_conversation_id(cid) == [UserMessage(cid)]
    assert sorted(repository.find_conversation_ids()) == sorted(ids)


# -- TTL -----------------------------------------------------------------------------------
def conversation_keys(repo: Any, server: ServerInfo, cid: str) -> tuple[list[bytes], list[bytes]]:
    """The conversation's own keys (counter, log, pending hash) and its search documents,
    written (none left pending)."""
    keys = repo._layout.conversation(cid)
    client = client_of(server)
    before = [k for k in (keys.seq, keys.log, keys.pending_docs) if client.exists(k)]
    assert len({client.pexpiretime(k) for k in before}) == 1  # pending ones expire alike
    repo.index_pending()
    docs = client.keys(keys.doc_prefix.replace("{", "\\{").replace("}", "\\}") + "*")
    own = [k for k in (keys.seq.encode(), keys.log.encode(), keys.pending_docs.encode())
           if client.exists(k)]  # fmt: skip
    return own, docs


def assert_expires_whole(
    repo: Any, server: ServerInfo, cid: str, ttl: timedelta, last_write_ms: float
) -> None:
    """Every key of the conversation, documents included, has one expiry: at least one TTL
    after the last write, at most the slack more (every key is refreshed once per slack of
    activity, not on every write)."""
    own, docs = conversation_keys(repo, server, cid)
    client = client_of(server)
    expiries = {client.pexpiretime(k) for k in [*own, *docs]}
    assert len(expiries) == 1
    expiry = expiries.pop()
    ttl_ms = ttl / timedelta(milliseconds=1)
    assert last_write_ms + ttl_ms - 5 <= expiry <= time.time() * 1000 + ttl_ms * (1 + TTL_SLACK)


def now_ms() -> float:
    return time.time() * 1000


def test_ttl_expires_a_conversation_whole_and_its_documents_after_it(
    make_repository: Make, server: ServerInfo
) -> None:
    ttl = timedelta(hours=1)
    repo = make_repository(ttl=ttl)
    repo.save_all("ttl", every_kind())
    repo.append("ttl", UserMessage("later"))
    written = now_ms()
    own, docs = conversation_keys(repo, server, "ttl")
    assert (len(own), len(docs)) == (2, 6)
    assert_expires_whole(repo, server, "ttl", ttl, written)


def test_no_head_first_expiry_leaves_orphan_tool_results(
    make_repository: Make, server: ServerInfo
) -> None:
    ttl = timedelta(seconds=30)
    repo = make_repository(ttl=ttl)
    call = AssistantMessage(None, tool_calls=[ToolCall(id="c", name="t")])
    repo.append("tools", [UserMessage("q"), call])
    time.sleep(0.05)
    repo.append("tools", ToolResponseMessage([ToolResponse(id="c", name="t", response_data="r")]))
    assert_expires_whole(repo, server, "tools", ttl, now_ms())


def test_with_a_ttl_an_append_does_not_touch_every_document(
    make_repository: Make, server: ServerInfo
) -> None:
    # refreshing each document's expiry on every append made it O(H): 37 ms at H = 10,000
    repo = make_repository(ttl=timedelta(hours=1))
    repo.save_all("long", [UserMessage(f"m{i}") for i in range(2_000)])
    repo.index_pending()
    client = client_of(server)

    def expire_calls() -> int:
        stats = client.info("commandstats")
        return sum(
            int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("pexpire", "pexpireat")
        )

    before = expire_calls()
    for i in range(10):
        repo.append("long", UserMessage(f"more {i}"))
    assert expire_calls() - before <= 10 * 2  # counter and pending hash
    assert_expires_whole(repo, server, "long", timedelta(hours=1), now_ms())


def test_a_conversation_started_again_after_expiry_never_returns_old_documents(
    make_repository: Make, harness: Any, server: ServerInfo
) -> None:
    # a new conversation under the same id reuses the positions: a search finds the new
    # messages, never the old, and no expiry of the old life stays on a document
    options = harness.namespace_options()
    repo = make_repository(ttl=timedelta(milliseconds=300), **options)
    repo.append("again", [UserMessage("zebra old one"), AssistantMessage("zebra old two")])
    assert len(repo.find_by_content("zebra")) == 2
    keys = repo._layout.conversation("again")
    client = client_of(server)
    deadline = time.monotonic() + 5
    while client.exists(keys.log) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not client.exists(keys.log)
    assert not client.exists(keys.doc_prefix + "0")  # it expired with its log
    assert repo.find_by_content("zebra") == []
    fresh = make_repository(**options)  # no TTL: the conversation persists
    fresh.append("again", [UserMessage("yak new one"), AssistantMessage("yak new two")])
    assert repo.find_by_content("zebra") == []
    assert [h.message.text for h in fresh.find_by_content("yak")] == ["yak new one", "yak new two"]
    assert client.pttl(keys.doc_prefix + "0") == -1  # no expiry left from the old one


def test_ttl_on_the_default_path_threads_on_a_cold_store_share_one_expiry(
    server: ServerInfo,
) -> None:
    # built as the docs show (repository_from_url with a ttl), on a prefix nothing used yet
    from chatmem.core import repository_from_url
    from chatmem.testing.harness import unique_suffix

    assert server.url is not None
    prefix = f"cold-ttl-{unique_suffix()}:"
    ttl = timedelta(hours=1)
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def writer(w: int) -> None:
        try:
            repo = repository_from_url(server.url, ttl=ttl, key_prefix=prefix)
            barrier.wait()
            for i in range(25):
                repo.append("shared", UserMessage(f"w{w} m{i}"))
            repo.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    repo = repository_from_url(server.url, ttl=ttl, key_prefix=prefix)
    try:
        assert len(repo.find_by_conversation_id("shared")) == 100
        assert_expires_whole(repo, server, "shared", ttl, now_ms())
    finally:
        repo.delete_by_conversation_id("shared")
        repo.close()


def test_a_repository_without_ttl_makes_the_conversation_persistent(
    make_repository: Make, harness: Any, server: ServerInfo
) -> None:
    options = harness.namespace_options()
    make_repository(ttl=timedelta(seconds=30), **options).save_all("p", [UserMessage("x")])
    make_repository(**options).append("p", UserMessage("y"))
    client = client_of(server)
    own, docs = conversation_keys(make_repository(**options), server, "p")
    assert {client.pttl(k) for k in [*own, *docs]} == {-1}


# -- caps -----------------------------------------------------------------------------------
def test_max_conversation_ids_caps_the_listing(make_repository: Make, harness: Any) -> None:
    options = harness.namespace_options()
    repo = make_repository(max_conversation_ids=3, **options)
    for i in range(5):
        repo.append(f"c{i}", UserMessage("x"))
    assert len(repo.find_conversation_ids()) == 3
    uncapped = make_repository(**options)
    assert len(uncapped.find_conversation_ids()) == 5


def test_max_messages_per_conversation_returns_the_newest(make_repository: Make) -> None:
    repo = make_repository(max_messages_per_conversation=4)
    repo.save_all("cap", [UserMessage(f"m{i}") for i in range(10)])
    assert [m.text for m in repo.find_by_conversation_id("cap")] == ["m6", "m7", "m8", "m9"]


def test_no_cap_by_default(repository: Any) -> None:
    for i in range(15):
        repository.append(f"c{i}", UserMessage("x"))
    repository.save_all("big", [UserMessage(f"m{i}") for i in range(1200)])
    assert len(repository.find_conversation_ids()) == 16
    assert len(repository.find_by_conversation_id("big")) == 1200


# -- schema, options, errors ----------------------------------------------------------------
def test_defaults_follow_spring_ai() -> None:
    assert DEFAULT_INDEX_NAME == "chat-memory-idx"
    assert DEFAULT_KEY_PREFIX == "chat-memory:"


def test_initialize_schema_false_creates_nothing(harness: Any, server: ServerInfo) -> None:
    options = harness.namespace_options()
    client = client_of(server)
    repo = RedisChatMemoryRepository(client, initialize_schema="never", **options)
    listed = [x.decode() for x in client.execute_command("FT._LIST")]
    assert options["index_name"] not in listed
    repo.save_all("h", [UserMessage("x")])
    assert repo.find_by_conversation_id("h") == [UserMessage("x")]
    with pytest.raises(SchemaError, match="initialize_schema"):
        repo.find_by_type("USER")
    repo.create_schema()  # existing documents are indexed in the background: wait, bounded
    deadline = time.monotonic() + 30
    while not (hits := repo.find_by_type("USER", conversation_id="h")):
        assert time.monotonic() < deadline, "the new index never served the stored message"
        time.sleep(0.1)
    assert [h.message for h in hits] == [UserMessage("x")]
    harness.cleanup(server, repo)


def test_schema_statements_for_url_need_no_server() -> None:
    ddl = RedisChatMemoryRepository.schema_statements_for_url(
        "redis://127.0.0.1:1/0", index_name="my-idx", key_prefix="my:"
    )
    assert len(ddl) == 1 and ddl[0].startswith("FT.CREATE my-idx ON JSON PREFIX 1 my:m:")


def test_index_creation_is_race_safe(
    harness: Any, server: ServerInfo, make_repository: Make
) -> None:
    options = harness.namespace_options()
    barrier = threading.Barrier(6)

    def create(i: int) -> None:
        barrier.wait(timeout=30)
        make_repository(**options).append("race", UserMessage(f"w{i}"))

    with ThreadPoolExecutor(6) as pool:
        for f in [pool.submit(create, i) for i in range(6)]:
            f.result()
    assert len(make_repository(**options).find_by_type("USER")) == 6


def test_an_index_missing_a_configured_field_is_a_schema_error(
    harness: Any, make_repository: Make
) -> None:
    options = harness.namespace_options()
    make_repository(**options)
    with pytest.raises(SchemaError, match="metadata_priority"):
        make_repository(metadata_fields=[MetadataField.tag("priority")], **options)


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("key_prefix", "bad prefix", InvalidIdentifierError),
        ("key_prefix", "", InvalidIdentifierError),
        ("index_name", "idx;FT.DROP", InvalidIdentifierError),
        ("ttl", timedelta(0), InvalidArgumentError),
        ("ttl", 60, InvalidArgumentError),
        ("max_conversation_ids", 0, InvalidArgumentError),
        ("max_messages_per_conversation", -1, InvalidArgumentError),
        (
            "metadata_fields",
            [MetadataField.tag("a"), MetadataField.numeric("a")],
            InvalidArgumentError,
        ),
        ("metadata_fields", ["priority"], InvalidArgumentError),
    ],
)
def test_bad_options_are_rejected_before_any_io(option: str, value: Any, error: type) -> None:
    dead = redis.Redis(port=free_port(), socket_connect_timeout=0.2)
    with pytest.raises(error):
        RedisChatMemoryRepository(dead, **{option: value})


def test_bad_metadata_field_names_are_rejected() -> None:
    with pytest.raises(InvalidIdentifierError):
        MetadataField.tag("a.b")
    with pytest.raises(ValueError):
        MetadataField(name="a", type="vector")  # type: ignore[arg-type]


def test_from_url_owns_its_client_and_a_given_client_stays_open(
    server: ServerInfo, harness: Any
) -> None:
    assert server.url is not None
    options = harness.namespace_options()
    with RedisChatMemoryRepository.from_url(server.url, **options) as repo:
        repo.save_all("u", [UserMessage("x")])
    via_registry = repository_from_url(server.url, **options)
    assert isinstance(via_registry, RedisChatMemoryRepository)
    assert via_registry.find_by_conversation_id("u") == [UserMessage("x")]
    client = client_of(server)
    given = RedisChatMemoryRepository(client, **options)
    given.close()
    assert client.ping()
    harness.cleanup(server, given)


def test_an_unreachable_server_is_backend_unavailable() -> None:
    repo = RedisChatMemoryRepository.from_url(
        f"redis://127.0.0.1:{free_port()}/0", initialize_schema="never"
    )
    with pytest.raises(BackendUnavailableError) as info:
        repo.find_by_conversation_id("x")
    assert isinstance(info.value.__cause__, redis.ConnectionError)
    with pytest.raises(BackendUnavailableError):
        RedisChatMemoryRepository.from_url(f"redis://127.0.0.1:{free_port()}/0")


def test_without_the_driver_the_import_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "try:\n    import chatmem.redis\n"
        "except ImportError as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("MissingDependencyError")
    assert 'pip install "chatmem[redis]"' in out.stdout
