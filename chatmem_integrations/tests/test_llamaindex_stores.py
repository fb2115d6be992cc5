"""The LlamaIndex chat stores: ``ChatmemDBChatStore`` under the current ``Memory`` and the
``BaseChatStore`` adapter, on the in-memory store, SQLite and the suite's ``--backend``.

The scenarios follow llama-index-core's own chat-store tests
(``tests/storage/chat_store/test_sql.py`` and ``test_simple_chat_store.py``, MIT), restated
here against our stores. Not restated, because they test another store's internals:
``test_sql.py::test_delete_message`` (reads SQLAlchemyChatStore's table for a row id; our
``idx`` is a position, tested below) and ``test_simple_chat_store.py::
test_persist_non_ascii_unescaped`` (SimpleChatStore's JSON file).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from chatmem.core import InvalidArgumentError, UserMessage
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem_integrations.tests import test_adapters as shared

# the adapters' fixtures: memory, SQLite and the suite's --backend, one isolated repo a test
backend, make_repo, repo = shared.backend, shared.make_repo, shared.repo
amake = shared.amake


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The adapters' stores; a test marked ``multiprocess`` (it reopens the store from a
    URL) runs on those another process can reach, so not on the in-memory one."""
    selected = metafunc.config.getoption("--backend", default="memory")
    if "store_name" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "multiprocess"
    ):
        names = ["sqlite", *([selected] if selected not in ("memory", "sqlite") else [])]
        metafunc.parametrize("store_name", names, scope="module")
        return
    shared.pytest_generate_tests(metafunc)


pytest.importorskip("llama_index.core", reason="llama-index-core not installed (extra: llamaindex)")

from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.storage.chat_store.base_db import MessageStatus  # noqa: E402

from chatmem.integrations.llamaindex import (  # noqa: E402
    STATUS_KEY,
    ChatmemChatStore,
    ChatmemDBChatStore,
)

ACTIVE, ARCHIVED = MessageStatus.ACTIVE, MessageStatus.ARCHIVED


def msg(text: str, role: str = "user") -> ChatMessage:
    return ChatMessage(role=role, content=text)


def texts(messages: list[ChatMessage]) -> list[str | None]:
    return [m.content for m in messages]


_LOOP: list[asyncio.AbstractEventLoop] = []


@pytest.fixture(autouse=True)
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop a test, the current one: ``run`` and LlamaIndex's sync ``Memory``
    methods (which run their coroutines on the current loop) share it with the async twin
    the ``db`` fixture opened there."""
    made = asyncio.new_event_loop()
    asyncio.set_event_loop(made)
    _LOOP.append(made)
    try:
        yield made
    finally:
        _LOOP.remove(made)
        asyncio.set_event_loop(None)
        made.close()


def run(coro: Any) -> Any:
    return _LOOP[-1].run_until_complete(coro)


@pytest.fixture
def db(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository, loop: asyncio.AbstractEventLoop
) -> Iterator[ChatmemDBChatStore]:
    """The DB store over an async client of ``repo``'s data (every method of it is async)."""
    twin = loop.run_until_complete(shared.twin_of(backend, repo))
    try:
        yield ChatmemDBChatStore(twin)
    finally:
        loop.run_until_complete(shared.close_twin(twin))


@pytest.fixture
def sync_store(repo: BaseChatMemoryRepository) -> ChatmemChatStore:
    return ChatmemChatStore(repo)


# == AsyncDBChatStore contract (after llama-index-core test_sql.py) ===========================
def test_db_add_and_get_in_order(db: ChatmemDBChatStore) -> None:
    run(db.add_message("u1", msg("hello")))
    run(db.add_message("u1", msg("world", "assistant")))
    got = run(db.get_messages("u1"))
    assert texts(got) == ["hello", "world"] and [m.role.value for m in got] == ["user", "assistant"]
    assert run(db.get_messages("nobody")) == []


def test_db_add_messages_batch_and_count(db: ChatmemDBChatStore) -> None:
    run(db.add_messages("b", [msg("1"), msg("2", "assistant"), msg("3")]))
    assert texts(run(db.get_messages("b"))) == ["1", "2", "3"]
    assert run(db.count_messages("b")) == 3
    assert run(db.count_messages("nobody")) == 0


def test_db_set_messages_replaces_every_status(db: ChatmemDBChatStore) -> None:
    run(db.add_messages("k", [msg("old1"), msg("old2")]))
    run(db.archive_oldest_messages("k", 1))
    run(db.set_messages("k", [msg("new1"), msg("new2", "assistant")]))
    assert texts(run(db.get_messages("k", status=None))) == ["new1", "new2"]
    run(db.set_messages("k", [msg("a")], status=ARCHIVED))
    assert run(db.get_messages("k")) == [] and texts(run(db.get_messages("k", ARCHIVED))) == ["a"]


