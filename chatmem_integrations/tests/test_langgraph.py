"""The LangGraph checkpointer against LangGraph's own conformance suite (PyPI
``langgraph-checkpoint-conformance``: the required suites put, put_writes, get_tuple, list,
delete_thread and the optional delete_for_runs, copy_thread, prune), on the in-memory
store, SQLite and the suite's ``--backend``; plus a real graph run and its mirrored chat."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chatmem.core import InvalidArgumentError
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem_integrations.tests import test_adapters as shared

pytest.importorskip("langgraph.checkpoint.conformance", reason="extra: langgraph")

from langgraph.checkpoint.conformance import checkpointer_test, validate

from chatmem.integrations.langgraph import ChatmemSaver

pytest_generate_tests = shared.pytest_generate_tests
backend, make_repo, repo = shared.backend, shared.make_repo, shared.repo
amake = shared.amake


def _passed(report: Any) -> None:
    failures = {
        cap: [f"{f}" for f in result.failures]
        for cap, result in report.results.items()
        if result.passed is not True
    }
    assert failures == {}, report.to_dict()
    assert all(r.tests_passed > 0 for r in report.results.values())  # every suite ran
    assert report.passed_all_base() and report.passed_all()


class SyncPath(ChatmemSaver):
    """The saver with each conformance-tested async method calling its sync one (test-only,
    blocking: the suite drives only the async methods), so LangGraph's suite also runs the
    sync twin of the saver's I/O on the sync repository."""

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for tup in self.list(config, **kwargs):
            yield tup

    async def aput(self, *args: Any) -> Any:
        return self.put(*args)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        self.put_writes(*args, **kwargs)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Any) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)


@pytest.mark.parametrize("twin", ["sync", "async"])
def test_langgraph_conformance_required_and_optional(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository, store_name: str, twin: str
) -> None:
    """Every suite on each store: the saver on an async client of the store (awaited, no
    worker thread), and its sync methods on the sync repository."""

    async def scenario() -> Any:
        arepo = None
        if twin == "async":
            asyncio.get_running_loop().set_default_executor(shared.NoThreads())
            arepo = await shared.twin_of(backend, repo)

        @checkpointer_test(name=f"ChatmemSaver[{store_name}, {twin}]")
        async def factory() -> AsyncIterator[ChatmemSaver]:
            yield SyncPath(repo) if arepo is None else ChatmemSaver(async_repository=arepo)

        try:
            return await validate(factory)
        finally:
            await shared.close_twin(arepo)

    _passed(asyncio.run(scenario()))


def test_langgraph_conformance_on_an_async_repository(amake: shared.AsyncMaker) -> None:
    """The async saver given only an async repository: every suite, awaited on the loop with
    no worker thread (the loop's executor fails)."""

    async def scenario(arepo: Any) -> Any:
        @checkpointer_test(name="ChatmemSaver[async]")
        async def factory() -> AsyncIterator[ChatmemSaver]:
            yield ChatmemSaver(async_repository=arepo)

        return await validate(factory)

    _passed(shared.arun(amake, scenario))


def test_a_graph_ainvoke_is_checkpointed_on_an_async_repository(
    amake: shared.AsyncMaker,
) -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    async def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"seen {len(state['messages'])}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    cfg: Any = {"configurable": {"thread_id": "t-1"}}

    async def scenario(arepo: Any) -> None:
        app = graph.compile(checkpointer=ChatmemSaver(async_repository=arepo))
        await app.ainvoke({"messages": [HumanMessage("hi")]}, cfg)
        out = await app.ainvoke({"messages": [HumanMessage("again")]}, cfg)
        assert [m.content for m in out["messages"]] == ["hi", "seen 1", "again", "seen 3"]
        again = graph.compile(checkpointer=ChatmemSaver(async_repository=await amake()))
        assert len((await again.aget_state(cfg)).values["messages"]) == 4
        assert [m.text for m in await arepo.find_by_conversation_id("t-1")] == [
            "hi",
            "seen 1",
            "again",
            "seen 3",
        ]
        with pytest.raises(InvalidArgumentError, match="only async_repository"):
            app.get_state(cfg)  # the sync methods need repository= as well

    shared.arun(amake, scenario)


