"""Pydantic AI message history on chatmem, driven by Pydantic AI's own runner.

Agents run on ``FunctionModel`` (scripted, no network). Every repository test runs on the
in-memory repository, SQLite, and the suite's ``--backend`` (the ``integrations`` sessions:
PostgreSQL, Redis), through the shared fixtures of ``test_adapters``; async runs use the
backend's async twin of the same data.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import textwrap
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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
    repository_from_url,
)
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.core.longterm import (
    AsyncInMemoryMemoryRecordRepository,
    AsyncLongTermMemory,
    InMemoryMemoryRecordRepository,
    LongTermMemory,
    MemoryCandidate,
    RuleBasedExtractor,
)
from chatmem_integrations.tests import test_adapters as shared

pytest.importorskip(
    "pydantic_ai",
    reason="pydantic-ai not installed (extra: pydantic-ai; Pydantic AI needs Python 3.11+)",
)

import pydantic
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel

from chatmem.integrations.pydantic_ai import (
    ChatmemMessageHistory,
    from_pydantic_ai,
    to_pydantic_ai,
)

pytest_generate_tests = shared.pytest_generate_tests
backend, make_repo, repo = shared.backend, shared.make_repo, shared.repo

ADAPTER = pm.ModelMessagesTypeAdapter


def dump(messages: list[pm.ModelMessage]) -> bytes:
    return ADAPTER.dump_json(messages)


# == the scripted agent =======================================================================
def scripted(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
    """Calls ``add`` once per user prompt, then answers with what it has seen: the prompts and
    every tool result in its history (so a resumed run shows what it was given)."""
    last = messages[-1]
    assert isinstance(last, pm.ModelRequest)
    if any(isinstance(p, pm.UserPromptPart) for p in last.parts):
        n = sum(isinstance(m, pm.ModelResponse) for m in messages)
        return pm.ModelResponse(
            parts=[pm.ToolCallPart("add", {"a": n, "b": 1}, tool_call_id=f"call-{n}")]
        )
    prompts = [p.content for m in messages for p in m.parts if isinstance(p, pm.UserPromptPart)]
    results = [p.content for m in messages for p in m.parts if isinstance(p, pm.ToolReturnPart)]
    return pm.ModelResponse(parts=[pm.TextPart(json.dumps({"prompts": prompts, "sums": results}))])


def make_agent(model: Callable[..., Any] = scripted) -> Agent[None, str]:
    agent = Agent(FunctionModel(model), system_prompt="You add numbers.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    return agent


def seen(output: str) -> dict[str, Any]:
    return typing.cast(dict[str, Any], json.loads(output))


# == the codec: every part kind of the installed release ======================================
def _members(union_alias: Any) -> list[tuple[str, type[Any]]]:
    """(tag, class) of each member of a Pydantic AI part union, read from its definition."""
    out = []
    for member in typing.get_args(typing.get_args(union_alias)[0]):
        cls, *meta = typing.get_args(member)
        out.append((next(m.tag for m in meta if isinstance(m, pydantic.Tag)), cls))
    return out


def _sample(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0, side: str = "") -> Any:
    """A minimal JSON value for ``schema`` (required properties only, first alternatives; a
    choice of speaker is the side's own, as a message checks)."""
    if "$ref" in schema:
        return _sample(defs[schema["$ref"].split("/")[-1]], defs, depth, side)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return (
            "assistant"
            if side == "response" and "assistant" in schema["enum"]
            else schema["enum"][0]
        )
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return _sample(options[0], defs, depth, side)
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: _sample(props[k], defs, depth + 1, side) for k in schema.get("required", [])}
    if kind == "array":
        items = schema.get("items")
        return [] if not items or depth > 6 else [_sample(items, defs, depth + 1, side)]
    if kind == "string":  # valid text and valid base64 (bytes fields)
        return "2026-01-01T00:00:00Z" if schema.get("format") == "date-time" else "aGk="
    if kind == "integer":
        return max(1, int(schema.get("minimum", 1)))
    return 1.5 if kind == "number" else True if kind == "boolean" else None