def test_db_delete_messages_by_key_and_by_status(db: ChatmemDBChatStore) -> None:
    run(db.add_message("one", msg("x")))
    run(db.add_message("two", msg("y")))
    run(db.delete_messages("one"))
    assert run(db.get_messages("one")) == [] and texts(run(db.get_messages("two"))) == ["y"]
    run(db.add_messages("s", [msg("a"), msg("b"), msg("c")]))
    run(db.archive_oldest_messages("s", 2))
    run(db.delete_messages("s", status=ARCHIVED))
    assert texts(run(db.get_messages("s", status=None))) == ["c"]


def test_db_delete_oldest_returns_and_removes_them(db: ChatmemDBChatStore) -> None:
    run(db.add_messages("o", [msg("oldest"), msg("middle", "assistant"), msg("newest")]))
    assert texts(run(db.delete_oldest_messages("o", 1))) == ["oldest"]
    assert texts(run(db.get_messages("o"))) == ["middle", "newest"]
    assert run(db.delete_oldest_messages("nobody", 3)) == []


def test_db_archive_keeps_the_log_and_moves_status(
    db: ChatmemDBChatStore, repo: BaseChatMemoryRepository
) -> None:
    run(db.add_messages("a", [msg("oldest"), msg("middle", "assistant"), msg("newest")]))
    assert texts(run(db.archive_oldest_messages("a", 1))) == ["oldest"]
    assert texts(run(db.get_messages("a", status=ACTIVE))) == ["middle", "newest"]
    assert texts(run(db.get_messages("a", status=ARCHIVED))) == ["oldest"]
    assert run(db.count_messages("a", None)) == 3
    # chatmem's own tools read the whole transcript, archived messages marked
    stored = repo.find_by_conversation_id("a")
    assert [m.metadata.get(STATUS_KEY) for m in stored] == ["archived", None, None]
    assert stored[0] == UserMessage("oldest", metadata={STATUS_KEY: "archived"})
    # the reserved key never reaches LlamaIndex
    for m in run(db.get_messages("a", status=None)):
        assert STATUS_KEY not in json.dumps(m.model_dump(mode="json"))


def test_db_limit_and_offset(db: ChatmemDBChatStore) -> None:
    run(db.add_messages("p", [msg(f"m{i}") for i in range(1, 6)]))
    assert texts(run(db.get_messages("p", limit=2))) == ["m1", "m2"]
    assert texts(run(db.get_messages("p", offset=2))) == ["m3", "m4", "m5"]
    assert texts(run(db.get_messages("p", limit=2, offset=1))) == ["m2", "m3"]


def test_db_keys(db: ChatmemDBChatStore) -> None:
    for k in ("k1", "k2", "k3"):
        run(db.add_message(k, msg(k)))
    assert set(run(db.get_keys())) == {"k1", "k2", "k3"}


def test_db_delete_message_by_position(db: ChatmemDBChatStore) -> None:
    run(db.add_messages("d", [msg("m1"), msg("m2", "assistant"), msg("m3")]))
    assert texts([run(db.delete_message("d", 1))]) == ["m2"]
    assert texts(run(db.get_messages("d"))) == ["m1", "m3"]
    assert run(db.delete_message("d", 2)) is None and run(db.delete_message("d", -3)) is None
    assert texts([run(db.delete_message("d", -1))]) == ["m3"]


def test_db_concurrent_appends_all_land(db: ChatmemDBChatStore) -> None:
    async def many() -> None:
        await asyncio.gather(*(db.add_message("c", msg(f"m{i}")) for i in range(40)))

    run(many())
    assert sorted(texts(run(db.get_messages("c")))) == sorted(f"m{i}" for i in range(40))  # type: ignore[type-var]


def test_db_rejects_bad_arguments(db: ChatmemDBChatStore, repo: BaseChatMemoryRepository) -> None:
    with pytest.raises(InvalidArgumentError):
        run(db.get_messages(""))
    with pytest.raises(InvalidArgumentError, match="status"):
        run(db.get_messages("k", status="gone"))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="limit"):
        run(db.get_messages("k", limit=-1))
    with pytest.raises(InvalidArgumentError, match="messages"):
        run(db.add_messages("k", ["not a message"]))  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="n"):
        run(db.archive_oldest_messages("k", -1))
    with pytest.raises(InvalidArgumentError, match="repository"):
        ChatmemDBChatStore(repo)  # type: ignore[arg-type]  # a sync one: every method is async
    with pytest.raises(InvalidArgumentError, match="url"):
        ChatmemDBChatStore(db.repository, url="memory:")
    with pytest.raises(InvalidArgumentError, match="url"):
        ChatmemDBChatStore()
    with pytest.raises(InvalidArgumentError, match="data"):
        ChatmemDBChatStore.from_dict(db.to_dict())  # made from a repository: no url


