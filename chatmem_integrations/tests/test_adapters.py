"""Chatmem repositories as a LangChain chat message history and a LlamaIndex chat store.

Every test runs against the in-memory repository, SQLite, and the suite's ``--backend``
when that is another one (``--backend redis`` adds Redis). The frameworks' own consumers
(``RunnableWithMessageHistory``, ``ChatMemoryBuffer``) are driven through the adapters too.
langchain-tests has no standard suite for chat message histories (only caches, stores,
vector stores, retrievers, tools, models), so the contract is spelled out here.
"""

from __future__ import annotations

import asyncio
import gc
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncChatMemoryRepository,
    AsyncInMemoryChatMemoryRepository,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    async_repository_from_url,
)
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.corpus import ID_CORPUS, PNG, full_corpus

BUILTIN = ["memory", "sqlite"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_name" in metafunc.fixturenames:
        names = list(BUILTIN)
        selected = metafunc.config.getoption("--backend", default="memory")
        if selected not in names:
            names.append(selected)
        metafunc.parametrize("store_name", names, scope="module")


@pytest.fixture(scope="module")
def backend(store_name: str, request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    from chatmem.testing.plugin import load_harness, provision

    if store_name == request.config.getoption("--backend", default="memory"):
        yield request.getfixturevalue("harness"), request.getfixturevalue("server")
        return
    if store_name == "sqlite":
        pytest.importorskip("sqlalchemy", reason="SQLAlchemy not installed (extra: sqlite)")
    harness = load_harness(store_name)
    server = provision(harness, Path(tempfile.mkdtemp(prefix=f"chatmem-adapters-{store_name}-")))
    try:
        yield harness, server
    finally:
        server.stop()


@pytest.fixture
def make_repo(backend: tuple[Any, Any]) -> Iterator[Callable[[], BaseChatMemoryRepository]]:
    harness, server = backend
    made: list[BaseChatMemoryRepository] = []

    def make() -> BaseChatMemoryRepository:
        repo: BaseChatMemoryRepository = harness.make_repository(server)
        made.append(repo)
        return repo

    yield make
    for repo in made:
        harness.cleanup(server, repo)


@pytest.fixture
def repo(make_repo: Callable[[], BaseChatMemoryRepository]) -> BaseChatMemoryRepository:
    return make_repo()


# == async repositories: the in-memory twin and SQLite's =====================================
ASYNC_STORES = ["async-memory", "async-sqlite"]
AsyncMaker = Callable[[], Awaitable[AsyncChatMemoryRepository]]
T = TypeVar("T")


@pytest.fixture(params=ASYNC_STORES)
def amake(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncMaker:
    """Opens async clients of one fresh store (each call another client of the same data)."""
    if request.param == "async-memory":
        shared = AsyncInMemoryChatMemoryRepository()

        async def same() -> AsyncChatMemoryRepository:
            return shared

        return same
    pytest.importorskip("aiosqlite", reason="aiosqlite not installed (extra: sqlite)")
    try:
        from chatmem.jdbc import AsyncJdbcChatMemoryRepository  # noqa: F401
    except ImportError:
        pytest.skip("SQLite's async twin chatmem.jdbc.AsyncJdbcChatMemoryRepository is missing")
    url = f"sqlite:///{tmp_path / 'async.db'}"

    async def opened() -> AsyncChatMemoryRepository:
        return await async_repository_from_url(url)

    return opened


def async_twin_of(repo: BaseChatMemoryRepository) -> AsyncChatMemoryRepository:
    """An async client of the same in-memory store (test-only: the twins share their dicts),
    so a contract written against a sync repository can drive an adapter's async path."""
    assert isinstance(repo, InMemoryChatMemoryRepository)
    twin = AsyncInMemoryChatMemoryRepository()
    twin._logs, twin._next, twin._lock = repo._logs, repo._next, repo._lock
    return twin


async def twin_of(backend: tuple[Any, Any], repo: BaseChatMemoryRepository) -> Any:
    """An async client of ``repo``'s data, built on the running loop: the in-memory twin
    sharing its dicts, else the harness's own async twin (close it with ``close_twin``)."""
    if isinstance(repo, InMemoryChatMemoryRepository):
        return async_twin_of(repo)
    harness, server = backend
    return await harness.make_async_twin(server, repo)


async def close_twin(twin: Any) -> None:
    close = getattr(twin, "close", None)
    if close is not None:
        await close()


class NoThreads(ThreadPoolExecutor):
    """A loop's default executor that fails: an async path on an async repository must not
    reach ``asyncio.to_thread`` or ``run_in_executor``."""

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker thread was used on an async repository")


def arun(
    amake: AsyncMaker,
    scenario: Callable[[AsyncChatMemoryRepository], Awaitable[T]],
    *,
    threads: bool = False,
) -> T:
    """``scenario(repo)`` on a fresh loop with no worker threads (unless ``threads``: for a
    framework part that uses its own), the client closed after."""

    async def main() -> T:
        if not threads:
            asyncio.get_running_loop().set_default_executor(NoThreads())
        repo = await amake()
        try:
            return await scenario(repo)
        finally:
            close = getattr(repo, "close", None)
            if close is not None:
                await close()

    return asyncio.run(main())


# == LangChain ===============================================================================
def _lc() -> Any:
    pytest.importorskip("langchain_core", reason="langchain-core not installed (extra: langchain)")
    from langchain_core import messages

    return messages


@pytest.fixture
def history(repo: BaseChatMemoryRepository) -> Callable[..., Any]:
    _lc()
    from chatmem.integrations.langchain import ChatmemChatMessageHistory

    def make(cid: str = "session-1", **options: Any) -> Any:
        return ChatmemChatMessageHistory(repo, cid, **options)

    return make


def lc_sample() -> list[Any]:
    m = _lc()
    return [
        m.SystemMessage("You are terse."),
        m.HumanMessage(
            content=[
                {"type": "text", "text": "what is this?"},
                {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
            ],
            id="h-1",
        ),
        m.AIMessage(
            "",
            tool_calls=[
                {"name": "f", "args": {"x": 1}, "id": "t1", "type": "tool_call"},
                {"name": "g", "args": {}, "id": "t2", "type": "tool_call"},
            ],
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        ),
        m.ToolMessage("one", tool_call_id="t1", name="f"),
        m.ToolMessage("two", tool_call_id="t2", status="error", artifact=[1, 2]),
        m.AIMessage("Done. ümlaut 漢字 🙂", response_metadata={"finish_reason": "stop"}),
    ]


def test_langchain_new_history_is_empty(history: Callable[..., Any]) -> None:
    assert history().messages == []
    assert asyncio.run(history().aget_messages()) == []


def test_langchain_add_messages_reads_back_exactly(history: Callable[..., Any]) -> None:
    h = history()
    h.add_messages(lc_sample())
    assert h.messages == lc_sample()
    assert history().messages == lc_sample()  # a second handle sees the same store


def test_langchain_adding_one_at_a_time_equals_adding_in_a_batch(
    history: Callable[..., Any],
) -> None:
    one, batch = history("one"), history("batch")
    for message in lc_sample():
        one.add_message(message)
    batch.add_messages(lc_sample())
    assert one.messages == batch.messages == lc_sample()


def test_langchain_convenience_methods(history: Callable[..., Any]) -> None:
    m = _lc()
    h = history()
    h.add_user_message("hi")
    h.add_ai_message("hello")
    h.add_user_message(m.HumanMessage("again"))
    assert h.messages == [m.HumanMessage("hi"), m.AIMessage("hello"), m.HumanMessage("again")]
    assert "Human: hi" in str(h) and "AI: hello" in str(h)


def test_langchain_async_methods(history: Callable[..., Any]) -> None:
    """Given only a sync repository, the async methods are LangChain's own (its executor)."""
    m = _lc()
    h = history()

    async def scenario() -> None:
        await h.aadd_messages([m.HumanMessage("a"), m.AIMessage("b")])
        assert await h.aget_messages() == [m.HumanMessage("a"), m.AIMessage("b")]
        await h.aclear()
        assert await h.aget_messages() == []

    asyncio.run(scenario())


def test_langchain_clear_only_touches_its_conversation(history: Callable[..., Any]) -> None:
    m = _lc()
    a, b = history("a"), history("b")
    a.add_messages([m.HumanMessage("for a")])
    b.add_messages([m.HumanMessage("for b")])
    a.clear()
    assert a.messages == [] and b.messages == [m.HumanMessage("for b")]


def test_langchain_ids_are_exact(history: Callable[..., Any]) -> None:
    m = _lc()
    for cid in ID_CORPUS:
        history(cid).add_messages([m.HumanMessage(cid)])
    for cid in ID_CORPUS:
        assert history(cid).messages == [m.HumanMessage(cid)]


def test_langchain_reads_chatmem_written_history(
    history: Callable[..., Any], repo: BaseChatMemoryRepository
) -> None:
    from chatmem.integrations.langchain import to_langchain

    repo.save_all("native", full_corpus())
    seen = history("native").messages
    assert seen == to_langchain(full_corpus(), group_tool_responses=False)
    history("copy").add_messages(seen)
    assert repo.find_by_conversation_id("copy") == full_corpus()


def test_langchain_window_mode(history: Callable[..., Any]) -> None:
    m = _lc()
    h = history(max_messages=4)
    h.add_messages([m.SystemMessage("s")])
    for i in range(5):
        h.add_messages([m.HumanMessage(f"u{i}"), m.AIMessage(f"a{i}")])
    assert h.messages == [m.SystemMessage("s"), m.HumanMessage("u4"), m.AIMessage("a4")]


def test_langchain_concurrent_adds_all_land(history: Callable[..., Any]) -> None:
    m = _lc()

    def writer(n: int) -> None:
        h = history("busy")
        for i in range(10):
            h.add_messages([m.HumanMessage(f"{n}-{i}")])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    texts = [x.content for x in history("busy").messages]
    assert sorted(texts) == sorted(f"{n}-{i}" for n in range(4) for i in range(10))
    for n in range(4):
        assert [t for t in texts if t.startswith(f"{n}-")] == [f"{n}-{i}" for i in range(10)]


def test_langchain_runnable_with_message_history(history: Callable[..., Any]) -> None:
    m = _lc()
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    model = GenericFakeChatModel(messages=iter([m.AIMessage("first"), m.AIMessage("second")]))
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be terse."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: history(session_id),
        input_messages_key="question",
        history_messages_key="history",
    )
    config: Any = {"configurable": {"session_id": "rwmh"}}
    chain.invoke({"question": "one?"}, config=config)
    chain.invoke({"question": "two?"}, config=config)
    stored = history("rwmh").messages
    assert [type(x).__name__ for x in stored] == ["HumanMessage", "AIMessage"] * 2
    assert [x.content for x in stored] == ["one?", "first", "two?", "second"]


def test_langchain_rejects_bad_arguments(repo: BaseChatMemoryRepository) -> None:
    _lc()
    from chatmem.core import InvalidArgumentError
    from chatmem.integrations.langchain import ChatmemChatMessageHistory

    with pytest.raises(InvalidArgumentError):
        ChatmemChatMessageHistory(repo, "")
    with pytest.raises(InvalidArgumentError):
        ChatmemChatMessageHistory(object(), "x")  # type: ignore[arg-type]


# -- LangChain on async repositories ---------------------------------------------------------
def test_langchain_async_history_on_an_async_repository(amake: AsyncMaker) -> None:
    _lc()
    from chatmem.integrations.langchain import ChatmemChatMessageHistory

    async def scenario(arepo: AsyncChatMemoryRepository) -> None:
        h = ChatmemChatMessageHistory(conversation_id="s", async_repository=arepo)
        assert await h.aget_messages() == []
        await h.aadd_messages(lc_sample()[:2])
        await h.aadd_messages(lc_sample()[2:])
        assert await h.aget_messages() == lc_sample()
        again = ChatmemChatMessageHistory(conversation_id="s", async_repository=await amake())
        assert await again.aget_messages() == lc_sample()  # another client, the same store
        assert await arepo.find_by_conversation_id("s") != []
        await h.aclear()
        assert await h.aget_messages() == []
        with pytest.raises(InvalidArgumentError, match="only async_repository"):
            h.messages  # noqa: B018  # the sync methods need repository=

    arun(amake, scenario)


def test_langchain_async_window_mode(amake: AsyncMaker) -> None:
    m = _lc()
    from chatmem.integrations.langchain import ChatmemChatMessageHistory

    async def scenario(arepo: AsyncChatMemoryRepository) -> None:
        h = ChatmemChatMessageHistory(conversation_id="w", async_repository=arepo, max_messages=4)
        await h.aadd_messages([m.SystemMessage("s")])
        for i in range(5):
            await h.aadd_messages([m.HumanMessage(f"u{i}"), m.AIMessage(f"a{i}")])
        want = [m.SystemMessage("s"), m.HumanMessage("u4"), m.AIMessage("a4")]
        assert await h.aget_messages() == want

    arun(amake, scenario)


def test_langchain_async_concurrent_adds_all_land(amake: AsyncMaker) -> None:
    m = _lc()
    from chatmem.integrations.langchain import ChatmemChatMessageHistory

    async def scenario(arepo: AsyncChatMemoryRepository) -> None:
        h = ChatmemChatMessageHistory(conversation_id="busy", async_repository=arepo)

        async def writer(n: int) -> None:
            for i in range(5):
                await h.aadd_messages([m.HumanMessage(f"{n}-{i}")])

        await asyncio.gather(*(writer(n) for n in range(20)))
        texts = [x.content for x in await h.aget_messages()]
        assert sorted(texts) == sorted(f"{n}-{i}" for n in range(20) for i in range(5))
        for n in range(20):
            assert [t for t in texts if t.startswith(f"{n}-")] == [f"{n}-{i}" for i in range(5)]

    arun(amake, scenario)


def test_langchain_ainvoke_runs_on_the_async_repository(amake: AsyncMaker) -> None:
    m = _lc()
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    from chatmem.integrations.langchain import ChatmemChatMessageHistory

    async def scenario(arepo: AsyncChatMemoryRepository) -> None:
        model = GenericFakeChatModel(messages=iter([m.AIMessage("first"), m.AIMessage("second")]))
        prompt = ChatPromptTemplate.from_messages(
            [("system", "Be terse."), MessagesPlaceholder("history"), ("human", "{question}")]
        )
        chain = RunnableWithMessageHistory(
            prompt | model,
            lambda sid: ChatmemChatMessageHistory(conversation_id=sid, async_repository=arepo),
            input_messages_key="question",
            history_messages_key="history",
        )
        config: Any = {"configurable": {"session_id": "rwmh"}}
        await chain.ainvoke({"question": "one?"}, config=config)
        await chain.ainvoke({"question": "two?"}, config=config)
        stored = await arepo.find_by_conversation_id("rwmh")
        assert [x.text for x in stored] == ["one?", "first", "two?", "second"]

    arun(amake, scenario, threads=True)  # the fake model runs in LangChain's executor


def test_langchain_history_with_both_repositories_uses_each_for_its_kind(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    m = _lc()
    from chatmem.integrations.langchain import ChatmemChatMessageHistory

    async def scenario() -> None:
        asyncio.get_running_loop().set_default_executor(NoThreads())
        twin = await twin_of(backend, repo)
        try:
            both = ChatmemChatMessageHistory(repo, "c", async_repository=twin)
            both.add_messages([m.HumanMessage("sync")])
            await both.aadd_messages([m.AIMessage("async")])  # on the twin: no worker thread
            assert both.messages == await both.aget_messages()
            assert [x.content for x in both.messages] == ["sync", "async"]
            assert both.repository is repo and both.async_repository is twin
        finally:
            await close_twin(twin)

    asyncio.run(scenario())


def test_langchain_rejects_a_repository_of_the_wrong_kind() -> None:
    _lc()
    from chatmem.integrations.langchain import ChatmemChatMessageHistory

    with pytest.raises(InvalidArgumentError, match="async_repository="):
        ChatmemChatMessageHistory(AsyncInMemoryChatMemoryRepository(), "c")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="async_repository"):
        ChatmemChatMessageHistory(
            conversation_id="c",
            async_repository=InMemoryChatMemoryRepository(),  # type: ignore[arg-type]
        )
    with pytest.raises(InvalidArgumentError, match="repository"):
        ChatmemChatMessageHistory(conversation_id="c")


# == LlamaIndex ==============================================================================
def _li() -> Any:
    pytest.importorskip(
        "llama_index.core", reason="llama-index-core not installed (extra: llamaindex)"
    )
    from llama_index.core.base.llms import types

    return types


@pytest.fixture
def store(repo: BaseChatMemoryRepository) -> Any:
    _li()
    from chatmem.integrations.llamaindex import ChatmemChatStore

    return ChatmemChatStore(repo)


def li_sample() -> list[Any]:
    t = _li()
    return [
        t.ChatMessage(role="system", content="Be terse."),
        t.ChatMessage(
            role="user",
            blocks=[t.TextBlock(text="see"), t.ImageBlock(image=PNG, image_mimetype="image/png")],
        ),
        t.ChatMessage(
            role="assistant",
            blocks=[t.ToolCallBlock(tool_call_id="t1", tool_name="f", tool_kwargs={"x": 1})],
        ),
        t.ChatMessage(
            role="tool", content="1", additional_kwargs={"tool_call_id": "t1", "name": "f"}
        ),
        t.ChatMessage(role="assistant", content="Done. 🙂", additional_kwargs={"model": "m"}),
    ]


def test_llamaindex_unknown_key_is_empty(store: Any) -> None:
    assert store.get_messages("nobody") == []
    assert store.delete_messages("nobody") is None
    assert store.delete_message("nobody", 0) is None
    assert store.delete_last_message("nobody") is None


def test_llamaindex_set_and_get_exactly(store: Any) -> None:
    store.set_messages("k", li_sample())
    assert store.get_messages("k") == li_sample()
    store.set_messages("k", li_sample()[:2])
    assert store.get_messages("k") == li_sample()[:2]
    store.set_messages("k", [])
    assert store.get_messages("k") == [] and "k" not in store.get_keys()


def test_llamaindex_add_message_appends_or_inserts(store: Any) -> None:
    t = _li()
    for message in li_sample():
        store.add_message("k", message)
    assert store.get_messages("k") == li_sample()
    first = t.ChatMessage(role="user", content="first")
    store.add_message("k", first, idx=0)
    assert store.get_messages("k") == [first, *li_sample()]


def test_llamaindex_delete_operations(store: Any) -> None:
    sample = li_sample()
    store.set_messages("k", sample)
    assert store.delete_message("k", 1) == sample[1]
    assert store.get_messages("k") == [sample[0], *sample[2:]]
    assert store.delete_message("k", 99) is None
    assert store.delete_last_message("k") == sample[-1]
    assert store.get_messages("k") == [sample[0], *sample[2:-1]]
    assert store.delete_messages("k") == [sample[0], *sample[2:-1]]
    assert store.get_messages("k") == [] and store.delete_messages("k") is None


def test_llamaindex_keys(store: Any) -> None:
    t = _li()
    for key in ID_CORPUS:
        store.add_message(key, t.ChatMessage(role="user", content=key))
    assert set(store.get_keys()) == set(ID_CORPUS)
    for key in ID_CORPUS:
        assert store.get_messages(key)[0].content == key


def test_llamaindex_async_methods(store: Any) -> None:
    """Given only a sync repository, the ``a*`` methods are BaseChatStore's own (a thread)."""
    t = _li()
    hi = t.ChatMessage(role="user", content="hi")

    async def scenario() -> None:
        await store.aset_messages("k", [hi])
        await store.async_add_message("k", t.ChatMessage(role="assistant", content="yo"))
        assert [m.content for m in await store.aget_messages("k")] == ["hi", "yo"]
        assert (await store.adelete_last_message("k")).content == "yo"
        assert await store.aget_keys() == ["k"]
        assert await store.adelete_messages("k") == [hi]

    asyncio.run(scenario())


def test_llamaindex_reads_chatmem_written_history(
    store: Any, repo: BaseChatMemoryRepository
) -> None:
    repo.save_all("native", full_corpus())
    seen = store.get_messages("native")
    store.set_messages("copy", seen)
    assert repo.find_by_conversation_id("copy") == full_corpus()
    grouped = ToolResponseMessage(
        (
            ToolResponse(id="a", name="f", response_data="1"),
            ToolResponse(id="b", name="g", response_data="2"),
        )
    )
    repo.save_all(
        "g",
        [
            UserMessage("u"),
            AssistantMessage(
                None, tool_calls=(ToolCall(id="a", name="f"), ToolCall(id="b", name="g"))
            ),
            grouped,
        ],
    )
    assert len(store.get_messages("g")) == 4
    assert store.delete_message("g", 0) is not None
    assert repo.find_by_conversation_id("g")[-1] == grouped


def test_llamaindex_chat_memory_buffer_uses_the_store(store: Any) -> None:
    t = _li()
    from llama_index.core.memory import ChatMemoryBuffer

    memory = ChatMemoryBuffer.from_defaults(
        chat_store=store, chat_store_key="buf", token_limit=10_000
    )
    memory.put(t.ChatMessage(role="user", content="hello"))
    memory.put(t.ChatMessage(role="assistant", content="hi there"))
    assert [m.content for m in memory.get()] == ["hello", "hi there"]
    assert [m.content for m in store.get_messages("buf")] == ["hello", "hi there"]
    memory.reset()
    assert store.get_messages("buf") == []


# -- LlamaIndex's BaseChatStore on async repositories ----------------------------------------
def test_llamaindex_async_methods_on_an_async_repository(amake: AsyncMaker) -> None:
    t = _li()
    from chatmem.integrations.llamaindex import ChatmemChatStore

    hi, yo = t.ChatMessage(role="user", content="hi"), t.ChatMessage(role="assistant", content="yo")

    async def scenario(arepo: AsyncChatMemoryRepository) -> None:
        store = ChatmemChatStore(async_repository=arepo)
        assert await store.aget_messages("k") == [] and await store.adelete_messages("k") is None
        await store.aset_messages("k", [hi])
        await store.async_add_message("k", yo)
        await store.async_add_message("k", t.ChatMessage(role="user", content="first"), idx=0)
        assert [m.content for m in await store.aget_messages("k")] == ["first", "hi", "yo"]
        assert (await store.adelete_message("k", 0)).content == "first"
        assert await store.adelete_message("k", -3) is None
        assert (await store.adelete_last_message("k")).content == "yo"
        assert await store.aget_keys() == ["k"]
        assert await store.adelete_messages("k") == [hi]
        assert await store.aget_keys() == []
        with pytest.raises(InvalidArgumentError, match="only async_repository"):
            store.get_messages("k")

    arun(amake, scenario)


def test_llamaindex_chat_memory_buffer_async_on_an_async_repository(amake: AsyncMaker) -> None:
    t = _li()
    from llama_index.core.memory import ChatMemoryBuffer

    from chatmem.integrations.llamaindex import ChatmemChatStore

    async def scenario(arepo: AsyncChatMemoryRepository) -> None:
        store = ChatmemChatStore(async_repository=arepo)
        memory = ChatMemoryBuffer.from_defaults(
            chat_store=store, chat_store_key="buf", token_limit=10_000
        )
        await memory.aput(t.ChatMessage(role="user", content="hello"))
        await memory.aput(t.ChatMessage(role="assistant", content="hi there"))
        # aget_all awaits the store; ChatMemoryBuffer.aget is LlamaIndex's thread around the
        # sync get, so it needs repository= as well
        assert [m.content for m in await memory.aget_all()] == ["hello", "hi there"]
        assert [m.text for m in await arepo.find_by_conversation_id("buf")] == [
            "hello",
            "hi there",
        ]

    arun(amake, scenario)


def test_llamaindex_store_with_both_repositories(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    t = _li()
    from chatmem.integrations.llamaindex import ChatmemChatStore

    async def scenario() -> None:
        asyncio.get_running_loop().set_default_executor(NoThreads())
        twin = await twin_of(backend, repo)
        try:
            store = ChatmemChatStore(repo, async_repository=twin)
            store.add_message("k", t.ChatMessage(role="user", content="sync"))
            await store.async_add_message("k", t.ChatMessage(role="assistant", content="async"))
            assert store.get_messages("k") == await store.aget_messages("k")
            assert [m.content for m in store.get_messages("k")] == ["sync", "async"]
        finally:
            await close_twin(twin)

    asyncio.run(scenario())


def test_llamaindex_rejects_bad_arguments(repo: BaseChatMemoryRepository) -> None:
    _li()
    from chatmem.core import InvalidArgumentError
    from chatmem.integrations.llamaindex import ChatmemChatStore

    with pytest.raises(InvalidArgumentError):
        ChatmemChatStore(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        ChatmemChatStore(repo).get_messages("")


# == one async strategy: an async method never runs a sync repository in a thread ==========
def test_async_methods_without_an_async_repository_name_what_to_pass(
    repo: BaseChatMemoryRepository,
) -> None:
    """Where the framework's base class has no executor fallback (LangGraph's saver and store,
    LlamaIndex's all-async ``AsyncDBChatStore``, an ``idx`` insert LlamaIndex's own method
    lacks), an adapter given only a sync repository raises before any I/O, naming
    ``async_repository`` (or ``repository``) and what to pass instead."""
    pytest.importorskip("langgraph.checkpoint.base", reason="langgraph not installed")
    t = _li()
    from langgraph.checkpoint.base import empty_checkpoint

    from chatmem.integrations.langgraph import ChatmemSaver
    from chatmem.integrations.langgraph_store import ChatmemStore
    from chatmem.integrations.llamaindex import ChatmemChatStore, ChatmemDBChatStore

    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saver, store = ChatmemSaver(repo), ChatmemStore(repo)

    async def scenario() -> None:
        asyncio.get_running_loop().set_default_executor(NoThreads())

        def wants_twin() -> Any:
            return pytest.raises(InvalidArgumentError, match=r"async_repository=.*Async")

        with wants_twin():
            await saver.aput(config, empty_checkpoint(), {}, {})
        with wants_twin():
            await saver.aget_tuple(config)
        with wants_twin():
            await store.aput(("n",), "k", {"v": 1})
        with wants_twin():
            await ChatmemChatStore(repo).async_add_message("k", t.ChatMessage(content="x"), idx=0)

    asyncio.run(scenario())
    assert repo.find_conversation_ids() == []  # nothing was written
    with pytest.raises(InvalidArgumentError, match=r"repository.*sync repository.*Async"):
        ChatmemDBChatStore(repo)  # type: ignore[arg-type]  # every method of it is async


# == no adapter blocks the loop: 100 tasks on one adapter, a lag probe beside them ===========
TASKS = 100
TICK = 0.005
MAX_LAG = 1.0
"""Seconds the loop may be late waking a ``TICK`` probe (90th percentile) while ``TASKS``
tasks use one adapter: the frameworks' own per-call work runs on the loop, and on a shared
two-core machine running two test sessions and JVMs it was measured at up to 0.76 s; a
blocking socket call fails the test through the probe whatever the lag, and a store that
blocks otherwise (the negative control, ``BLOCKING_DELAY`` per call) stalls it past this."""
BLOCKING_DELAY = 0.02
"""The control's blocking wait per store call: 100 tasks make the loop about 2 s late."""


class RoundTripInMemory(AsyncInMemoryChatMemoryRepository):
    """The async in-memory store with a ``delay`` per store call, awaited as a network round
    trip is (the in-memory twin itself never suspends); ``blocking`` waits with
    ``time.sleep`` instead: a driver that blocks the loop, the probe's negative control."""

    def __init__(self, delay: float = 0.002, blocking: bool = False) -> None:
        super().__init__()
        self.delay, self.blocking = delay, blocking

    async def _wait(self) -> None:
        if self.blocking:
            time.sleep(self.delay)
        else:
            await asyncio.sleep(self.delay)

    async def _find_ids_page(self, limit: int, after: str | None) -> Any:
        await self._wait()
        return await super()._find_ids_page(limit, after)

    async def _find(self, cid: str) -> Any:
        await self._wait()
        return await super()._find(cid)

    async def _save_all(self, cid: str, messages: Any) -> None:
        await self._wait()
        await super()._save_all(cid, messages)

    async def _append(self, cid: str, messages: Any, trim_to: int | None) -> None:
        await self._wait()
        await super()._append(cid, messages, trim_to)

    async def _edit_window(self, cid: str, non_system_limit: int, plan: Any) -> None:
        await self._wait()
        await super()._edit_window(cid, non_system_limit, plan)


async def _langchain_user(arepo: AsyncChatMemoryRepository, i: int) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from chatmem.integrations.langchain import ChatmemChatMessageHistory

    h = ChatmemChatMessageHistory(
        conversation_id=f"c{i % 50}", async_repository=arepo, max_messages=6
    )
    for n in range(3):
        await h.aadd_messages([HumanMessage(f"{i}-{n}"), AIMessage("ok")])
        await h.aget_messages()


async def _llamaindex_user(arepo: AsyncChatMemoryRepository, i: int) -> None:
    from llama_index.core.llms import ChatMessage

    from chatmem.integrations.llamaindex import ChatmemChatStore, ChatmemDBChatStore

    db, store = ChatmemDBChatStore(arepo), ChatmemChatStore(async_repository=arepo)
    for n in range(3):
        await db.add_message(f"c{i % 50}", ChatMessage(role="user", content=f"{i}-{n}"))
        await db.get_messages(f"c{i % 50}", limit=5)
        await store.async_add_message(f"s{i % 50}", ChatMessage(role="user", content="x"))
        await store.aget_messages(f"s{i % 50}")


async def _langgraph_user(arepo: AsyncChatMemoryRepository, i: int) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    from chatmem.integrations.langgraph import ChatmemSaver

    saver = ChatmemSaver(async_repository=arepo)
    config: Any = {"configurable": {"thread_id": f"t{i}", "checkpoint_ns": ""}}
    for _ in range(3):
        config = await saver.aput(config, empty_checkpoint(), {}, {})
        await saver.aput_writes(config, [("ch", i)], task_id=f"task{i}")
        assert await saver.aget_tuple(config) is not None
        assert [t async for t in saver.alist(config)]


async def _langgraph_store_user(arepo: AsyncChatMemoryRepository, i: int) -> None:
    from chatmem.integrations.langgraph_store import ChatmemStore

    store = ChatmemStore(async_repository=arepo)
    for n in range(3):
        await store.aput(("users", f"u{i % 50}"), f"k{i}-{n}", {"n": n})
        await store.aget(("users", f"u{i % 50}"), f"k{i}-{n}")
        await store.asearch(("users", f"u{i % 50}"), limit=5)


USERS: dict[str, tuple[str, Callable[[AsyncChatMemoryRepository, int], Awaitable[None]]]] = {
    "langchain": ("langchain_core", _langchain_user),
    "llamaindex": ("llama_index.core", _llamaindex_user),
    "langgraph": ("langgraph.checkpoint.base", _langgraph_user),
    "langgraph_store": ("langgraph.store.base", _langgraph_store_user),
}


def _lag_under_load(
    user: Callable[[AsyncChatMemoryRepository, int], Awaitable[None]], *, blocking: bool = False
) -> tuple[float, list[str]]:
    """The probe's 90th-percentile lag while ``TASKS`` users run on one store, and the blocking
    socket calls made on the loop's thread meanwhile; no worker thread may be used."""
    from chatmem.testing.probes import BlockingSocketProbe, loop_lags, percentile

    asyncio.run(user(RoundTripInMemory(), -1))  # first calls import and build models

    async def main() -> list[float]:
        asyncio.get_running_loop().set_default_executor(NoThreads())
        store = RoundTripInMemory(BLOCKING_DELAY if blocking else 0.002, blocking=blocking)

        async def work() -> None:
            await asyncio.gather(*(user(store, i) for i in range(TASKS)))

        return await loop_lags(work, TICK)

    gc.collect()
    gc.freeze()  # the session's heap out of the collector's way: its pauses are not the adapters'
    try:
        with BlockingSocketProbe() as sockets:
            lags = asyncio.run(main())
    finally:
        gc.unfreeze()
    return percentile(lags, 0.9) if len(lags) >= 3 else float("inf"), sockets.calls


@pytest.mark.parametrize("adapter", list(USERS))
def test_async_adapters_never_block_the_loop(adapter: str) -> None:
    module, user = USERS[adapter]
    pytest.importorskip(module, reason=f"{module} not installed")
    lag, sockets = _lag_under_load(user)
    assert sockets == [] and lag < MAX_LAG, (lag, sockets)


def test_the_lag_probe_sees_a_blocking_store() -> None:
    _lc()
    lag, _ = _lag_under_load(_langchain_user, blocking=True)
    assert lag > MAX_LAG, lag  # 100 tasks x 6 calls x 20 ms blocking: the loop stalls
