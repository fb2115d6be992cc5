"""Microsoft Agent Framework: ``ChatmemHistoryProvider`` and ``ChatmemSessionStore``.

Every store test runs on the suite's ``--backend`` (the ``frameworks`` nox session: memory,
SQLite, PostgreSQL, Redis) on the harness's async twin: a real ``agent_framework.Agent`` on a
scripted chat client (the framework's ``BaseChatClient`` with its own function-invocation
layer, no network), two runs with a reload from the store between them, exact round trips of
every content type, the framework's replay rule, typed errors before I/O, and concurrent runs.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncInMemoryChatMemoryRepository,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import AsyncBaseChatMemoryRepository, BaseChatMemoryRepository
from chatmem.core.longterm import (
    AsyncInMemoryMemoryRecordRepository,
    AsyncLongTermMemory,
    InMemoryMemoryRecordRepository,
    LongTermMemory,
    MemoryStatus,
    RuleBasedExtractor,
)
from chatmem_integrations.tests import test_adapters as shared
from chatmem_integrations.tests.page_examples import chatmem_show, run_page_example

pytest.importorskip("agent_framework", reason="agent-framework-core not installed")

from agent_framework import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    InMemoryHistoryProvider,
    Message,
    tool,
)

from chatmem.integrations.agent_framework import (
    ChatmemHistoryProvider,
    ChatmemMemoryProvider,
    ChatmemSessionStore,
)

T = TypeVar("T")


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """The framework's chat client replaying scripted replies (its layer runs the tools)."""

    def __init__(self, replies: list[Message]) -> None:
        super().__init__()
        self.replies = list(replies)
        self.seen: list[list[dict[str, Any]]] = []
        self.options: list[str] = []

    async def _reply(self, messages: Sequence[Message], options: Any) -> ChatResponse:
        self.seen.append([m.to_dict() for m in messages])
        self.options.append(json.dumps(dict(options or {}), default=str))
        return ChatResponse(messages=[self.replies.pop(0)])

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> Any:
        assert not stream
        return self._reply(messages, options)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def call(call_id: str, a: int, b: int) -> Message:
    return Message(
        "assistant", [Content.from_function_call(call_id, "add", arguments={"a": a, "b": b})]
    )


@pytest.fixture
def on_store(harness: Any, server: Any) -> Iterator[Callable[..., Any]]:
    """``on_store(scenario)``: run ``scenario(async_repository)`` on the backend's async twin
    of one fresh store, on a fresh event loop."""
    made: list[BaseChatMemoryRepository] = []

    def run(scenario: Callable[[AsyncBaseChatMemoryRepository], Awaitable[T]]) -> T:
        repo: BaseChatMemoryRepository = harness.make_repository(server)
        made.append(repo)

        async def main() -> T:
            twin = await shared.twin_of((harness, server), repo)
            try:
                return await scenario(twin)
            finally:
                await shared.close_twin(twin)

        return asyncio.run(main())

    yield run
    for repo in made:
        harness.cleanup(server, repo)