if hasattr(pm, "DataCapabilityPart"):  # Pydantic AI 2.78+

    @dataclasses.dataclass(kw_only=True)
    class ProgressPart(pm.DataCapabilityPart[str], namespace="chatmem_tests", tag="progress"):
        """A capability part kind as an application defines one."""


def generated(cls: type[Any], side: str) -> Any:
    """An instance of a part class, generated from its own type definition (a capability
    part, whose kinds are the application's, as the application builds one)."""
    if getattr(cls, "__name__", "") == "CapabilityPart":
        return ProgressPart(content="3 of 5 steps done.", source=pm.OperatorSource())
    adapter = pydantic.TypeAdapter(cls)
    schema = adapter.json_schema()
    return adapter.validate_json(json.dumps(_sample(schema, schema.get("$defs", {}), 0, side)))


REQUEST_KINDS = _members(pm.ModelRequestPart)
RESPONSE_KINDS = _members(pm.ModelResponsePart)

# What each kind becomes in chatmem; every other kind is carried only in the original (a kind
# of a newer release lands in neither set and fails test_every_part_kind_is_classified).
NATURAL = {
    "system-prompt": SystemMessage,
    "user-prompt": UserMessage,
    "tool-return": ToolResponseMessage,
    "legacy-retry-tool-return": ToolResponseMessage,
    "text": AssistantMessage,
    "tool-call": AssistantMessage,
    # Pydantic AI's own tools (subclasses of the tool call and return parts)
    "tool-search-call": AssistantMessage,
    "tool-search-return": ToolResponseMessage,
    "capability-load-call": AssistantMessage,
    "capability-load-return": ToolResponseMessage,
}
PASSTHROUGH = {
    "speech",
    "retry-prompt",
    "retry-feedback",
    "legacy-retry-feedback",
    "tool-availability-delta",
    "capability-load-delta",
    "model-settings-delta",
    "instruction-delta",
    "instruction-baseline",
    "compaction",
    "capability",  # a capability's own content (2.78): its kind and rendering are Pydantic AI's
    "builtin-tool-search-call",
    "builtin-tool-call",
    "builtin-tool-search-return",
    "builtin-tool-return",
    "thinking",
    "file",
}
# Deprecated: Pydantic AI itself upgrades it when reading, so its exact JSON is Pydantic AI's
# own round trip (what a stored history of it reads back as without chatmem too).
UPGRADED_ON_READ = {"retry-prompt"}


def test_every_part_kind_is_classified() -> None:
    tags = {t for t, _ in REQUEST_KINDS + RESPONSE_KINDS}
    assert tags - NATURAL.keys() - PASSTHROUGH == set(), "a new part kind: map it or list it"


def _message_of(side: str, part: Any) -> pm.ModelMessage:
    return pm.ModelRequest(parts=[part]) if side == "request" else pm.ModelResponse(parts=[part])


@pytest.mark.filterwarnings("ignore:`RetryPromptPart` is deprecated")
@pytest.mark.parametrize(
    ("side", "tag", "cls"),
    [("request", t, c) for t, c in REQUEST_KINDS] + [("response", t, c) for t, c in RESPONSE_KINDS],
    ids=[f"request-{t}" for t, _ in REQUEST_KINDS] + [f"response-{t}" for t, _ in RESPONSE_KINDS],
)
def test_every_part_kind_round_trips_exactly(side: str, tag: str, cls: type[Any]) -> None:
    original = [_message_of(side, generated(cls, side))]
    stored = from_pydantic_ai(original)
    expected = (
        dump(ADAPTER.validate_json(dump(original))) if tag in UPGRADED_ON_READ else dump(original)
    )
    assert dump(to_pydantic_ai(stored)) == expected
    repo = InMemoryChatMemoryRepository()  # through a store's wire format too
    repo.save_all("c", stored)
    assert dump(to_pydantic_ai(repo.find_by_conversation_id("c"))) == expected
    if tag in NATURAL:
        assert isinstance(stored[0], NATURAL[tag])