def test_saver_with_both_repositories(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    graph.add_node("reply", lambda s: {"messages": [AIMessage(f"seen {len(s['messages'])}")]})
    graph.add_edge(START, "reply")
    cfg: Any = {"configurable": {"thread_id": "both"}}

    async def scenario() -> None:
        twin = await shared.twin_of(backend, repo)
        try:
            app = graph.compile(checkpointer=ChatmemSaver(repo, async_repository=twin))
            app.invoke({"messages": [HumanMessage("sync")]}, cfg)
            await app.ainvoke({"messages": [HumanMessage("async")]}, cfg)
            assert [m.content for m in app.get_state(cfg).values["messages"]] == [
                "sync",
                "seen 1",
                "async",
                "seen 3",
            ]
        finally:
            await shared.close_twin(twin)

    asyncio.run(scenario())


def test_a_graph_run_is_checkpointed_and_its_chat_is_readable(
    repo: BaseChatMemoryRepository,
) -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"seen {len(state['messages'])}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    app = graph.compile(checkpointer=ChatmemSaver(repo))
    cfg = {"configurable": {"thread_id": "t-1"}}
    app.invoke({"messages": [HumanMessage("hi")]}, cfg)
    out = app.invoke({"messages": [HumanMessage("again")]}, cfg)
    assert [m.content for m in out["messages"]] == ["hi", "seen 1", "again", "seen 3"]
    # a new saver on the same store resumes the thread
    again = graph.compile(checkpointer=ChatmemSaver(repo))
    assert len(again.get_state(cfg).values["messages"]) == 4
    # chatmem's own tools read the thread's chat as a conversation
    assert [m.text for m in repo.find_by_conversation_id("t-1")] == [
        "hi",
        "seen 1",
        "again",
        "seen 3",
    ]


def test_saver_rejects_bad_arguments(repo: BaseChatMemoryRepository) -> None:
    with pytest.raises(InvalidArgumentError):
        ChatmemSaver(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        ChatmemSaver(repo, key_prefix="")
    with pytest.raises(InvalidArgumentError):
        ChatmemSaver(repo).prune(["t"], strategy="all")
    with pytest.raises(InvalidArgumentError, match="async_repository="):
        ChatmemSaver(shared.AsyncInMemoryChatMemoryRepository())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="async_repository"):
        ChatmemSaver(async_repository=repo)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="repository"):
        ChatmemSaver()


# == BaseStore: the same operations on LangGraph's InMemoryStore and on ours =================
async def _ops_scenario(store: Any, awaited: bool = False) -> list[Any]:
    """The same operations on any BaseStore, through its sync methods or (``awaited``) its
    async ones."""

    async def call(name: str, *args: Any, **kwargs: Any) -> Any:
        if awaited:
            return await getattr(store, "a" + name)(*args, **kwargs)
        return getattr(store, name)(*args, **kwargs)

    seen: list[Any] = []
    await call("put", ("users", "u1", "memories"), "m1", {"text": "likes tea", "n": 1})
    await call("put", ("users", "u1", "memories"), "m2", {"text": "lives in Rome", "n": 5})
    await call("put", ("users", "u2", "memories"), "m1", {"text": "likes coffee", "n": 3})
    await call("put", ("users", "u1", "prefs"), "theme", {"dark": True})
    await call("put", ("users", "u1", "memories"), "m1", {"text": "likes green tea", "n": 2})
    await call("put", ("docs",), "d1", {"kind": "x"})
    got = await call("get", ("users", "u1", "memories"), "m1")
    seen.append((got.value, got.key, got.namespace))
    seen.append(await call("get", ("users", "u1", "memories"), "nope"))
    memories: Any = ("users", "u1", "memories")  # InMemoryStore's $gte fails on a missing field
    for prefix, kwargs in (
        (("users",), {}),
        (memories, {"filter": {"n": {"$gte": 2}}}),
        (("users",), {"filter": {"text": "likes coffee"}}),
        (("users",), {"query": "tea"}),
    ):
        # the order across namespaces is each store's own (ours: by namespace, then put order)
        items = await call("search", prefix, **kwargs)
        seen.append(sorted((i.namespace, i.key, json.dumps(i.value)) for i in items))
    seen.append(
        await call(
            "list_namespaces",
        )
    )
    seen.append(await call("list_namespaces", prefix=("users",), max_depth=2))
    seen.append(await call("list_namespaces", suffix=("memories",)))
    seen.append(await call("list_namespaces", prefix=("users", "*", "prefs")))
    seen.append(await call("list_namespaces", limit=2, offset=1))
    await call("delete", ("users", "u1", "memories"), "m2")
    seen.append(await call("get", ("users", "u1", "memories"), "m2"))
    seen.append([i.key for i in await call("search", ("users", "u1"))])
    return seen