# == the current Memory on our store =========================================================
def test_memory_from_defaults_takes_the_store(
    db: ChatmemDBChatStore, repo: BaseChatMemoryRepository
) -> None:
    from llama_index.core.memory import Memory

    memory = Memory.from_defaults(
        session_id="alice",
        chat_store=db,
        token_limit=40,
        token_flush_size=12,
        chat_history_token_ratio=0.5,
        tokenizer_fn=str.split,
    )
    sent = [
        msg(f"turn {i} has five words", "user" if i % 2 == 0 else "assistant") for i in range(8)
    ]
    for m in sent:
        memory.put(m)
    window = memory.get()
    assert window and window == sent[-len(window) :] and len(window) < len(sent)
    assert memory.get_all() == sent  # archived + active, in order
    assert len(repo.find_by_conversation_id("alice")) == len(sent)
    archived = run(db.get_messages("alice", status=ARCHIVED))
    assert archived == sent[: len(archived)] and archived
    memory.reset()
    assert run(db.count_messages("alice", None)) == 0


def test_memory_history_argument_is_stored(db: ChatmemDBChatStore) -> None:
    from llama_index.core.memory import Memory

    history = [msg("be brief", "system"), msg("hi"), msg("hello", "assistant")]
    memory = Memory.from_defaults(session_id="s", chat_store=db, chat_history=history)
    assert memory.get_all() == history


# == to_dict / from_dict from a URL ==========================================================
def _spec(backend: tuple[Any, Any], repo: BaseChatMemoryRepository) -> tuple[str, dict[str, Any]]:
    harness, server = backend
    spec = harness.connect_spec(server, repo)
    assert spec is not None, "a multiprocess test ran on an in-process store"
    url, options = spec
    return url, options


async def _session(store: ChatmemDBChatStore, *calls: Any) -> list[Any]:
    """Run ``calls`` (each ``lambda: store.op(...)``) on one loop, then close the store."""
    try:
        return [await call() for call in calls]
    finally:
        await store.aclose()


