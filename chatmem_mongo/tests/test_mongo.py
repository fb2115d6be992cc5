"""MongoDB-specific behaviour, against the server the harness started (never mocked)."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import bson
import pytest
from pymongo import MongoClient, monitoring

from chatmem.core import (
    AssistantMessage,
    BackendUnavailableError,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    InvalidIdentifierError,
    Media,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.mongo import (
    DEFAULT_COLLECTION_NAME,
    POSITION_INDEX,
    TTL_INDEX,
    MongoChatMemoryRepository,
    escape_key,
    unescape_key,
)
from chatmem.mongo._native.snapshots import CHUNK
from chatmem.testing.harness import ServerInfo, unique_suffix

pytestmark = pytest.mark.backend("mongo")

Make = Callable[..., MongoChatMemoryRepository]


class Commands(monitoring.CommandListener):
    """Records every command a client sends (to prove "before any I/O")."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in ("hello", "isMaster", "ismaster", "endSessions"):
            self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
def watched(server: ServerInfo) -> Iterator[tuple[MongoClient[Any], Commands]]:
    commands = Commands()
    client: MongoClient[Any] = MongoClient(server.url, event_listeners=[commands])
    yield client, commands
    client.close()


def _indexes(repo: MongoChatMemoryRepository) -> list[dict[str, Any]]:
    return [
        {**ix, "key": [(k, int(v)) for k, v in ix["key"].items()]}
        for ix in repo.collection.list_indexes()
    ]


def _ttl_indexes(repo: MongoChatMemoryRepository) -> list[dict[str, Any]]:
    return [ix for ix in _indexes(repo) if ix["key"] == TTL_INDEX]


# -- storage shape ------------------------------------------------------------------------
def test_every_field_is_stored_as_queryable_bson(repository: MongoChatMemoryRepository) -> None:
    ts = datetime(2024, 2, 29, 12, 34, 56, 789012, tzinfo=timezone.utc)
    repository.save_all(
        "shape",
        [
            SystemMessage("be terse", created_at=ts),
            UserMessage(
                "hi",
                metadata={"user_id": "u-1", "score": 3, "tags": ["a"]},
                media=(Media(mime_type="image/png", data=b"\x89PNG\x00", name="p.png"),),
            ),
            AssistantMessage(None, tool_calls=(ToolCall(id="c1", name="f", arguments='{"x": 1}'),)),
            ToolResponseMessage((ToolResponse(id="c1", name="f", response_data="42"),)),
        ],
    )
    doc = repository.collection.find_one({"_id": "shape"})
    assert doc is not None and doc["conversation_id"] == "shape"
    assert isinstance(doc["updated_at"], datetime) and doc["next_position"] == 4
    (system,) = doc["systems"]  # systems apart, so a window read takes them all and no more
    user, assistant, tool = doc["messages"]
    assert doc["v"] == 2 and doc["archived"] == 0 and doc["archive"] == {}
    assert [m["position"] for m in [system, *doc["messages"]]] == [0, 1, 2, 3]
    assert [m["type"] for m in [system, *doc["messages"]]] == [
        "SYSTEM",
        "USER",
        "ASSISTANT",
        "TOOL",
    ]
    assert system["created_at_us"] == 1709210096789012  # exact microseconds
    assert isinstance(system["created_at"], datetime)  # a BSON Date, for date queries
    assert user["metadata"] == {"user_id": "u-1", "score": 3, "tags": ["a"]}
    assert user["media"][0]["data"] == b"\x89PNG\x00"  # BSON binary, not base64 text
    assert assistant["text"] is None and assistant["tool_calls"][0]["arguments"] == '{"x": 1}'
    assert tool["responses"] == [{"id": "c1", "name": "f", "response_data": "42"}]
    # fields are real documents a query can reach
    assert repository.collection.count_documents({"messages.metadata.user_id": "u-1"}) == 1
    assert repository.collection.count_documents({"messages.tool_calls.name": "f"}) == 1