def without_attribution(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as sent to the model, less the source tag the framework adds on loading."""
    for m in data:
        m.get("additional_properties", {}).pop("_attribution", None)
    return data


def test_two_runs_with_a_tool_resume_from_the_store(on_store: Callable[..., Any]) -> None:
    async def scenario(repo: AsyncBaseChatMemoryRepository) -> None:
        replies = [call("c1", 2, 3), Message("assistant", ["5"]), Message("assistant", ["ok"])]
        ours = ScriptedClient(replies)
        theirs = ScriptedClient(list(replies))
        memory = InMemoryHistoryProvider()
        first = Agent(client=ours, tools=[add], context_providers=[ChatmemHistoryProvider(repo)])
        twin = Agent(client=theirs, tools=[add], context_providers=[memory])
        session = AgentSession(session_id="s1")
        reference = AgentSession(session_id="s1")
        assert (await first.run("add 2 and 3", session=session)).text == "5"
        await twin.run("add 2 and 3", session=reference)
        # a new provider and agent: the history comes back from the store
        second = Agent(client=ours, tools=[add], context_providers=[ChatmemHistoryProvider(repo)])
        assert (await second.run("and now?", session=AgentSession(session_id="s1"))).text == "ok"
        await twin.run("and now?", session=reference)
        # the model saw what the framework's own in-memory provider gives it
        assert json.dumps(without_attribution(ours.seen[-1]), sort_keys=True) == json.dumps(
            without_attribution(theirs.seen[-1]), sort_keys=True
        )
        stored = await repo.find_by_conversation_id("s1")
        assert [type(m) for m in stored] == [
            UserMessage,
            AssistantMessage,
            ToolResponseMessage,
            AssistantMessage,
            UserMessage,
            AssistantMessage,
        ]
        assert isinstance(stored[1], AssistantMessage) and stored[1].tool_calls[0].name == "add"
        assert isinstance(stored[2], ToolResponseMessage)
        assert [(r.id, r.name, r.response_data) for r in stored[2].responses] == [
            ("c1", "add", "5")
        ]
        provider = ChatmemHistoryProvider(repo)
        back = [m.to_dict() for m in await provider.get_messages("s1")]
        kept = [m.to_dict() for m in reference.state[memory.source_id]["messages"]]
        assert json.dumps(back, sort_keys=True) == json.dumps(kept, sort_keys=True)

    on_store(scenario)


def every_content() -> dict[str, Content]:
    """One or more contents from each of the framework's ``Content.from_*`` constructors."""
    c = Content
    fc = c.from_function_call("f3", "add", arguments={"a": 3})
    return {
        "from_text": c.from_text("plain \x00 and \u2603", additional_properties={"k": 1}),
        "from_text_reasoning": c.from_text_reasoning(text="thinking", protected_data="sig"),
        "from_data": c.from_data(b"\x89PNG\x00", "image/png"),
        "from_uri": c.from_uri("https://example.com/a.png", media_type="image/png"),
        "from_function_call": c.from_function_call("f1", "add", arguments={"a": [1.5, None]}),
        "from_function_result": c.from_function_result("f1", result={"sum": 3}),
        "from_error": c.from_error(message="boom", error_code="E1"),
        "from_usage": c.from_usage({"input_token_count": 3, "output_token_count": 4}),
        "from_hosted_file": c.from_hosted_file("file-1", name="f.txt"),
        "from_hosted_vector_store": c.from_hosted_vector_store("vs-1"),
        "from_function_approval_request": c.from_function_approval_request("r1", fc),
        "from_function_approval_response": c.from_function_approval_response(True, "r1", fc),
        "from_code_interpreter_tool_call": c.from_code_interpreter_tool_call(call_id="k1"),
        "from_code_interpreter_tool_result": c.from_code_interpreter_tool_result(call_id="k1"),
        "from_computer_tool_call": c.from_computer_tool_call(
            id="p1", call_id="p1", actions=[{"type": "click", "x": 1, "y": 2}]
        ),
        "from_computer_tool_result": c.from_computer_tool_result(call_id="p1"),
        "from_image_generation_tool_call": c.from_image_generation_tool_call(),
        "from_image_generation_tool_result": c.from_image_generation_tool_result(),
        "from_mcp_server_tool_call": c.from_mcp_server_tool_call("m1", "lookup"),
        "from_mcp_server_tool_result": c.from_mcp_server_tool_result("m1"),
        "from_oauth_consent_request": c.from_oauth_consent_request("https://example.com/ok"),
        "from_search_tool_call": c.from_search_tool_call("s1", tool_name="web"),
        "from_search_tool_result": c.from_search_tool_result("s1", tool_name="web"),
        "from_shell_command_output": c.from_shell_command_output(),
        "from_shell_tool_call": c.from_shell_tool_call(),
        "from_shell_tool_result": c.from_shell_tool_result(),
    }


def test_every_content_constructor_is_covered() -> None:
    constructors = {n for n in dir(Content) if n.startswith("from_")} - {"from_dict"}
    assert constructors == set(every_content())


def test_every_content_type_round_trips_exactly(on_store: Callable[..., Any]) -> None:
    async def scenario(repo: AsyncBaseChatMemoryRepository) -> None:
        provider = ChatmemHistoryProvider(repo)
        messages = [
            Message(role, [content], message_id=f"{role}-{name}", author_name="bot")
            for name, content in every_content().items()
            for role in ("user", "assistant", "tool")
        ]
        messages += [Message("system", ["be brief"]), Message("custom-role", ["x"])]
        await provider.save_messages("rt", messages)
        back = await provider.get_messages("rt")
        assert json.dumps([m.to_dict() for m in back], sort_keys=True) == json.dumps(
            [m.to_dict() for m in messages], sort_keys=True
        )

    on_store(scenario)


def test_replayed_messages_are_stored_once(on_store: Callable[..., Any]) -> None:
    async def scenario(repo: AsyncBaseChatMemoryRepository) -> None:
        provider = ChatmemHistoryProvider(repo)
        turn = [Message("user", ["hi"], message_id="u1"), Message("assistant", ["yo"])]
        await provider.save_messages("r", turn)
        more = [Message("user", ["again"], message_id="u2")]
        await provider.save_messages("r", [*turn, *more])  # a full transcript replay
        await provider.save_messages("r", more)  # the last message handed over again
        assert [m.text for m in await provider.get_messages("r")] == ["hi", "yo", "again"]

    on_store(scenario)


def test_a_window_starts_at_a_user_message(on_store: Callable[..., Any]) -> None:
    async def scenario(repo: AsyncBaseChatMemoryRepository) -> None:
        full = ChatmemHistoryProvider(repo)
        await full.save_messages(
            "w",
            [
                Message("user", ["q1"]),
                call("c1", 1, 1),
                Message("tool", [Content.from_function_result("c1", result="2")]),
                Message("assistant", ["2"]),
                Message("user", ["q2"]),
                Message("assistant", ["a2"]),
            ],
        )
        windowed = ChatmemHistoryProvider(repo, last=3)
        assert [m.text for m in await windowed.get_messages("w")] == ["q2", "a2"]
        assert len(await full.get_messages("w")) == 6

    on_store(scenario)


def test_concurrent_runs_lose_nothing(on_store: Callable[..., Any]) -> None:
    async def scenario(repo: AsyncBaseChatMemoryRepository) -> None:
        async def run(k: int) -> None:
            client = ScriptedClient([Message("assistant", [f"a{k}-{i}"]) for i in range(3)])
            agent = Agent(client=client, context_providers=[ChatmemHistoryProvider(repo)])
            for i in range(3):
                await agent.run(
                    Message("user", [f"q{k}-{i}"], message_id=f"q{k}-{i}"),
                    session=AgentSession(session_id="c"),
                )

        await asyncio.gather(*(run(k) for k in range(8)))
        texts = [m.text for m in await repo.find_by_conversation_id("c")]
        assert sorted(texts) == sorted(
            [f"q{k}-{i}" for k in range(8) for i in range(3)]
            + [f"a{k}-{i}" for k in range(8) for i in range(3)]
        )

    on_store(scenario)


def test_the_session_store_round_trips_sessions(on_store: Callable[..., Any]) -> None:
    async def scenario(repo: AsyncBaseChatMemoryRepository) -> None:
        store = ChatmemSessionStore(repo)
        assert await store.get("a/b") is None
        session = AgentSession(session_id="a/b", service_session_id={"conv": "x"})
        session.state["provider"] = {"n": 1, "items": [1, "two", None]}
        await store.set("a/b", session)
        got = await store.get("a/b")
        assert got is not None and got.to_dict() == session.to_dict()
        session.state["provider"] = {"n": 2}
        await store.set("a/b", session)
        again = await store.get("a/b")
        assert again is not None and again.state == {"provider": {"n": 2}}
        await store.delete("a/b")
        assert await store.get("a/b") is None

    on_store(scenario)


class NoIO(AsyncInMemoryChatMemoryRepository):
    """A repository whose every store hook fails the test: nothing may reach it."""

    async def _io(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("I/O attempted")

    _find = _find_last = _load_window = _save_all = _delete = _append = _io  # type: ignore[assignment]
    _edit_window = _find_ids_page = _io  # type: ignore[assignment]


def test_bad_arguments_are_typed_errors_before_io() -> None:
    async def main() -> None:
        provider = ChatmemHistoryProvider(NoIO())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = ChatmemSessionStore(NoIO())
        bad: list[Callable[[], Awaitable[Any]]] = [
            lambda: provider.get_messages(None),
            lambda: provider.get_messages(""),
            lambda: provider.get_messages(42),  # type: ignore[arg-type]
            lambda: provider.save_messages("s", "hi"),  # type: ignore[arg-type]
            lambda: provider.save_messages("s", [{"role": "user"}]),  # type: ignore[list-item]
            lambda: provider.save_messages("s", [Message("user", [Content.from_text("x")]), None]),  # type: ignore[list-item]
            lambda: store.get(""),
            lambda: store.set("s", {"session_id": "s"}),  # type: ignore[arg-type]
            lambda: store.delete(None),  # type: ignore[arg-type]
        ]
        for op in bad:
            with pytest.raises(InvalidArgumentError):
                await op()

    asyncio.run(main())
    with pytest.raises(InvalidArgumentError, match="async"):
        ChatmemHistoryProvider(InMemoryChatMemoryRepository())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="last"):
        ChatmemHistoryProvider(NoIO(), last=0)


def test_the_memory_provider_injects_approved_memories_only() -> None:
    records = AsyncInMemoryMemoryRecordRepository()
    memory = AsyncLongTermMemory(records, agent_id="travel", extractor=RuleBasedExtractor())
    provider = ChatmemMemoryProvider(memory, user_id=lambda session: session.state["user"])
    client = ScriptedClient([Message("assistant", [f"r{i}"]) for i in range(3)])
    agent = Agent(client=client, context_providers=[provider])

    def seen_last() -> str:
        return json.dumps(client.seen[-1]) + client.options[-1]

    def session_of(sid: str) -> AgentSession:  # a new session each run: no history carried
        session = AgentSession(session_id=sid)
        session.state["user"] = "ada"
        return session

    async def main() -> None:
        await agent.run("I prefer window seats on long flights.", session=session_of("trip"))
        assert await memory.flush(30)
        (seats,) = (
            await records.find(agent_id="travel", user_id="ada", status=MemoryStatus.PENDING)
        ).records
        assert seats.conversation_id == "trip"
        await agent.run("Book me a flight.", session=session_of("t2"))
        assert "window seats" not in seen_last()  # pending: never injected
        await records.approve(seats.id, reviewer="test")
        await agent.run("And the return?", session=session_of("t3"))
        assert "window seats" in seen_last()
        await memory.close()

    asyncio.run(main())
    with pytest.raises(InvalidArgumentError, match="memory"):
        ChatmemMemoryProvider(records, user_id="ada")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="user_id"):
        ChatmemMemoryProvider(memory, user_id="")
    sync_memory = LongTermMemory(InMemoryMemoryRecordRepository(), agent_id="travel")
    with pytest.raises(InvalidArgumentError, match="memory"):
        ChatmemMemoryProvider(sync_memory, user_id="ada")  # type: ignore[arg-type]


