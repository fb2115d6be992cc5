"""Strands Agents: ``ChatmemSessionRepository`` under Strands' own ``RepositorySessionManager``.

Every store test runs on the suite's ``--backend`` (the ``frameworks`` nox session: memory,
SQLite, PostgreSQL, Redis) through its harness: a real ``strands.Agent`` on a scripted model
(an implementation of Strands' ``Model`` interface, no network), two runs with a reload from
the store between them, the repository's semantics against Strands' own expectations, exact
round trips of every content block, typed errors before I/O, and concurrent writers.
Strands' own repository-manager tests run against it in the ``strands-sdk-tests`` session.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem_integrations.tests import test_adapters as shared
from chatmem_integrations.tests.page_examples import chatmem_show, run_page_example

pytest.importorskip("strands", reason="strands-agents not installed (extra: strands)")

from strands import Agent, tool
from strands.models import Model
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage, SessionType

from chatmem.integrations.strands import (
    AsyncChatmemSessionRepository,
    ChatmemSessionManager,
    ChatmemSessionRepository,
    messages_id,
)


class ScriptedModel(Model):
    """Strands' ``Model`` replaying scripted assistant messages as stream events."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.seen: list[list[dict[str, Any]]] = []

    def update_config(self, **model_config: Any) -> None:
        """Nothing to configure."""

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        self.seen.append(json.loads(json.dumps(messages, default=str)))
        reply = self.replies.pop(0)
        stop = "end_turn"
        yield {"messageStart": {"role": "assistant"}}
        for block in reply["content"]:
            if "text" in block:
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
                yield {"contentBlockStop": {}}
            if "toolUse" in block:
                stop = "tool_use"
                use = block["toolUse"]
                start = {"toolUse": {"name": use["name"], "toolUseId": use["toolUseId"]}}
                yield {"contentBlockStart": {"start": start}}
                delta = {"toolUse": {"input": json.dumps(use["input"])}}
                yield {"contentBlockDelta": {"delta": delta}}
                yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def call(use_id: str, a: int, b: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": use_id, "name": "add", "input": {"a": a, "b": b}}}],
    }


def say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"text": text}]}


@pytest.fixture
def repo(harness: Any, server: Any) -> Iterator[BaseChatMemoryRepository]:
    made: BaseChatMemoryRepository = harness.make_repository(server)
    yield made
    harness.cleanup(server, made)


def plain(messages: Any) -> Any:
    """Messages as JSON data without Strands' per-message bookkeeping (tracking ids)."""
    data = json.loads(json.dumps(messages, default=str))
    for m in data:
        m.pop("tracking_id", None)
        m.pop("metadata", None)
    return data


def test_two_runs_with_a_tool_resume_from_the_store(repo: BaseChatMemoryRepository) -> None:
    model = ScriptedModel([call("t1", 2, 3), say("5"), say("still 5")])
    first = Agent(model=model, tools=[add], session_manager=ChatmemSessionManager("s1", repo))
    first.state.set("k", {"n": 1})  # synced to the store after the run
    first("add 2 and 3")
    before = plain(first.messages)
    # a new manager and agent: everything comes back from the store
    second = Agent(model=model, tools=[add], session_manager=ChatmemSessionManager("s1", repo))
    assert plain(second.messages) == before
    assert second.state.get("k") == {"n": 1}
    second("and now?")
    assert plain(model.seen[-1])[: len(before)] == before
    stored = repo.find_by_conversation_id(messages_id("s1", second.agent_id))
    kinds = [type(m) for m in stored]
    assert kinds == [
        UserMessage,
        AssistantMessage,
        ToolResponseMessage,
        AssistantMessage,
        UserMessage,
        AssistantMessage,
    ]
    assert stored[0].text == "add 2 and 3"
    assert isinstance(stored[1], AssistantMessage)
    assert [(c.name, json.loads(c.arguments)) for c in stored[1].tool_calls] == [
        ("add", {"a": 2, "b": 3})
    ]
    assert isinstance(stored[2], ToolResponseMessage)
    assert [(r.id, r.name, r.response_data) for r in stored[2].responses] == [("t1", "add", "5")]
    assert stored[-1].text == "still 5"
    third = Agent(model=model, tools=[add], session_manager=ChatmemSessionManager("s1", repo))
    assert plain(third.messages) == plain(second.messages)