def test_awkward_metadata_keys_and_huge_ints_round_trip(
    repository: MongoChatMemoryRepository,
) -> None:
    metadata = {
        "$where": 1,
        "a.b": {"$gt": "c.d"},
        "%": "%",
        "%24": "x",
        "": "empty key",
        "plain": "$ne",
        "huge": 2**80,
        "tiny": -(2**70),
        "nested": [{"x.y": 2**64}],
    }
    repository.save_all("keys", [UserMessage("k", metadata=metadata)])
    back = repository.find_by_conversation_id("keys")[0].metadata
    assert dict(back) == metadata and type(back["huge"]) is int
    for key in ("$x", "a.b", "%", "%24", "", "ok", "a%2Eb", "$.%"):
        assert unescape_key(escape_key(key)) == key
        assert not escape_key(key).startswith("$") and "." not in escape_key(key)


def test_window_adds_keep_the_document_the_size_of_the_window(
    repository: MongoChatMemoryRepository,
) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=4)
    memory.add("w", SystemMessage("sys"))
    for i in range(50):
        memory.add("w", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    doc = repository.collection.find_one({"_id": "w"})
    assert doc is not None and len(doc["messages"]) <= 1 + 5
    assert [m.text for m in memory.get("w")] == ["sys", "u49", "a49"]
    positions = [m["position"] for m in doc["messages"]]
    assert positions == sorted(positions) and doc["next_position"] == 101


# -- ids and validation -------------------------------------------------------------------
@pytest.mark.parametrize("bad", [{"$ne": None}, {"$gt": ""}, ["a"], 42, None])
def test_operator_ids_never_reach_the_server(
    repository: MongoChatMemoryRepository, watched: tuple[MongoClient[Any], Commands], bad: object
) -> None:
    repository.save_all("victim", [UserMessage("keep me")])
    client, commands = watched
    repo = MongoChatMemoryRepository(
        client[repository.database.name], collection_name=repository.config.collection_name
    )
    assert commands.names == ["listIndexes"]  # indexes exist: checked, nothing created
    commands.names.clear()
    calls: list[Callable[[], object]] = [
        lambda: repo.find_by_conversation_id(bad),  # type: ignore[arg-type]
        lambda: repo.delete_by_conversation_id(bad),  # type: ignore[arg-type]
        lambda: repo.save_all(bad, [UserMessage("x")]),  # type: ignore[arg-type]
        lambda: repo.append(bad, UserMessage("x")),  # type: ignore[arg-type]
        lambda: repo.find_last(bad, 2),  # type: ignore[arg-type]
        lambda: MessageWindowChatMemory(repo).add(bad, UserMessage("x")),  # type: ignore[arg-type]
        lambda: MessageWindowChatMemory(repo).get(bad),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert info.value.argument == "conversation_id"
    assert commands.names == []
    assert [m.text for m in repo.find_by_conversation_id("victim")] == ["keep me"]


def test_construction_on_a_ready_collection_sends_no_ddl(
    repository: MongoChatMemoryRepository, watched: tuple[MongoClient[Any], Commands]
) -> None:
    client, commands = watched
    name = repository.config.collection_name
    MongoChatMemoryRepository(client[repository.database.name], collection_name=name)
    MongoChatMemoryRepository(client, database_name=repository.database.name, collection_name=name)
    assert commands.names == ["listIndexes", "listIndexes"]


def test_construction_with_never_sends_nothing(
    server: ServerInfo, watched: tuple[MongoClient[Any], Commands]
) -> None:
    client, commands = watched
    MongoChatMemoryRepository(client[server.extra["database"]], initialize_schema="never")
    assert commands.names == []


@pytest.mark.parametrize("name", ["", "a$b", "system.users", "has space", "a..b", "x" * 121, 7])
def test_bad_collection_names_are_rejected(server: ServerInfo, name: object) -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        MongoChatMemoryRepository(
            server.extra["client"][server.extra["database"]], collection_name=name
        )  # type: ignore[arg-type]
    assert info.value.argument == "collection_name"


@pytest.mark.parametrize("ttl", [timedelta(0), timedelta(seconds=-1), 60])
def test_bad_ttl_is_rejected(server: ServerInfo, ttl: object) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        MongoChatMemoryRepository(server.extra["client"][server.extra["database"]], ttl=ttl)  # type: ignore[arg-type]
    assert info.value.argument == "ttl"


# -- construction -------------------------------------------------------------------------
def test_default_collection_and_database_from_client(server: ServerInfo) -> None:
    client = server.extra["client"]
    repo = MongoChatMemoryRepository(client, database_name=server.extra["database"])
    assert repo.collection.name == DEFAULT_COLLECTION_NAME == "ai_chat_memory"
    assert MongoChatMemoryRepository(client).database.name == server.extra["database"]  # URL's


def test_from_url_owns_its_client_and_a_passed_client_stays_open(server: ServerInfo) -> None:
    assert server.url is not None
    with MongoChatMemoryRepository.from_url(server.url, collection_name="cm_from_url") as repo:
        repo.save_all("u", [UserMessage("via url")])
        owned = repo._owned
        assert owned is not None
    with pytest.raises(Exception, match=r"closed|after close"):
        owned.admin.command("ping")
    shared = server.extra["client"]
    database = shared[server.extra["database"]]
    MongoChatMemoryRepository(database, collection_name="cm_from_url").close()
    assert shared.admin.command("ping")["ok"]
    shared[server.extra["database"]]["cm_from_url"].drop()


def test_from_url_needs_a_database_and_a_mongodb_url(server: ServerInfo) -> None:
    assert server.url is not None
    no_db = re.sub(r"/chatmem_test", "/", server.url)
    with pytest.raises(InvalidArgumentError) as info:
        MongoChatMemoryRepository.from_url(no_db)
    assert info.value.argument == "database_name"
    with pytest.raises(InvalidArgumentError):
        MongoChatMemoryRepository.from_url("redis://localhost/0")
    with pytest.raises(InvalidArgumentError) as bad:
        MongoChatMemoryRepository.from_url("mongodb://host:notaport/db")
    assert bad.value.argument == "url"


def test_unreachable_server_is_backend_unavailable() -> None:
    url, options = "mongodb://127.0.0.1:9/chatmem", {"serverSelectionTimeoutMS": 300}
    with pytest.raises(BackendUnavailableError) as info:  # "always" checks indexes at once
        MongoChatMemoryRepository.from_url(url, client_options=options)
    assert info.value.__cause__ is not None
    repo = MongoChatMemoryRepository.from_url(
        url, client_options=options, initialize_schema="never"
    )
    with pytest.raises(BackendUnavailableError) as info:
        repo.find_by_conversation_id("x")
    assert info.value.__cause__ is not None
    repo.close()


def test_missing_pymongo_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['pymongo'] = None\n"
        "try:\n    import chatmem.mongo\nexcept ImportError as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "MissingDependencyError" in out.stdout and 'pip install "chatmem[mongo]"' in out.stdout


def test_the_mongo_extra_pulls_only_pymongo() -> None:
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    line = re.search(r"^mongo = (\[.*\])$", pyproject, re.M)
    assert line is not None and line.group(1) == '["pymongo>=4.13.2"]'


# -- indexes and TTL ----------------------------------------------------------------------
def test_position_index_exists_when_indexes_are_created(make_repository: Make) -> None:
    repo = make_repository(initialize_schema="always")
    assert any(ix["key"] == POSITION_INDEX for ix in _indexes(repo))
    assert _ttl_indexes(repo) == []


def test_never_creates_no_index_and_refuses_until_created(make_repository: Make) -> None:
    from chatmem.core import SchemaError

    repo = make_repository(initialize_schema="never", ttl=timedelta(hours=1))
    assert [ix for ix in _indexes(repo) if ix["key"] != [("_id", 1)]] == []
    with pytest.raises(SchemaError, match="create_schema"):
        repo.append("c", UserMessage("refused"))
    repo.create_schema()
    repo.append("c", UserMessage("stored"))
    assert [m.text for m in repo.find_by_conversation_id("c")] == ["stored"]
    assert [ix["expireAfterSeconds"] for ix in _ttl_indexes(repo)] == [3600]


def test_schema_statements_for_url_need_no_server() -> None:
    ddl = MongoChatMemoryRepository.schema_statements_for_url(
        "mongodb://127.0.0.1:1/app", collection_name="c1", ttl=timedelta(minutes=2)
    )
    assert len(ddl) == 2 and "c1" in ddl[0] and '"expireAfterSeconds": 120' in ddl[1]


def test_ttl_index_is_recreated_when_the_ttl_changes(make_repository: Make) -> None:
    repo = make_repository(ttl=timedelta(hours=1))
    name = {"collection_name": repo.config.collection_name}
    assert [ix["expireAfterSeconds"] for ix in _ttl_indexes(repo)] == [3600]
    make_repository(**name, ttl=timedelta(minutes=5))
    assert [ix["expireAfterSeconds"] for ix in _ttl_indexes(repo)] == [300]
    make_repository(**name, ttl=timedelta(minutes=5))  # unchanged: left alone
    assert [ix["expireAfterSeconds"] for ix in _ttl_indexes(repo)] == [300]
    make_repository(**name, ttl=None, initialize_schema="never")  # not managing: untouched
    assert [ix["expireAfterSeconds"] for ix in _ttl_indexes(repo)] == [300]
    make_repository(**name, ttl=timedelta(seconds=1.2))  # whole seconds, rounded up
    assert [ix["expireAfterSeconds"] for ix in _ttl_indexes(repo)] == [2]
    make_repository(**name, ttl=None)  # managing, no TTL: dropped
    assert _ttl_indexes(repo) == []
    assert any(ix["key"] == POSITION_INDEX for ix in _indexes(repo))


def test_concurrent_constructors_with_a_ttl_agree_on_one_index(make_repository: Make) -> None:
    name = {"collection_name": make_repository(initialize_schema="never").config.collection_name}
    with ThreadPoolExecutor(6) as pool:
        repos = list(
            pool.map(lambda _: make_repository(**name, ttl=timedelta(minutes=7)), range(6))
        )
    assert [ix["expireAfterSeconds"] for ix in _ttl_indexes(repos[0])] == [420]


# -- concurrency and size ---------------------------------------------------------------------
def test_writers_with_stale_snapshots_lose_nothing(make_repository: Make) -> None:
    first = make_repository()
    second = make_repository(collection_name=first.config.collection_name)
    memory_a = MessageWindowChatMemory(first, max_messages=100)
    memory_b = MessageWindowChatMemory(second, max_messages=100)
    for i in range(10):  # each add starts from a snapshot the other repository made stale
        memory_a.add("s", UserMessage(f"a{i}"))
        memory_b.add("s", UserMessage(f"b{i}"))
    first.delete_by_conversation_id("s")
    memory_b.add("s", UserMessage("after delete"))  # second's snapshot is of a deleted document
    assert [m.text for m in memory_a.get("s")] == ["after delete"]
    second.save_all("s", [UserMessage("replaced")])
    memory_a.add("s", UserMessage("appended"))
    assert [(m.text, m.position) for m in first.find_by_conversation_id("s")] == [
        ("replaced", 0),
        ("appended", 1),
    ]


def test_threads_on_two_repositories_lose_nothing(make_repository: Make) -> None:
    repos = [make_repository()]
    repos.append(make_repository(collection_name=repos[0].config.collection_name))
    barrier = threading.Barrier(6)

    def run(w: int) -> None:
        memory = MessageWindowChatMemory(repos[w % 2], max_messages=1000)
        barrier.wait(timeout=30)
        for n in range(30):
            memory.add("race", UserMessage(f"w{w}:{n}"))

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(run, range(6)))
    got = repos[0].find_by_conversation_id("race")
    for w in range(6):
        assert [m.text for m in got if m.text and m.text.startswith(f"w{w}:")] == [
            f"w{w}:{n}" for n in range(30)
        ]
    assert [m.position for m in got] == list(range(180))


def test_a_conversation_over_16_mib_is_refused_with_a_clear_error(
    repository: MongoChatMemoryRepository,
) -> None:
    repository.save_all("big", [UserMessage("small")])
    huge = Media(mime_type="application/octet-stream", data=b"\x00" * (17 * 1024 * 1024))
    writes: list[Callable[[], None]] = [
        lambda: repository.save_all("big", [UserMessage("x", media=(huge,))]),
        lambda: repository.append("big", UserMessage("x", media=(huge,))),
    ]
    for write in writes:
        with pytest.raises(InvalidArgumentError, match="16 MiB") as info:
            write()
        assert info.value.argument == "messages"
    assert [m.text for m in repository.find_by_conversation_id("big")] == ["small"]


def test_a_foreign_document_under_an_id_is_a_schema_error(
    repository: MongoChatMemoryRepository,
) -> None:
    from chatmem.core import SchemaError

    repository.collection.insert_one({"_id": "foreign", "something": "else"})
    repository.collection.insert_one({"_id": 12345, "not": "a string id"})
    with pytest.raises(SchemaError, match="not a chatmem conversation"):
        repository.find_by_conversation_id("foreign")
    with pytest.raises(SchemaError):
        repository.append("foreign", UserMessage("x"))
    repository.save_all("mine", [UserMessage("ok")])
    assert repository.find_conversation_ids() == ["foreign", "mine"]  # string ids only


# -- bounded reads ------------------------------------------------------------------------
class Replies(monitoring.CommandListener):
    """What the server returned per command: reply bytes and array elements of the found
    documents (messages, systems, archive chunks)."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, int, int]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if event.command_name in ("hello", "isMaster", "ismaster", "endSessions"):
            return
        docs = (event.reply.get("cursor") or {}).get("firstBatch") or ()
        elements = sum(len(v) for d in docs for v in d.values() if isinstance(v, list))
        self.replies.append((event.command_name, len(bson.encode(event.reply)), elements))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def take(self) -> list[tuple[str, int, int]]:
        got, self.replies = self.replies, []
        return got


LONG = 10_000
PAYLOAD = "x" * 300  # a realistic message: its size dominates every reply


def _long_history() -> list[Message]:
    return [SystemMessage("be terse")] + [
        UserMessage(f"{i} {PAYLOAD}") if i % 2 == 0 else AssistantMessage(f"{i} {PAYLOAD}")
        for i in range(LONG)
    ]


def _bounded(replies: list[tuple[str, int, int]], elements: int) -> None:
    assert replies, "nothing was read"
    for name, size, got in replies:
        assert got <= elements, (name, got)
        assert size <= elements * (len(PAYLOAD) + 200) + 1_000, (name, size)


def test_every_read_after_save_all_of_a_long_history_is_bounded(server: ServerInfo) -> None:
    """Issue 19: after save_all of 10,000 messages a window read fetched the whole document
    (3.9 MB). Each read now returns what it needs: the window, the last n, or (inside a
    write) the head, the systems and a tail under 2 * CHUNK, never the archive."""
    replies = Replies()
    client: MongoClient[Any] = MongoClient(server.url, event_listeners=[replies])
    repo = MongoChatMemoryRepository(
        client[server.extra["database"]], collection_name=f"cm_{unique_suffix()}"
    )
    try:
        reference = InMemoryChatMemoryRepository()
        for r in (repo, reference):
            r.save_all("long", _long_history())
        replies.take()
        window = MessageWindowChatMemory(repo, max_messages=20).get("long")
        assert _shape(window) == _shape(
            MessageWindowChatMemory(reference, max_messages=20).get("long")
        )
        _bounded(replies.take(), 1 + 21)
        assert [m.position for m in repo.find_last("long", 5)] == list(range(LONG - 4, LONG + 1))
        _bounded(replies.take(), 5 + 5)
        # writes from a repository that never saw the document: the snapshot read is bounded
        for keep_history in (True, False):
            other = MongoChatMemoryRepository(client[server.extra["database"]], **_same(repo))
            for r in (other, reference):
                memory = MessageWindowChatMemory(r, max_messages=20, keep_history=keep_history)
                memory.add("long", UserMessage("q"))
                memory.add("long", [SystemMessage("new rules"), AssistantMessage("a")])
            assert _shape(other.window_get("long", 20)) == _shape(reference.window_get("long", 20))
            _bounded([r for r in replies.take() if r[0] == "find"], 1 + 2 * CHUNK)
        _same_log(repo.find_by_conversation_id("long"), reference.find_by_conversation_id("long"))
    finally:
        repo.collection.drop()
        client.close()


def _same(repo: MongoChatMemoryRepository) -> dict[str, Any]:
    return {"collection_name": repo.config.collection_name}


def test_long_histories_match_the_reference_on_every_path(
    repository: MongoChatMemoryRepository,
) -> None:
    """Archive chunks, tails, trims and system resets against the in-memory reference, with
    windows shorter and longer than a chunk and writers whose snapshots are stale."""
    rng = random.Random(19)
    mongo, reference = repository, InMemoryChatMemoryRepository()
    stale = MongoChatMemoryRepository(mongo.database, **_same(mongo))  # its own snapshots
    for round_ in range(6):
        cid = f"r{round_}"
        seed = [UserMessage(f"s{i}") for i in range(rng.choice([0, 5, 3 * CHUNK + 7]))]
        for repo in (mongo, reference):
            repo.save_all(cid, [SystemMessage("sys0"), *seed])
        size = [3, CHUNK - 1, CHUNK + 5, 3 * CHUNK, 5, 2 * CHUNK][round_]  # one window a round
        for step in range(60):
            keep = rng.random() < 0.6
            batch: list[Message] = [UserMessage(f"{round_}.{step}")]
            if rng.random() < 0.15:
                batch.insert(0, SystemMessage(f"sys{step}"))
            writer = stale if rng.random() < 0.3 else mongo
            if rng.random() < 0.2:
                writer.append(cid, batch)
                reference.append(cid, batch)
            else:
                writer.window_add(cid, batch, size, keep_history=keep)
                reference.window_add(cid, batch, size, keep_history=keep)
            got = mongo.window_get(cid, size)
            assert _shape(got) == _shape(reference.window_get(cid, size)), (round_, step)
            whole = mongo.find_by_conversation_id(cid)
            _same_log(whole, reference.find_by_conversation_id(cid))
            assert _shape(mongo.find_last(cid, 7)) == _shape(whole[-7:])
        _same_log(mongo.find_by_conversation_id(cid), reference.find_by_conversation_id(cid))


def _shape(messages: list[Message]) -> list[tuple[str | None, int | None]]:
    return [(m.text, m.position) for m in messages]


def _same_log(got: list[Message], reference: list[Message]) -> None:
    """The same systems, and one's non-systems a suffix of the other's: a trimming add may
    drop older ones sooner or later than the in-memory store does (the append contract)."""

    def systems(ms: list[Message]) -> list[Message]:
        return [m for m in ms if isinstance(m, SystemMessage)]

    def others(ms: list[Message]) -> list[Message]:
        return [m for m in ms if not isinstance(m, SystemMessage)]

    assert _shape(systems(got)) == _shape(systems(reference))
    short, long = sorted((_shape(others(got)), _shape(others(reference))), key=len)
    assert short == long[len(long) - len(short) :]


def test_a_layout_1_document_is_read_and_rewritten_as_layout_2(
    repository: MongoChatMemoryRepository,
) -> None:
    """Documents written before the systems/archive split (every message in ``messages``)."""
    repository.save_all("old", [SystemMessage("sys"), *(UserMessage(f"u{i}") for i in range(99))])
    new = repository.collection.find_one({"_id": "old"})
    assert new is not None
    merged = sorted([*new["systems"], *new["messages"]], key=lambda d: d["position"])
    archived = [d for k in range(new["archived"]) for d in new["archive"][str(k)]]
    merged = sorted([*merged, *archived], key=lambda d: d["position"])
    repository.collection.replace_one(
        {"_id": "old"},
        {k: v for k, v in new.items() if k not in ("systems", "archive", "archived")}
        | {"v": 1, "messages": merged},
    )
    fresh = MongoChatMemoryRepository(repository.database, **_same(repository))
    texts = ["sys", *(f"u{i}" for i in range(99))]
    assert [m.text for m in fresh.find_by_conversation_id("old")] == texts
    assert [m.text for m in fresh.window_get("old", 3)] == ["sys", "u97", "u98"]
    assert [m.text for m in fresh.find_last("old", 2)] == ["u97", "u98"]
    fresh.append("old", UserMessage("u99"))
    doc = repository.collection.find_one({"_id": "old"})
    assert doc is not None and doc["v"] == 2 and doc["archived"] > 0
    assert [m.text for m in fresh.find_by_conversation_id("old")] == [*texts, "u99"]
