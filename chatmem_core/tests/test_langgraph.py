"""The LangGraph checkpointer against LangGraph's own conformance suite (PyPI
``langgraph-checkpoint-conformance``: the required suites put, put_writes, get_tuple, list,
delete_thread and the optional delete_for_runs, copy_thread, prune), on the in-memory
store, SQLite and the suite's ``--backend``; plus a real graph run and its mirrored chat."""

from __future__ import annotations

import asyncio
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