# == the docs page's example ===================================================================
def test_the_docs_example_runs(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The page's block runs and prints what the page says; ``chatmem show`` then prints the
    conversation it stored."""
    run_page_example(request, "agent-framework.md", tmp_path)
    shown = chatmem_show("af-demo", "sqlite:///chat.db", tmp_path)
    assert "How many words is this?" in shown and "And this one?" in shown


# == a new process resumes the conversation ===================================================
RESUME = textwrap.dedent(
    """
    import asyncio, json, sys
    from agent_framework import Agent, AgentSession, Message
    from chatmem.core import async_repository_from_url
    from chatmem.integrations.agent_framework import ChatmemHistoryProvider
    from chatmem_integrations.tests.test_agent_framework import ScriptedClient, add

    async def main():
        repo = await async_repository_from_url(sys.argv[1], **json.loads(sys.argv[2]))
        try:
            client = ScriptedClient([Message("assistant", ["resumed"])])
            history = ChatmemHistoryProvider(repo)
            agent = Agent(client=client, tools=[add], context_providers=[history])
            result = await agent.run(sys.argv[4], session=AgentSession(session_id=sys.argv[3]))
        finally:
            close = getattr(repo, "close", None)
            if close is not None:
                await close()
        print(json.dumps({"text": result.text, "sent": client.seen[-1]}, default=str))

    asyncio.run(main())
    """
)


def test_a_new_process_resumes_the_conversation(harness: Any, server: Any) -> None:
    """A run with a tool call here; the next run in another process (its own client of the
    store) sees the whole history; ``chatmem show`` prints it."""
    repo: BaseChatMemoryRepository = harness.make_repository(server)
    try:
        spec = harness.connect_spec(server, repo)
        if spec is None:
            pytest.skip("an in-process store: no other process can reach its data")
        url, options = spec

        async def first() -> None:
            twin = await shared.twin_of((harness, server), repo)
            try:
                client = ScriptedClient([call("c1", 2, 3), Message("assistant", ["5"])])
                history = ChatmemHistoryProvider(twin)
                agent = Agent(client=client, tools=[add], context_providers=[history])
                session = AgentSession(session_id="np")
                assert (await agent.run("add 2 and 3", session=session)).text == "5"
            finally:
                await shared.close_twin(twin)

        asyncio.run(first())
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
        assert out["text"] == "resumed"
        sent = json.dumps(out["sent"])
        assert "add 2 and 3" in sent and '"c1"' in sent and "and now?" in sent
        stored = repo.find_by_conversation_id("np")
        assert [type(m) for m in stored] == [
            UserMessage,
            AssistantMessage,
            ToolResponseMessage,
            AssistantMessage,
            UserMessage,
            AssistantMessage,
        ]
        assert stored[-1].text == "resumed"
        if not options:  # a URL alone reaches the same conversation
            shown = chatmem_show("np", url, Path(__file__).parents[2])
            assert "add 2 and 3" in shown and "resumed" in shown
    finally:
        harness.cleanup(server, repo)
