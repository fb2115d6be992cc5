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

from chatmem.core import BaseChatMemoryRepository, InvalidArgumentError
from chatmem_core.tests import test_adapters as shared

pytest.importorskip("langgraph.checkpoint.conformance", reason="extra: langgraph")

from langgraph.checkpoint.conformance import checkpointer_test, validate

from chatmem.core.integrations.langgraph import ChatmemSaver

pytest_generate_tests = shared.pytest_generate_tests
backend, make_repo, repo = shared.backend, shared.make_repo, shared.repo


def test_langgraph_conformance_required_and_optional(
    repo: BaseChatMemoryRepository, store_name: str
) -> None:
    @checkpointer_test(name=f"ChatmemSaver[{store_name}]")
    async def factory() -> AsyncIterator[ChatmemSaver]:
        yield ChatmemSaver(repo)

    report = asyncio.run(validate(factory))
    failures = {
        cap: [f"{f}" for f in result.failures]
        for cap, result in report.results.items()
        if result.passed is not True
    }
    assert failures == {}, report.to_dict()
    assert all(r.tests_passed > 0 for r in report.results.values())  # every suite ran
    assert report.passed_all_base() and report.passed_all()


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


# == BaseStore: the same operations on LangGraph's InMemoryStore and on ours =================
def _ops_scenario(store: Any) -> list[Any]:
    seen: list[Any] = []
    store.put(("users", "u1", "memories"), "m1", {"text": "likes tea", "n": 1})
    store.put(("users", "u1", "memories"), "m2", {"text": "lives in Rome", "n": 5})
    store.put(("users", "u2", "memories"), "m1", {"text": "likes coffee", "n": 3})
    store.put(("users", "u1", "prefs"), "theme", {"dark": True})
    store.put(("users", "u1", "memories"), "m1", {"text": "likes green tea", "n": 2})
    store.put(("docs",), "d1", {"kind": "x"})
    got = store.get(("users", "u1", "memories"), "m1")
    seen.append((got.value, got.key, got.namespace))
    seen.append(store.get(("users", "u1", "memories"), "nope"))
    memories: Any = ("users", "u1", "memories")  # InMemoryStore's $gte fails on a missing field
    for prefix, kwargs in (
        (("users",), {}),
        (memories, {"filter": {"n": {"$gte": 2}}}),
        (("users",), {"filter": {"text": "likes coffee"}}),
        (("users",), {"query": "tea"}),
    ):
        # the order across namespaces is each store's own (ours: by namespace, then put order)
        items = store.search(prefix, **kwargs)
        seen.append(sorted((i.namespace, i.key, json.dumps(i.value)) for i in items))
    seen.append(store.list_namespaces())
    seen.append(store.list_namespaces(prefix=("users",), max_depth=2))
    seen.append(store.list_namespaces(suffix=("memories",)))
    seen.append(store.list_namespaces(prefix=("users", "*", "prefs")))
    seen.append(store.list_namespaces(limit=2, offset=1))
    store.delete(("users", "u1", "memories"), "m2")
    seen.append(store.get(("users", "u1", "memories"), "m2"))
    seen.append([i.key for i in store.search(("users", "u1"))])
    return seen


def test_store_behaves_as_langgraphs_in_memory_store(repo: BaseChatMemoryRepository) -> None:
    from langgraph.store.memory import InMemoryStore

    from chatmem.core.integrations.langgraph_store import ChatmemStore

    assert _ops_scenario(ChatmemStore(repo)) == _ops_scenario(InMemoryStore())


def test_store_search_pages_are_consistent(repo: BaseChatMemoryRepository) -> None:
    from chatmem.core.integrations.langgraph_store import ChatmemStore

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
    from chatmem.core.integrations.langgraph_store import ChatmemStore

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


def test_store_async_and_concurrent_puts(repo: BaseChatMemoryRepository) -> None:
    from chatmem.core.integrations.langgraph_store import ChatmemStore

    store = ChatmemStore(repo)

    async def many() -> None:
        await asyncio.gather(*(store.aput(("c",), f"k{i}", {"i": i}) for i in range(20)))

    asyncio.run(many())
    keys = {i.key for i in asyncio.run(store.asearch(("c",), limit=100))}
    assert keys == {f"k{i}" for i in range(20)}