def rich_history() -> list[pm.ModelMessage]:
    """Natural kinds with everything they can hold: multimodal prompts, dict arguments and
    results, several parts in one message."""
    return [
        pm.ModelRequest(
            parts=[
                pm.SystemPromptPart("sys", dynamic_ref="ref"),
                pm.UserPromptPart(
                    [
                        "look",
                        pm.BinaryContent(b"\x89PNG\x00", media_type="image/png"),
                        pm.ImageUrl("https://example.com/a.png"),
                    ]
                ),
            ],
            instructions="be brief",
        ),
        pm.ModelResponse(
            parts=[
                pm.ThinkingPart("hmm", signature="sig"),
                pm.TextPart("calling "),
                pm.TextPart("two"),
                pm.ToolCallPart("f", {"x": [1, 2.5, None]}, tool_call_id="a"),
                pm.ToolCallPart("g", '{"y": "ü"}', tool_call_id="b"),
            ],
            usage=pm.RequestUsage(input_tokens=3, output_tokens=4),
            model_name="m",
            provider_details={"k": 1},
        ),
        pm.ModelRequest(
            parts=[
                pm.ToolReturnPart("f", {"sum": 3, "ok": True}, tool_call_id="a", metadata={"m": 1}),
                pm.ToolReturnPart("g", ["x", 1, {"y": None}], tool_call_id="b"),
                pm.UserPromptPart("and then?"),
            ]
        ),
        pm.ModelResponse(parts=[]),
    ]


def test_rich_history_round_trips_and_reads_naturally() -> None:
    history = rich_history()
    stored = from_pydantic_ai(history)
    assert dump(to_pydantic_ai(stored)) == dump(history)
    kinds = [type(m).__name__ for m in stored]
    assert kinds == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    assert stored[1].text == "look"
    assert stored[2] == AssistantMessage(
        text="calling two",
        tool_calls=(
            ToolCall(id="a", name="f", arguments='{"x":[1,2.5,null]}'),
            ToolCall(id="b", name="g", arguments='{"y":"ü"}'),
        ),
        metadata=stored[2].metadata,
    )
    assert [r.id for r in stored[3].responses] == ["a", "b"]  # type: ignore[attr-defined]


def test_bytes_read_back_as_pydantic_ais_own_json_gives_them() -> None:
    # Pydantic AI's JSON holds raw bytes in an untyped field as base64 text, and so do we
    history = [pm.ModelRequest(parts=[pm.ToolReturnPart("g", b"\x00\xff", tool_call_id="b")])]
    own = dump(ADAPTER.validate_json(dump(history)))
    assert dump(to_pydantic_ai(from_pydantic_ai(history))) == own


def _with_slot(m: Any, slot: dict[str, Any]) -> Any:
    return dataclasses.replace(m, metadata={"pydantic_ai": slot})


def test_a_part_kind_of_a_newer_release_is_kept_and_read_naturally() -> None:
    stored = from_pydantic_ai(
        [
            pm.ModelRequest(parts=[pm.UserPromptPart("q")]),
            pm.ModelResponse(parts=[pm.TextPart("a")]),
        ]
    )
    slot = json.loads(json.dumps(stored[1].metadata["pydantic_ai"]))
    slot["message"]["parts"].append({"part_kind": "from-the-future", "payload": [1, 2]})
    stored[1] = _with_slot(stored[1], slot)
    repo = InMemoryChatMemoryRepository()
    repo.save_all("c", stored)
    history = ChatmemMessageHistory(repo, "c")
    loaded = history.load()
    assert [type(p).__name__ for m in loaded for p in m.parts] == ["UserPromptPart", "TextPart"]
    result = history.run_sync(make_agent(), "next")  # the agent runs on it
    assert seen(result.output)["prompts"] == ["q", "next"]
    after = repo.find_by_conversation_id("c")
    assert after[:2] == stored  # the original stays stored, for a release that reads it