@pytest.mark.multiprocess
def test_stores_rebuild_from_to_dict(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    url, options = _spec(backend, repo)
    first = ChatmemDBChatStore.from_url(url, **options)
    run(_session(first, lambda: first.add_messages("k", [msg("a"), msg("b", "assistant")])))
    data = json.loads(json.dumps(first.to_dict()))
    assert data == {"class_name": "ChatmemDBChatStore", "url": url}
    again = ChatmemDBChatStore.from_dict(data, **options)
    assert texts(run(_session(again, lambda: again.get_messages("k")))[0]) == ["a", "b"]
    sync = ChatmemChatStore.from_url(url, **options)
    sync_data = json.loads(sync.to_json())
    assert sync_data["url"] == url and sync_data["class_name"] == "ChatmemChatStore"
    assert texts(ChatmemChatStore.from_dict(sync_data, **options).get_messages("k")) == ["a", "b"]


@pytest.mark.multiprocess
def test_another_process_rebuilds_and_appends(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    url, options = _spec(backend, repo)
    store = ChatmemDBChatStore.from_url(url, **options)
    run(_session(store, lambda: store.add_message("p", msg("from parent"))))
    script = textwrap.dedent(
        """
        import asyncio, json, sys
        from llama_index.core.llms import ChatMessage
        from chatmem.integrations.llamaindex import ChatmemDBChatStore
        data, options = json.loads(sys.argv[1]), json.loads(sys.argv[2])
        store = ChatmemDBChatStore.from_dict(data, **options)
        async def child():
            await store.add_message("p", ChatMessage(role="assistant", content="from child"))
            got = [m.content for m in await store.get_messages("p")]
            await store.aclose()
            return got
        print(json.dumps(asyncio.run(child())))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(store.to_dict()), json.dumps(options)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert json.loads(out.stdout) == ["from parent", "from child"]
    got = run(_session(store, lambda: store.get_messages("p")))[0]
    assert texts(got) == ["from parent", "from child"]


# == the DB store on async repositories, one loop a test =====================================
def test_db_on_an_async_repository_runs_the_contract(amake: shared.AsyncMaker) -> None:
    async def scenario(arepo: Any) -> None:
        db = ChatmemDBChatStore(arepo)
        await db.add_messages("k", [msg("oldest"), msg("middle", "assistant"), msg("newest")])
        assert texts(await db.get_messages("k", limit=2, offset=1)) == ["middle", "newest"]
        assert texts(await db.archive_oldest_messages("k", 1)) == ["oldest"]
        assert texts(await db.get_messages("k", ARCHIVED)) == ["oldest"]
        stored = await arepo.find_by_conversation_id("k")
        assert [m.metadata.get(STATUS_KEY) for m in stored] == ["archived", None, None]
        assert texts(await db.delete_oldest_messages("k", 1)) == ["middle"]
        assert await db.count_messages("k", None) == 2
        assert texts([await db.delete_message("k", -1)]) == ["newest"]
        await db.delete_messages("k", status=ARCHIVED)
        assert await db.get_messages("k", status=None) == []
        await db.set_messages("s", [msg("a"), msg("b")])
        await asyncio.gather(*(db.add_message("s", msg(f"m{i}")) for i in range(20)))
        assert await db.count_messages("s") == 22 and await db.get_keys() == ["s"]
        await db.delete_messages("s")
        assert await db.get_keys() == []
        with pytest.raises(InvalidArgumentError, match="n"):
            await db.archive_oldest_messages("k", -1)

    shared.arun(amake, scenario)


def test_memory_on_an_async_repository(amake: shared.AsyncMaker) -> None:
    from llama_index.core.memory import Memory

    async def scenario(arepo: Any) -> None:
        memory = Memory.from_defaults(
            session_id="alice",
            chat_store=ChatmemDBChatStore(arepo),
            token_limit=40,
            token_flush_size=12,
            chat_history_token_ratio=0.5,
            tokenizer_fn=str.split,
        )
        sent = [msg(f"turn {i} has five words", ("user", "assistant")[i % 2]) for i in range(8)]
        for m in sent:
            await memory.aput(m)
        window = await memory.aget()
        assert window and window == sent[-len(window) :] and len(window) < len(sent)
        assert await memory.aget_all() == sent
        assert len(await arepo.find_by_conversation_id("alice")) == len(sent)

    shared.arun(amake, scenario)


def test_db_from_url_opens_the_async_twin_on_first_use() -> None:
    store = ChatmemDBChatStore.from_url("memory:")
    assert store.to_dict() == {"class_name": "ChatmemDBChatStore", "url": "memory:"}

    async def scenario() -> list[str | None]:
        asyncio.get_running_loop().set_default_executor(shared.NoThreads())
        await store.add_messages("k", [msg("a"), msg("b")])
        got = texts(await store.get_messages("k"))
        await store.aclose()
        return got

    assert run(scenario()) == ["a", "b"]
    with pytest.raises(InvalidArgumentError, match="url"):
        ChatmemDBChatStore.from_url("nosuchstore://x")  # before any I/O


# == BaseChatStore adapter (after llama-index-core test_simple_chat_store.py) =================
def test_sync_add_get_keys_and_insert(sync_store: ChatmemChatStore) -> None:
    for key in ("user1", "user2"):
        sync_store.add_message(key, msg("hello"))
        sync_store.add_message(key, msg("world"))
    assert sync_store.get_messages("user1") == [msg("hello"), msg("world")]
    assert sorted(sync_store.get_keys()) == ["user1", "user2"]
    sync_store.add_message("user1", msg("first"), idx=0)
    assert texts(sync_store.get_messages("user1")) == ["first", "hello", "world"]


def test_sync_negative_index_counts_from_the_end(sync_store: ChatmemChatStore) -> None:
    sync_store.add_message("one", msg("hello"))
    assert sync_store.delete_message("one", -2) is None  # out of range: None, never IndexError
    assert sync_store.delete_message("one", 1) is None
    assert sync_store.get_messages("one") == [msg("hello")]
    sync_store.set_messages("three", [msg("a"), msg("b"), msg("c")])
    assert sync_store.delete_message("three", -2) == msg("b")
    assert sync_store.get_messages("three") == [msg("a"), msg("c")]


def test_sync_delete_last_until_empty(sync_store: ChatmemChatStore) -> None:
    sync_store.add_message("u", msg("hello"))
    assert sync_store.delete_last_message("u") == msg("hello")
    assert sync_store.delete_last_message("u") is None


def test_sync_store_sees_archived_messages_and_keeps_their_status(
    db: ChatmemDBChatStore, repo: BaseChatMemoryRepository
) -> None:
    sync = ChatmemChatStore(repo)
    run(db.add_messages("k", [msg("a"), msg("b"), msg("c")]))
    run(db.archive_oldest_messages("k", 1))
    assert texts(sync.get_messages("k")) == ["a", "b", "c"]
    assert sync.delete_message("k", -1) == msg("c")
    assert texts(run(db.get_messages("k", ARCHIVED))) == ["a"]
    assert texts(run(db.get_messages("k"))) == ["b"]


def test_sync_rejects_bad_index(sync_store: ChatmemChatStore) -> None:
    with pytest.raises(InvalidArgumentError, match="idx"):
        sync_store.delete_message("k", "0")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="idx"):
        sync_store.add_message("k", msg("x"), idx=1.5)  # type: ignore[arg-type]
