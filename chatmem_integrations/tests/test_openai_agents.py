"""The OpenAI Agents SDK's session on chatmem, driven by the SDK's own ``Runner``.

Agents run on ``Scripted`` (the SDK's ``Model`` interface, no network). Every repository test
runs on the in-memory repository, SQLite, and the suite's ``--backend`` (the ``integrations``
sessions: PostgreSQL, Redis) through the shared fixtures of ``test_adapters``; the session
runs on the backend's async twin of the same data.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import textwrap
import typing
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import typing_extensions

from chatmem.core import (
    AssistantMessage,
    AsyncInMemoryChatMemoryRepository,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.core.longterm import (
    AsyncInMemoryMemoryRecordRepository,
    AsyncLongTermMemory,
    InMemoryMemoryRecordRepository,
    LongTermMemory,
    RuleBasedExtractor,
)
from chatmem_integrations.tests import test_adapters as shared

pytest.importorskip(
    "agents", reason="openai-agents not installed (extra: openai-agents; it needs Python 3.10+)"
)

from agents import Agent, Model, ModelResponse, Runner, function_tool, set_tracing_disabled
from agents.items import TResponseInputItem
from agents.memory import Session, SessionSettings
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from chatmem.integrations._openai_agents_codec import NATURAL_TYPES, OTHER_TYPES, item_type
from chatmem.integrations.openai_agents import ChatmemSession, from_items, to_items

set_tracing_disabled(True)  # no trace export: the tests make no network call
pytest_generate_tests = shared.pytest_generate_tests
backend, make_repo, repo = shared.backend, shared.make_repo, shared.repo


def as_json(items: Any) -> str:
    return json.dumps(items, sort_keys=True)


# == the scripted model =======================================================================
def _text(item: Any) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [])


CALLS = itertools.count()


class Scripted(Model):
    """Calls ``add`` once per user prompt, then answers with what it has seen: the prompts and
    every tool result in its input (so a resumed run shows what it was given)."""

    def __init__(self, delay: float = 0.0, fail: bool = False) -> None:
        self.delay, self.fail = delay, fail

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        if self.fail:
            raise RuntimeError("model broke")
        if self.delay:
            await asyncio.sleep(self.delay)
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        last = items[-1]
        if last.get("role") == "user":
            n = sum(1 for i in items if i.get("type") == "function_call")
            call = ResponseFunctionToolCall(
                type="function_call",
                call_id=f"call-{n}-{next(CALLS)}",
                name="add",
                arguments=json.dumps({"a": n, "b": 1}),
                id=f"fc-{n}",
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        prompts = [_text(i) for i in items if i.get("role") == "user"]
        sums = [int(i["output"]) for i in items if i.get("type") == "function_call_output"]
        text = json.dumps({"prompts": prompts, "sums": sums})
        message = ResponseOutputMessage(
            id="msg",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run without streaming")


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def make_agent(model: Model | None = None) -> Agent[Any]:
    return Agent(
        name="adder", instructions="You add numbers.", model=model or Scripted(), tools=[add]
    )


def seen(output: Any) -> dict[str, Any]:
    return typing.cast(dict[str, Any], json.loads(str(output)))


def on_twin(
    backend: tuple[Any, Any],
    repo: BaseChatMemoryRepository,
    body: Callable[[Any], Awaitable[None]],
) -> None:
    """Run ``body(async_repository)`` on the backend's async twin of ``repo``'s data."""

    async def scenario() -> None:
        twin = await shared.twin_of(backend, repo)
        try:
            await body(twin)
        finally:
            await shared.close_twin(twin)

    asyncio.run(scenario())


# == the codec: every item kind of the installed release ========================================
MEMBERS = typing.get_args(TResponseInputItem)


# typing_extensions' readers: on Python 3.10, typing.get_type_hints keeps the SDK's
# ``Required[...]`` wrappers around field types
def _type_literal(cls: Any) -> str:
    hint = typing_extensions.get_type_hints(cls)["type"]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    while args and typing.get_origin(args[0]) is typing.Literal:
        args = list(typing.get_args(args[0]))
    return str(args[0])


def _sample(tp: Any, k: int, depth: int = 0) -> Any:
    """A JSON value of type ``tp`` generated from its definition: alternative ``k`` (modulo
    their number) at every union, every field of a TypedDict filled."""
    origin = typing_extensions.get_origin(tp)
    args = typing_extensions.get_args(tp)
    if origin is typing.Literal:
        return args[k % len(args)]
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        options = [a for a in args if a is not type(None)] or list(args)
        return _sample(options[k % len(options)], k, depth)
    if isinstance(tp, type) and typing_extensions.is_typeddict(tp):
        if depth > 5:
            return {}
        hints = typing_extensions.get_type_hints(tp)
        return {name: _sample(h, k, depth + 1) for name, h in hints.items()}
    if tp is str:
        return f"text {k} ✓"
    if tp is bool:
        return k % 2 == 0
    if tp is int:
        return k + 1
    if tp is float:
        return k + 0.5
    if tp in (object, Any) or origin in (dict, dict) or tp is dict:
        return {"any": [k, None, {"nested": "yes"}]}
    if args:  # Iterable, Sequence, List, SequenceNotStr: one element
        return [] if depth > 5 else [_sample(args[0], k, depth + 1)]
    return f"value {k}"


def generated_items() -> list[dict[str, Any]]:
    """Several items of every member of ``TResponseInputItem`` (the alternatives of each
    union in turn: every role, every content part, every action)."""
    out = []
    for cls in MEMBERS:
        for k in range(6):
            item = _sample(cls, k)
            if item not in out:
                out.append(item)
    return out


def test_every_item_kind_is_classified() -> None:
    kinds = {_type_literal(cls) for cls in MEMBERS}
    assert kinds - NATURAL_TYPES - OTHER_TYPES == set(), "a new item kind: classify it"
    assert (NATURAL_TYPES | OTHER_TYPES) - kinds == set(), "a kind the SDK no longer defines"


def test_every_item_kind_round_trips_exactly_in_the_codec() -> None:
    items = generated_items()
    assert {item_type(i) for i in items} == NATURAL_TYPES | OTHER_TYPES
    messages = from_items(items)
    assert len(messages) == len(items)
    assert as_json(to_items(messages)) == as_json(items)


def test_items_with_a_chatmem_equivalent_are_chatmem_messages() -> None:
    items: list[Any] = [
        {"role": "system", "content": "be brief"},
        {"role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "2"},
        {
            "type": "message",
            "role": "assistant",
            "id": "m1",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "two", "annotations": []},
                {"type": "refusal", "refusal": "no more"},
            ],
        },
        {"type": "reasoning", "id": "r1", "summary": [], "encrypted_content": "gAAAA=="},
        {"type": "web_search_call", "id": "ws", "status": "completed", "action": {}},
        {"type": "computer_call_output", "call_id": "cc", "output": {"type": "x"}},
        {"type": "a_kind_from_the_future", "payload": [1, 2.5, None, {"deep": True}]},
        {"no": "type at all"},
    ]
    ms = from_items(items)
    natural = [
        (type(m), m.text, getattr(m, "tool_calls", ()), getattr(m, "responses", ())) for m in ms
    ]
    assert natural == [
        (SystemMessage, "be brief", (), ()),
        (SystemMessage, "dev", (), ()),
        (UserMessage, "hi", (), ()),
        (AssistantMessage, None, (ToolCall(id="c1", name="add", arguments='{"a":1}'),), ()),
        (ToolResponseMessage, "", (), (ToolResponse(id="c1", name="add", response_data="2"),)),
        (AssistantMessage, "two\nno more", (), ()),
        (AssistantMessage, None, (), ()),
        (AssistantMessage, None, (), ()),
        (ToolResponseMessage, "", (), ()),
        (AssistantMessage, None, (), ()),
        (AssistantMessage, None, (), ()),
    ]
    assert as_json(to_items(ms)) == as_json(items)


def test_text_no_store_keeps_as_text_round_trips_as_json_text() -> None:
    items: list[Any] = [{"role": "user", "content": "nul \x00 and lone \ud800 surrogate"}]
    (m,) = from_items(items)
    assert "item_json" in m.metadata["openai_agents"]
    assert to_items([m]) == items


def test_pydantic_items_are_stored_as_the_sdk_dumps_them() -> None:
    call = ResponseFunctionToolCall(type="function_call", call_id="c", name="add", arguments="{}")
    assert to_items(from_items([call])) == [call.model_dump(mode="json", exclude_unset=True)]


def test_messages_written_by_others_are_read_in_the_sdks_idiom() -> None:
    ms = [
        SystemMessage("sys"),
        UserMessage("q"),
        AssistantMessage("calling", tool_calls=(ToolCall(id="c", name="add", arguments="{}"),)),
        ToolResponseMessage((ToolResponse(id="c", name="add", response_data="3"),)),
        AssistantMessage("3"),
    ]
    assert to_items(ms) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "calling"},
        {"type": "function_call", "call_id": "c", "name": "add", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "3"},
        {"role": "assistant", "content": "3"},
    ]


# == the session on every store ===============================================================
def test_the_session_is_the_sdks_session() -> None:
    session = ChatmemSession(AsyncInMemoryChatMemoryRepository(), "s")
    assert isinstance(session, Session)
    assert isinstance(session.turn(), Session)
    assert session.session_settings == SessionSettings()
    limited = ChatmemSession(
        AsyncInMemoryChatMemoryRepository(), "s", session_settings={"limit": 0}
    )
    assert limited.session_settings == SessionSettings(limit=0)


def test_every_item_kind_round_trips_through_the_store(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    items = generated_items()

    async def body(twin: Any) -> None:
        session = ChatmemSession(twin, "kinds")
        await session.add_items(items[:5])
        await session.add_items(items[5:])
        assert as_json(await session.get_items()) == as_json(items)
        assert as_json(await session.get_items(limit=7)) == as_json(items[-7:])
        assert as_json(await session.pop_item()) == as_json(items[-1])
        assert as_json(await session.get_items()) == as_json(items[:-1])
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None

    on_twin(backend, repo, body)
    assert repo.find_by_conversation_id("kinds") == []


def test_a_three_turn_run_with_tools_stores_every_item(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    async def body(twin: Any) -> None:
        session = ChatmemSession(twin, "agent")
        for prompt in ("one", "two", "three"):
            result = await Runner.run(make_agent(), prompt, session=session)
        assert seen(result.final_output) == {"prompts": ["one", "two", "three"], "sums": [1, 2, 3]}
        items = await session.get_items()
        assert [item_type(i) for i in items] == [
            "message",
            "function_call",
            "function_call_output",
            "message",
        ] * 3
        assert as_json(items) == as_json(result.to_input_list())

    on_twin(backend, repo, body)
    stored = repo.find_by_conversation_id("agent")
    assert [type(m).__name__ for m in stored[:4]] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
    ]
    assert stored[0].text == "one" and stored[3].text is not None
    assert isinstance(stored[2], ToolResponseMessage) and stored[2].responses[0].name == "add"


def test_a_failed_run(backend: tuple[Any, Any], repo: BaseChatMemoryRepository) -> None:
    """What the SDK stores when the model raises: its input, written before the model call
    (a plain session); a turn (``session.run``) stores nothing of the failed run."""

    async def body(twin: Any) -> None:
        session = ChatmemSession(twin, "fail")
        await Runner.run(make_agent(), "kept", session=session)
        before = await session.get_items()
        with pytest.raises(RuntimeError, match="model broke"):
            await Runner.run(make_agent(Scripted(fail=True)), "lost", session=session)
        assert await session.get_items() == [*before, {"role": "user", "content": "lost"}]
        await session.pop_item()
        with pytest.raises(RuntimeError, match="model broke"):
            await session.run(make_agent(Scripted(fail=True)), "lost")
        assert await session.get_items() == before
        result = await session.run(make_agent(), "next")
        assert seen(result.final_output)["prompts"] == ["kept", "next"]
        assert len(await session.get_items()) == 8

    on_twin(backend, repo, body)


def test_a_cancelled_turn_stores_nothing(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    async def body(twin: Any) -> None:
        session = ChatmemSession(twin, "cancel")
        task = asyncio.ensure_future(session.run(make_agent(Scripted(delay=5)), "lost"))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await session.get_items() == []

    on_twin(backend, repo, body)


def test_concurrent_runs_lose_nothing(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    """8 runs at once on one session: with turns (``session.run``) each run's items are
    stored contiguous and in order; on the plain session the SDK writes each run in several
    calls, which interleave, and still nothing is lost or reordered within a run."""

    async def body(twin: Any) -> None:
        session = ChatmemSession(twin, "turns")
        agent = make_agent(Scripted(delay=0.001))
        results = await asyncio.gather(*(session.run(agent, f"p{i}") for i in range(8)))
        items = await session.get_items()
        assert len(items) == 32
        for i, r in enumerate(results):
            own = r.to_input_list()[-4:]
            assert own[0] == {"role": "user", "content": f"p{i}"}
            assert any(items[k : k + 4] == own for k in range(0, 32, 4)), "split or lost"
        plain = ChatmemSession(twin, "plain")
        runs = await asyncio.gather(*(Runner.run(agent, f"q{i}", session=plain) for i in range(8)))
        stored = await plain.get_items()
        assert len(stored) == 32
        for r in runs:
            own = r.to_input_list()[-4:]
            at = [stored.index(i) for i in own]
            assert at == sorted(at), "a run's items out of order"

    on_twin(backend, repo, body)


def test_concurrent_pops_take_distinct_items(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    async def body(twin: Any) -> None:
        session = ChatmemSession(twin, "pops")
        items: list[Any] = [{"role": "user", "content": f"m{i}"} for i in range(20)]
        await session.add_items(items)
        popped = await asyncio.gather(*(session.pop_item() for _ in range(8)))
        got = sorted(_text(p) for p in popped if p is not None)
        assert got == sorted(f"m{i}" for i in range(12, 20))
        assert await session.get_items() == items[:12]

    on_twin(backend, repo, body)


def test_the_window_starts_at_a_user_message(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    async def body(twin: Any) -> None:
        session = ChatmemSession(twin, "window")
        for prompt in ("one", "two", "three"):
            await Runner.run(make_agent(), prompt, session=session)
        everything = await session.get_items()
        for n in range(1, 13):
            shown = await ChatmemSession(twin, "window", last=n).get_items()
            assert not shown or shown[0].get("role") == "user", (n, shown[:1])
            assert shown == everything[len(everything) - len(shown) :]
            assert len(shown) == (n // 4) * 4
        small = await ChatmemSession(twin, "window", max_tokens=25).get_items()
        assert small and small[0].get("role") == "user" and len(small) < 12
        exact = await ChatmemSession(
            twin, "window", last=3, session_settings=SessionSettings(limit=2)
        ).get_items()
        assert exact == everything[-2:]  # a limit is the SDK's exact count, not the window
        result = await Runner.run(
            make_agent(), "four", session=ChatmemSession(twin, "window", last=4)
        )
        assert seen(result.final_output)["prompts"] == ["three", "four"]

    on_twin(backend, repo, body)


# == long-term memory =========================================================================
PREFERENCE = "I prefer Python code examples over pseudocode."
REMEMBERED = "The user prefers Python code examples over pseudocode."


class Noting(Scripted):
    """``Scripted``, noting the system instructions of each model call."""

    def __init__(self) -> None:
        super().__init__()
        self.instructions: list[str | None] = []

    async def get_response(self, system_instructions: Any, *args: Any, **kw: Any) -> ModelResponse:
        self.instructions.append(system_instructions)
        return await super().get_response(system_instructions, *args, **kw)


def test_long_term_memories_reach_the_model_and_user_messages_are_observed(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    records = AsyncInMemoryMemoryRecordRepository()
    memory = AsyncLongTermMemory(records, agent_id="adder", extractor=RuleBasedExtractor())
    model = Noting()

    async def body(twin: Any) -> None:
        session = ChatmemSession(twin, "lt", long_term=memory, user_id="ana")
        with pytest.raises(RuntimeError, match="model broke"):
            await session.run(make_agent(Scripted(fail=True)), "I prefer tea over coffee.")
        await session.run(make_agent(model), PREFERENCE)
        assert await memory.flush(10)
        pending = (await records.find(user_id="ana", status="pending")).records
        assert [r.content for r in pending] == [REMEMBERED]  # the failed run's prompt is not
        assert model.instructions == ["You add numbers."] * 2
        await records.approve(pending[0].id, reviewer="rita")
        await session.run(make_agent(model), "Show me how to sort a list.")
        assert model.instructions[-1] is not None
        assert model.instructions[-1].startswith("You add numbers.\n\n")
        assert model.instructions[-1].endswith(f"- {REMEMBERED}")

        def dynamic(context: Any, agent: Any) -> str:
            return f"You are {agent.name}."

        plain = Agent(name="adder", instructions=dynamic, model=model, tools=[add])
        await Runner.run(session.with_memories(plain), "I live in Seoul.", session=session)
        assert model.instructions[-1] is not None
        assert model.instructions[-1].startswith("You are adder.\n\n")
        assert REMEMBERED in model.instructions[-1]
        assert await memory.flush(10)  # the plain session's add_items queued the prompt too
        found = await records.find(user_id="ana", status="pending")
        contents = {r.content for r in found.records}
        assert "The user lives in Seoul." in contents
        items = await session.get_items()
        assert not any(REMEMBERED in json.dumps(i) for i in items)
        off = ChatmemSession(twin, "lt")
        assert off.with_memories(plain) is plain
        await memory.close()

    on_twin(backend, repo, body)
    with pytest.raises(InvalidArgumentError) as info:
        sync_memory = LongTermMemory(InMemoryMemoryRecordRepository(), agent_id="adder")
        ChatmemSession(AsyncInMemoryChatMemoryRepository(), "c", long_term=sync_memory)  # type: ignore[arg-type]
    assert info.value.argument == "long_term"
    with pytest.raises(InvalidArgumentError) as info:
        ChatmemSession(AsyncInMemoryChatMemoryRepository(), "c", long_term=memory)
    assert info.value.argument == "user_id"
    with pytest.raises(InvalidArgumentError) as info:
        ChatmemSession(AsyncInMemoryChatMemoryRepository(), "c").with_memories("agent")  # type: ignore[arg-type]
    assert info.value.argument == "agent"


# == a new process resumes the conversation ===================================================
RESUME = textwrap.dedent(
    """
    import asyncio, json, sys
    from agents import Runner
    from chatmem.core import async_repository_from_url
    from chatmem.integrations.openai_agents import ChatmemSession
    from chatmem_integrations.tests.test_openai_agents import make_agent

    async def main():
        repo = await async_repository_from_url(sys.argv[1], **json.loads(sys.argv[2]))
        try:
            session = ChatmemSession(repo, sys.argv[3])
            result = await Runner.run(make_agent(), sys.argv[4], session=session)
        finally:
            close = getattr(repo, "close", None)
            if close is not None:
                await close()
        print(result.final_output)

    asyncio.run(main())
    """
)


def test_a_new_process_resumes_the_conversation(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    harness, server = backend
    spec = harness.connect_spec(server, repo)
    if spec is None:
        pytest.skip("an in-process store: no other process can reach its data")
    url, options = spec
    cid = "resume"

    async def first(twin: Any) -> None:
        session = ChatmemSession(twin, cid)
        for prompt in ("one", "two"):
            await Runner.run(make_agent(), prompt, session=session)

    on_twin(backend, repo, first)
    done = subprocess.run(
        [sys.executable, "-c", RESUME, url, json.dumps(options), cid, "three"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert seen(done.stdout) == {"prompts": ["one", "two", "three"], "sums": [1, 2, 3]}
    assert len(repo.find_by_conversation_id(cid)) == 12
    if not options:  # `chatmem show` reads the same conversation (a URL alone reaches it)
        show = subprocess.run(
            [sys.executable, "-m", "chatmem.core._cli", "show", cid, "--url", url],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert show.returncode == 0, show.stderr
        assert "three" in show.stdout and "add" in show.stdout


# == arguments ================================================================================
def test_arguments_are_checked_before_any_io() -> None:
    repo = AsyncInMemoryChatMemoryRepository()
    with pytest.raises(InvalidArgumentError) as info:
        ChatmemSession(InMemoryChatMemoryRepository(), "s")  # type: ignore[arg-type]
    assert info.value.argument == "repository"
    for kwargs, name in [
        ({"session_id": ""}, "conversation_id"),
        ({"last": 0}, "last"),
        ({"max_tokens": -1}, "max_tokens"),
        ({"count_tokens": 3}, "count_tokens"),
        ({"session_settings": 3}, "session_settings"),
        ({"session_settings": {"limitt": 2}}, "session_settings"),
    ]:
        args: dict[str, Any] = {"session_id": "s", **kwargs}
        with pytest.raises(InvalidArgumentError) as info:
            ChatmemSession(repo, **args)
        assert info.value.argument == name

    async def calls() -> None:
        session = ChatmemSession(repo, "s")
        for bad, name in [
            ("not a list", "items"),
            ([{"role": "user", "content": "ok"}, 3], "items[1]"),
            ([{"x": float("nan")}], "items[0]"),
            ([{"x": b"bytes"}], "items[0]"),
        ]:
            with pytest.raises(InvalidArgumentError) as info:
                await session.add_items(bad)  # type: ignore[arg-type]
            assert info.value.argument == name
        with pytest.raises(InvalidArgumentError) as info:
            await session.get_items(limit=-1)
        assert info.value.argument == "limit"
        with pytest.raises(InvalidArgumentError) as info:
            await session.run(make_agent(), "x", session=session)
        assert info.value.argument == "session"
        assert await session.get_items() == []

    asyncio.run(calls())