def test_a_head_reads_its_original_when_a_follower_is_gone() -> None:
    history = rich_history()[:1]  # [system prompt, user prompt]: a head and a follower
    stored = from_pydantic_ai(history)
    assert len(stored) == 2
    assert dump(to_pydantic_ai(stored[:1])) == dump(history)
    assert to_pydantic_ai(stored[1:]) == []  # an orphaned follower is no message


def test_pydantic_ais_conversation_id_is_chatmems(repo: BaseChatMemoryRepository) -> None:
    result = ChatmemMessageHistory(repo, "named").run_sync(make_agent(), "x")
    assert {m.conversation_id for m in result.new_messages()} == {"named"}
    with pytest.raises(InvalidArgumentError, match="conversation"):
        ChatmemMessageHistory(repo, "named").run_sync(make_agent(), "x", conversation=None)


def test_messages_written_by_others_are_read_naturally() -> None:
    foreign = [
        SystemMessage(text="s"),
        UserMessage(text="u"),
        AssistantMessage(tool_calls=(ToolCall(id="1", name="add", arguments='{"a":1}'),)),
        ToolResponseMessage(responses=(ToolResponse(id="1", name="add", response_data="2"),)),
        AssistantMessage(text="two"),
    ]
    got = to_pydantic_ai(foreign)
    assert [type(p).__name__ for m in got for p in m.parts] == [
        "SystemPromptPart",
        "UserPromptPart",
        "ToolCallPart",
        "ToolReturnPart",
        "TextPart",
    ]
    # and an agent runs on them
    repo = InMemoryChatMemoryRepository()
    repo.save_all("c", foreign)
    out = seen(ChatmemMessageHistory(repo, "c").run_sync(make_agent(), "next").output)
    assert out == {"prompts": ["u", "next"], "sums": ["2", 3]}


# == runs on every backend ====================================================================
def _stored(repo: BaseChatMemoryRepository, cid: str) -> list[pm.ModelMessage]:
    return to_pydantic_ai(repo.find_by_conversation_id(cid))


def test_run_sync_stores_each_turn_and_resumes(repo: BaseChatMemoryRepository) -> None:
    history = ChatmemMessageHistory(repo, "sync")
    agent = make_agent()
    all_messages: list[pm.ModelMessage] = []
    for i, prompt in enumerate(["one", "two", "three"]):
        result = history.run_sync(agent, prompt)
        all_messages = result.all_messages()
        assert seen(result.output)["sums"] == [k + 1 for k in range(0, 2 * i + 1, 2)]
    assert dump(_stored(repo, "sync")) == dump(all_messages)
    kinds = [type(m).__name__ for m in repo.find_by_conversation_id("sync")]
    assert kinds[:5] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
    ]