BLOCKS: list[dict[str, Any]] = [
    {"text": "plain"},
    {"text": "nul \x00 and \u2603"},
    {"image": {"format": "png", "source": {"bytes": b"\x89PNG\r\n\x1a\n\x00"}}},
    {"document": {"format": "txt", "name": "d", "source": {"bytes": b"doc"}}},
    {"video": {"format": "mp4", "source": {"bytes": b"vid"}}},
    {"toolUse": {"toolUseId": "u1", "name": "add", "input": {"a": 1, "nested": [1.5, None]}}},
    {"toolResult": {"toolUseId": "u1", "status": "success", "content": [{"text": "2"}]}},
    {"toolResult": {"toolUseId": "u1", "status": "error", "content": [{"json": {"x": 1}}]}},
    {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig"}}},
    {"reasoningContent": {"redactedContent": b"secret"}},
    {"cachePoint": {"type": "default"}},
    {"guardContent": {"text": {"text": "guard", "qualifiers": ["query"]}}},
    {"citationsContent": {"citations": [{"title": "t"}], "content": [{"text": "c"}]}},
]


def test_every_content_block_round_trips_exactly(repo: BaseChatMemoryRepository) -> None:
    sessions = ChatmemSessionRepository(repo)
    sessions.create_session(Session("rt", SessionType.AGENT))
    sessions.create_agent("rt", SessionAgent("a", {}, {}))
    originals = []
    for i, block in enumerate(BLOCKS):
        role = "assistant" if "toolUse" in block or "reasoningContent" in block else "user"
        message = {"role": role, "content": [block], "metadata": {"i": i}}
        sm = SessionMessage.from_message(message, i)  # type: ignore[arg-type]
        sessions.create_message("rt", "a", sm)
        originals.append(sm.to_dict())
    back = [m.to_dict() for m in sessions.list_messages("rt", "a")]
    assert json.dumps(back, sort_keys=True) == json.dumps(originals, sort_keys=True)
    assert sessions.read_message("rt", "a", 2) == SessionMessage.from_dict(originals[2])
    assert sessions.list_messages("rt", "a", limit=2, offset=3) == [
        SessionMessage.from_dict(d) for d in originals[3:5]
    ]


def test_repository_semantics_follow_strands(repo: BaseChatMemoryRepository) -> None:
    s = ChatmemSessionRepository(repo)
    assert s.read_session("x") is None
    with pytest.raises(SessionException):
        s.create_agent("x", SessionAgent("a", {}, {}))
    s.create_session(Session("x", SessionType.AGENT))
    with pytest.raises(SessionException, match="already exists"):
        s.create_session(Session("x", SessionType.AGENT))
    agent = SessionAgent("a", {"v": 1}, {})
    s.create_agent("x", agent)
    with pytest.raises(SessionException):
        s.create_agent("x", SessionAgent("a", {}, {}))
    later = SessionAgent("a", {"v": 2}, {}, created_at="2099-01-01T00:00:00+00:00")
    s.update_agent("x", later)
    got = s.read_agent("x", "a")
    assert got is not None and got.state == {"v": 2} and got.created_at == agent.created_at
    with pytest.raises(SessionException):
        s.update_agent("x", SessionAgent("nobody", {}, {}))
    m0 = SessionMessage({"role": "user", "content": [{"text": "hi"}]}, 0)
    s.create_message("x", "a", m0)
    with pytest.raises(SessionException, match="already exists"):
        s.create_message("x", "a", SessionMessage({"role": "user", "content": []}, 0))
    redacted = {"role": "user", "content": [{"text": "[redacted]"}]}
    s.update_message("x", "a", SessionMessage(m0.message, 0, redact_message=redacted))  # type: ignore[arg-type]
    got_m = s.read_message("x", "a", 0)
    assert got_m is not None and got_m.redact_message == redacted
    assert got_m.created_at == m0.created_at
    with pytest.raises(SessionException):
        s.update_message("x", "a", SessionMessage({"role": "user", "content": []}, 7))
    # ids decide the order, also when created out of order
    for i in (3, 1, 2):
        s.create_message(
            "x", "a", SessionMessage({"role": "user", "content": [{"text": str(i)}]}, i)
        )
    assert [m.message_id for m in s.list_messages("x", "a")] == [0, 1, 2, 3]
    s.update_message("x", "a", SessionMessage({"role": "user", "content": [{"text": "one"}]}, 1))
    assert [m.message["content"][0]["text"] for m in s.list_messages("x", "a")] == [
        "hi",
        "one",
        "2",
        "3",
    ]
    assert s.read_message("x", "a", 9) is None
    s.delete_session("x")
    assert s.read_session("x") is None and s.list_messages("x", "a") == []
    with pytest.raises(SessionException):
        s.delete_session("x")


class NoIO(InMemoryChatMemoryRepository):
    """A repository whose every store hook fails the test: nothing may reach it."""

    def _io(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("I/O attempted")

    _find = _find_last = _load_window = _save_all = _delete = _append = _edit_window = _io  # type: ignore[assignment]
    _find_ids_page = _io  # type: ignore[assignment]


def test_bad_arguments_are_typed_errors_before_io() -> None:
    s = ChatmemSessionRepository(NoIO())
    bad: list[Callable[[], Any]] = [
        lambda: s.read_session(""),
        lambda: s.read_session(None),  # type: ignore[arg-type]
        lambda: s.read_session(42),  # type: ignore[arg-type]
        lambda: s.create_session("s"),  # type: ignore[arg-type]
        lambda: s.read_agent("s", ""),
        lambda: s.create_agent("s", {"agent_id": "a"}),  # type: ignore[arg-type]
        lambda: s.read_message("s", "a", -1),
        lambda: s.read_message("s", "a", "1"),  # type: ignore[arg-type]
        lambda: s.list_messages("s", "a", limit=-1),
        lambda: s.list_messages("s", "a", offset=True),
        lambda: s.create_message("s", "a", SessionMessage({"role": "user", "content": []}, -2)),
        lambda: s.create_message(
            "s",
            "a",
            SessionMessage({"role": "user", "content": [{"x": object()}]}, 0),  # type: ignore[typeddict-unknown-key]
        ),
    ]
    for op in bad:
        with pytest.raises(InvalidArgumentError):
            op()
    with pytest.raises(InvalidArgumentError, match="sync"):
        ChatmemSessionRepository(object())  # type: ignore[arg-type]


def test_concurrent_writers_lose_nothing(repo: BaseChatMemoryRepository) -> None:
    s = ChatmemSessionRepository(repo)
    s.create_session(Session("c", SessionType.AGENT))
    for a in range(4):
        s.create_agent("c", SessionAgent(f"a{a}", {}, {}))
    errors: list[BaseException] = []

    def write(a: int) -> None:
        try:
            for i in range(6):
                sm = SessionMessage(
                    {"role": "user", "content": [{"text": f"{a}-{i}"}]}, a * 100 + i
                )
                s.create_message("c", "shared", sm)
                s.update_agent("c", SessionAgent(f"a{a}", {"i": i}, {}))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(a,)) for a in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    ids = [m.message_id for m in s.list_messages("c", "shared")]
    assert ids == sorted(a * 100 + i for a in range(4) for i in range(6))
    for a in range(4):
        got = s.read_agent("c", f"a{a}")
        assert got is not None and got.state == {"i": 5}


def test_the_async_twin_reads_what_the_sync_one_wrote(
    harness: Any, server: Any, repo: BaseChatMemoryRepository
) -> None:
    s = ChatmemSessionRepository(repo)
    s.create_session(Session("tw", SessionType.AGENT))
    s.create_agent("tw", SessionAgent("a", {}, {}))
    s.create_message("tw", "a", SessionMessage({"role": "user", "content": [{"text": "x"}]}, 0))

    async def main() -> None:
        twin = await shared.twin_of((harness, server), repo)
        try:
            a = AsyncChatmemSessionRepository(twin)
            assert await a.read_session("tw") == s.read_session("tw")
            await a.create_message(
                "tw", "a", SessionMessage({"role": "assistant", "content": [{"text": "y"}]}, 1)
            )
            assert await a.list_messages("tw", "a") == s.list_messages("tw", "a")
        finally:
            await shared.close_twin(twin)

    asyncio.run(main())
    assert [m.message_id for m in s.list_messages("tw", "a")] == [0, 1]


# == the docs page's example ===================================================================
def test_the_docs_example_runs(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The page's block runs and prints what the page says; ``chatmem show`` then prints the
    conversation it stored."""
    run_page_example(request, "strands.md", tmp_path)
    shown = chatmem_show("strands/m/strands-demo/default", "sqlite:///chat.db", tmp_path)
    assert "How many words is this?" in shown and "And this one?" in shown


# == a new process resumes the conversation ===================================================
RESUME = textwrap.dedent(
    """
    import json, sys
    from strands import Agent
    from chatmem.core import repository_from_url
    from chatmem.integrations.strands import ChatmemSessionManager
    from chatmem_integrations.tests.test_strands import ScriptedModel, add, plain, say

    repo = repository_from_url(sys.argv[1], **json.loads(sys.argv[2]))
    model = ScriptedModel([say("resumed")])
    manager = ChatmemSessionManager(sys.argv[3], repo)
    agent = Agent(model=model, tools=[add], session_manager=manager, callback_handler=None)
    restored = plain(agent.messages)
    agent(sys.argv[4])
    getattr(repo, "close", lambda: None)()
    print(json.dumps({"restored": restored, "sent": plain(model.seen[-1])}))
    """
)


def test_a_new_process_resumes_the_conversation(
    harness: Any, server: Any, repo: BaseChatMemoryRepository
) -> None:
    """A run with a tool call here; a new agent in another process (its own client of the
    store) is restored with the whole history and sends it on; ``chatmem show`` prints it."""
    spec = harness.connect_spec(server, repo)
    if spec is None:
        pytest.skip("an in-process store: no other process can reach its data")
    url, options = spec
    model = ScriptedModel([call("t1", 2, 3), say("5")])
    manager = ChatmemSessionManager("np", repo)
    first = Agent(model=model, tools=[add], session_manager=manager, callback_handler=None)
    first("add 2 and 3")
    before = plain(first.messages)
    done = subprocess.run(
        [sys.executable, "-c", RESUME, url, json.dumps(options), "np", "and now?"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["restored"] == before
    assert out["sent"][: len(before)] == before
    stored = repo.find_by_conversation_id(messages_id("np", first.agent_id))
    assert [m.text for m in stored if isinstance(m, UserMessage)] == ["add 2 and 3", "and now?"]
    assert len(stored) == 6 and stored[-1].text == "resumed"
    if not options:  # a URL alone reaches the same conversation
        shown = chatmem_show(messages_id("np", first.agent_id), url, Path(__file__).parents[2])
        assert "add 2 and 3" in shown and "resumed" in shown