def test_store_behaves_as_langgraphs_in_memory_store(repo: BaseChatMemoryRepository) -> None:
    from langgraph.store.memory import InMemoryStore

    from chatmem.integrations.langgraph_store import ChatmemStore

    want = asyncio.run(_ops_scenario(InMemoryStore()))
    assert asyncio.run(_ops_scenario(ChatmemStore(repo))) == want


def test_async_store_behaves_as_langgraphs_in_memory_store(amake: shared.AsyncMaker) -> None:
    from langgraph.store.memory import InMemoryStore

    from chatmem.integrations.langgraph_store import ChatmemStore

    want = asyncio.run(_ops_scenario(InMemoryStore()))

    async def scenario(arepo: Any) -> None:
        store = ChatmemStore(async_repository=arepo)
        assert await _ops_scenario(store, awaited=True) == want
        await asyncio.gather(*(store.aput(("c",), f"k{i}", {"i": i}) for i in range(20)))
        keys = {i.key for i in await store.asearch(("c",), limit=100)}
        assert keys == {f"k{i}" for i in range(20)}
        await store.acompact([("c",)])
        assert len(await arepo.find_by_conversation_id('langgraph-store:["c"]')) == 20
        with pytest.raises(InvalidArgumentError, match="only async_repository"):
            store.get(("c",), "k1")

    shared.arun(amake, scenario)


def test_store_search_pages_are_consistent(repo: BaseChatMemoryRepository) -> None:
    from chatmem.integrations.langgraph_store import ChatmemStore

    store = ChatmemStore(repo)
    for ns in (("b",), ("a", "x"), ("a",)):
        for k in ("k2", "k1"):
            store.put(ns, k, {"ns": list(ns)})
    everything = [(i.namespace, i.key) for i in store.search((), limit=100)]
    assert everything == [
        (("a",), "k2"), (("a",), "k1"), (("a", "x"), "k2"), (("a", "x"), "k1"),
        (("b",), "k2"), (("b",), "k1"),
    ]  # fmt: skip
    pages = [store.search((), limit=4, offset=o) for o in (0, 4)]
    assert [(i.namespace, i.key) for page in pages for i in page] == everything


def test_store_persists_and_keeps_created_at(repo: BaseChatMemoryRepository) -> None:
    from chatmem.integrations.langgraph_store import ChatmemStore

    store = ChatmemStore(repo)
    store.put(("n",), "k", {"v": 1})
    first = store.get(("n",), "k")
    store.put(("n",), "k", {"v": 2})
    again = ChatmemStore(repo).get(("n",), "k")  # a fresh store reads the same data
    assert again is not None and again.value == {"v": 2}
    assert again.created_at == first.created_at and again.updated_at >= first.updated_at
    store.compact([("n",)])
    assert ChatmemStore(repo).get(("n",), "k") == again
    assert len(repo.find_by_conversation_id('langgraph-store:["n"]')) == 1


def test_store_async_and_concurrent_puts(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    from chatmem.integrations.langgraph_store import ChatmemStore

    async def many() -> set[str]:
        twin = await shared.twin_of(backend, repo)
        try:
            store = ChatmemStore(repo, async_repository=twin)
            await asyncio.gather(*(store.aput(("c",), f"k{i}", {"i": i}) for i in range(20)))
            return {i.key for i in await store.asearch(("c",), limit=100)}
        finally:
            await shared.close_twin(twin)

    want = {f"k{i}" for i in range(20)}
    assert asyncio.run(many()) == want
    assert {i.key for i in ChatmemStore(repo).search(("c",), limit=100)} == want  # the same data