def test_async_run_on_the_async_twin(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    async def scenario() -> None:
        twin = await shared.twin_of(backend, repo)
        try:
            history = ChatmemMessageHistory(twin, "async")
            await history.run(make_agent(), "one")
            result = await history.run(make_agent(), "two")
            assert seen(result.output)["prompts"] == ["one", "two"]
            assert dump(await history.aload()) == dump(result.all_messages())
        finally:
            await shared.close_twin(twin)

    asyncio.run(scenario())


def failing_tool_agent() -> Agent[None, str]:
    agent = Agent(FunctionModel(scripted))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        raise RuntimeError("tool broke")

    return agent


def broken_model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
    raise RuntimeError("model broke")


def test_a_failed_run_stores_nothing(repo: BaseChatMemoryRepository) -> None:
    history = ChatmemMessageHistory(repo, "fail")
    history.run_sync(make_agent(), "kept")
    before = repo.find_by_conversation_id("fail")
    with pytest.raises(RuntimeError, match="tool broke"):
        history.run_sync(failing_tool_agent(), "lost")
    with pytest.raises(RuntimeError, match="model broke"):
        history.run_sync(make_agent(broken_model), "lost")
    with pytest.raises(RuntimeError, match="inside"), history.turn() as turn:
        turn.add([pm.ModelRequest(parts=[pm.UserPromptPart("lost")])])
        raise RuntimeError("inside")
    assert not turn.stored
    assert repo.find_by_conversation_id("fail") == before


def test_a_cancelled_run_stores_nothing(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    async def scenario() -> None:
        twin = await shared.twin_of(backend, repo)
        try:
            history = ChatmemMessageHistory(twin, "cancel")
            await history.run(make_agent(), "kept")
            before = await twin.find_by_conversation_id("cancel")
            started = asyncio.Event()
            agent = Agent(FunctionModel(scripted))

            @agent.tool_plain
            async def add(a: int, b: int) -> int:
                started.set()
                await asyncio.sleep(3600)
                return a + b

            task = asyncio.create_task(history.run(agent, "lost"))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await twin.find_by_conversation_id("cancel") == before
        finally:
            await shared.close_twin(twin)

    asyncio.run(scenario())


def _pairs_intact(history: list[pm.ModelMessage]) -> None:
    calls = {
        p.tool_call_id
        for m in history
        if isinstance(m, pm.ModelResponse)
        for p in m.parts
        if isinstance(p, pm.ToolCallPart)
    }
    returns = {
        p.tool_call_id
        for m in history
        if isinstance(m, pm.ModelRequest)
        for p in m.parts
        if isinstance(p, pm.ToolReturnPart)
    }
    assert calls == returns
    if history:
        first = history[0]
        assert isinstance(first, pm.ModelRequest)
        assert any(isinstance(p, pm.UserPromptPart) for p in first.parts)


def test_bounded_history_never_splits_a_tool_call_from_its_return(
    repo: BaseChatMemoryRepository,
) -> None:
    agent = make_agent()
    full = ChatmemMessageHistory(repo, "bounded")
    for prompt in ["one", "two", "three", "four"]:
        full.run_sync(agent, prompt)
    stored = repo.find_by_conversation_id("bounded")
    assert len(stored) == 1 + 4 * 4  # the system prompt, then four chatmem messages a turn
    shown = set()
    for n in range(1, len(stored) + 2):
        view = ChatmemMessageHistory(repo, "bounded", last=n).load()
        _pairs_intact(view)
        shown.add(len(view))
        assert len(view) % 4 == 0  # whole turns only
    assert shown == {0, 4, 8, 12, 16}
    for tokens in (1, 20, 60, 120, 10_000):
        view = ChatmemMessageHistory(repo, "bounded", max_tokens=tokens).load()
        _pairs_intact(view)
        if view:  # the token window keeps the system prompt, in front of the first request
            assert isinstance(view[0].parts[0], pm.SystemPromptPart)
    # the next run on a bounded history works, and the store still keeps everything
    result = ChatmemMessageHistory(repo, "bounded", last=6).run_sync(agent, "five")
    assert seen(result.output)["prompts"] == ["four", "five"]
    assert len(repo.find_by_conversation_id("bounded")) == len(stored) + 4


def test_bounded_read_inside_a_multi_message_group() -> None:
    repo = InMemoryChatMemoryRepository()
    history = [*rich_history()[:3], pm.ModelResponse(parts=[pm.TextPart("done")])]
    repo.save_all("c", from_pydantic_ai(history))
    # the last request is [tool returns, user prompt]: two chatmem messages, and it answers
    # calls made before it, so no cut can start there
    for n in range(1, 8):
        _pairs_intact(ChatmemMessageHistory(repo, "c", last=n).load())
    assert ChatmemMessageHistory(repo, "c", last=3).load() == []


def test_concurrent_runs_lose_nothing_and_stay_contiguous(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    async def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        await asyncio.sleep(0.001)
        return scripted(messages, info)

    async def scenario() -> None:
        twin = await shared.twin_of(backend, repo)
        try:
            history = ChatmemMessageHistory(twin, "concurrent")
            agent = make_agent(model)
            results = await asyncio.gather(*(history.run(agent, f"p{i}") for i in range(8)))
            stored = await history.aload()
            assert len(stored) == sum(len(r.new_messages()) for r in results)
            runs = [m.run_id for m in stored]
            for r in results:
                rid = r.new_messages()[0].run_id
                at = [i for i, x in enumerate(runs) if x == rid]
                assert at == list(range(at[0], at[0] + len(r.new_messages())))
                assert dump(stored[at[0] : at[-1] + 1]) == dump(r.new_messages())
        finally:
            await shared.close_twin(twin)

    asyncio.run(scenario())


# == a new process resumes the conversation ===================================================
RESUME = textwrap.dedent(
    """
    import json, sys
    from chatmem.core import repository_from_url
    from chatmem.integrations.pydantic_ai import ChatmemMessageHistory
    from chatmem_integrations.tests.test_pydantic_ai import make_agent

    repo = repository_from_url(sys.argv[1])
    result = ChatmemMessageHistory(repo, "resume").run_sync(make_agent(), sys.argv[2])
    print(result.output)
    """
)


def test_a_new_process_resumes_the_conversation(tmp_path: Path) -> None:
    pytest.importorskip("sqlalchemy", reason="SQLAlchemy not installed (extra: sqlite)")
    url = f"sqlite:///{tmp_path / 'resume.db'}"
    repo = repository_from_url(url)
    agent = make_agent()
    history = ChatmemMessageHistory(repo, "resume")
    history.run_sync(agent, "one")
    history.run_sync(agent, "two")
    done = subprocess.run(
        [sys.executable, "-c", RESUME, url, "three"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert seen(done.stdout) == {"prompts": ["one", "two", "three"], "sums": [1, 3, 5]}
    stored = _stored(repo, "resume")
    assert len(stored) == 12
    _pairs_intact(stored)
    result = history.run_sync(agent, "four")  # and this process goes on from there
    assert seen(result.output)["sums"] == [1, 3, 5, 7]


# == arguments ================================================================================
def test_arguments_are_checked_before_any_io() -> None:
    sync_repo, async_repo = InMemoryChatMemoryRepository(), AsyncInMemoryChatMemoryRepository()
    with pytest.raises(InvalidArgumentError, match="conversation_id"):
        ChatmemMessageHistory(sync_repo, "")
    with pytest.raises(InvalidArgumentError, match="last"):
        ChatmemMessageHistory(sync_repo, "c", last=0)
    with pytest.raises(InvalidArgumentError, match="max_tokens"):
        ChatmemMessageHistory(sync_repo, "c", max_tokens=-1)
    with pytest.raises(InvalidArgumentError, match="repository"):
        ChatmemMessageHistory(object(), "c")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"repository.*run_sync"):
        asyncio.run(ChatmemMessageHistory(sync_repo, "c").run(make_agent(), "x"))
    with pytest.raises(InvalidArgumentError, match=r"repository.*await run"):
        ChatmemMessageHistory(async_repo, "c").run_sync(make_agent(), "x")
    with pytest.raises(InvalidArgumentError, match=r"async with history\.turn"):
        ChatmemMessageHistory(async_repo, "c").load()
    with pytest.raises(InvalidArgumentError, match=r"`with history\.turn"):
        asyncio.run(ChatmemMessageHistory(sync_repo, "c").aload())
    with pytest.raises(InvalidArgumentError, match="message_history"):
        ChatmemMessageHistory(sync_repo, "c").run_sync(make_agent(), "x", message_history=[])
    with pytest.raises(InvalidArgumentError, match="messages\\[0\\]"):
        from_pydantic_ai(["not a message"])  # type: ignore[list-item]
    assert sync_repo.find_conversation_ids() == []


# == long-term memory =========================================================================
PREFERENCE = "I prefer Python code examples over pseudocode."
REMEMBERED = "The user prefers Python code examples over pseudocode."


def remembering(seen_instructions: list[str | None]) -> Callable[..., Any]:
    """A scripted model that notes the instructions of each request it gets."""

    def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        seen_instructions.append(info.instructions)
        return pm.ModelResponse(parts=[pm.TextPart("noted")])

    return model


def test_long_term_memories_reach_the_model_but_are_never_stored(
    backend: tuple[Any, Any], repo: BaseChatMemoryRepository
) -> None:
    records = InMemoryMemoryRecordRepository()
    memory = LongTermMemory(records, agent_id="adder", extractor=RuleBasedExtractor())
    instructions: list[str | None] = []
    agent = Agent(FunctionModel(remembering(instructions)), instructions="You add numbers.")
    history = ChatmemMessageHistory(repo, "lt", long_term=memory, user_id="ana")
    try:
        with pytest.raises(RuntimeError, match="model broke"):
            history.run_sync(make_agent(broken_model), "I prefer tea over coffee.")
        history.run_sync(agent, PREFERENCE)
        assert memory.flush(10)
        pending = records.find(user_id="ana", status="pending").records
        assert [r.content for r in pending] == [REMEMBERED]  # the failed run's prompt is not
        assert pending[0].conversation_id == "lt"
        assert instructions == ["You add numbers."]
        records.approve(pending[0].id, reviewer="rita")
        history.run_sync(agent, "Show me how to sort a list.")
        assert instructions[-1] is not None and instructions[-1].startswith("You add numbers.\n\n")
        assert instructions[-1].endswith(f"- {REMEMBERED}")

        async def on_the_twin() -> None:
            twin = await shared.twin_of(backend, repo)
            arecords = AsyncInMemoryMemoryRecordRepository()
            remembered = MemoryCandidate(
                memory_type=pending[0].memory_type, content=REMEMBERED, confidence=0.9
            )
            approved = (await arecords.add("adder", "ana", remembered)).record
            await arecords.approve(approved.id)
            amemory = AsyncLongTermMemory(
                arecords, agent_id="adder", extractor=RuleBasedExtractor()
            )
            try:
                ahistory = ChatmemMessageHistory(twin, "lt", long_term=amemory, user_id="ana")
                await ahistory.run(agent, "And a dict?", instructions="Be brief.")
                async with ahistory.turn() as turn:
                    assert turn.instructions is not None and REMEMBERED in turn.instructions
                with pytest.raises(InvalidArgumentError) as info:
                    ChatmemMessageHistory(twin, "lt", long_term=memory, user_id="ana")
                assert info.value.argument == "long_term"
            finally:
                await amemory.close()
                await shared.close_twin(twin)

        asyncio.run(on_the_twin())
        assert instructions[-1] is not None
        assert instructions[-1].startswith("You add numbers.\n\nBe brief.\n\n")
        assert REMEMBERED in instructions[-1]
        stored = _stored(repo, "lt")
        requests = [m for m in stored if isinstance(m, pm.ModelRequest)]
        assert [m.instructions for m in requests] == [
            "You add numbers.",
            "You add numbers.",
            "You add numbers.\n\nBe brief.",
        ]
        assert all(REMEMBERED not in (m.text or "") for m in repo.find_by_conversation_id("lt"))
    finally:
        memory.close()


def test_long_term_arguments_are_checked() -> None:
    repo = InMemoryChatMemoryRepository()
    memory = LongTermMemory(InMemoryMemoryRecordRepository(), agent_id="a")
    for kwargs, argument in (
        ({"long_term": memory}, "user_id"),
        ({"user_id": "ana"}, "long_term"),
        ({"long_term": object(), "user_id": "ana"}, "long_term"),
        ({"long_term": memory, "user_id": ""}, "user_id"),
    ):
        with pytest.raises(InvalidArgumentError) as info:
            ChatmemMessageHistory(repo, "c", **kwargs)  # type: ignore[arg-type]
        assert info.value.argument == argument
