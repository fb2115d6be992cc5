"""Google ADK session and memory services on chatmem, checked against ADK's own
``InMemorySessionService`` and driven by ADK's ``Runner`` with a scripted model (no network).

Every store test runs on the suite's ``--backend`` (the ``adk`` nox session: memory, SQLite,
PostgreSQL, Redis), through the kit's harness: an async twin of a fresh namespace per test.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from chatmem.core import InvalidArgumentError, Message, async_repository_from_url
from chatmem.core.backend import AsyncBaseChatMemoryRepository, ConversationIdPage, WindowEdit

pytest.importorskip(
    "google.adk", reason="google-adk not installed (extra: google-adk; ADK needs Python 3.11+)"
)

from google.adk.agents import LlmAgent
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.platform import time as platform_time
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.session import Session
from google.genai import types

from chatmem.core.longterm import (
    AsyncInMemoryMemoryRecordRepository,
    InMemoryMemoryRecordRepository,
    MemoryStatus,
)
from chatmem.integrations._adk_codec import event_data, event_message
from chatmem.integrations.adk import (
    ChatmemMemoryService,
    ChatmemSessionService,
    session_conversation_id,
)

T = TypeVar("T")
ROOT = Path(__file__).parents[2]


# == harness plumbing ==========================================================================
class Counting(AsyncBaseChatMemoryRepository):
    """Delegates every hook to ``inner`` and counts the messages the store returned."""

    def __init__(self, inner: AsyncBaseChatMemoryRepository) -> None:
        self.inner = inner
        self.read = 0
        self.max_conversation_id_length = inner.max_conversation_id_length  # type: ignore[misc]

    def _got(self, messages: list[Message]) -> list[Message]:
        self.read += len(messages)
        return messages

    async def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        return await self.inner._find_ids_page(limit, after)

    async def _find(self, cid: str) -> list[Message]:
        return self._got(await self.inner._find(cid))

    async def _find_last(self, cid: str, n: int) -> list[Message]:
        return self._got(await self.inner._find_last(cid, n))

    async def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        return self._got(await self.inner._load_window(cid, non_system_limit))

    async def _save_all(self, cid: str, messages: list[Message]) -> None:
        await self.inner._save_all(cid, messages)

    async def _delete(self, cid: str) -> None:
        await self.inner._delete(cid)

    async def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        await self.inner._append(cid, messages, trim_to)

    async def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        await self.inner._edit_window(cid, non_system_limit, lambda source: plan(self._got(source)))


@pytest.fixture
def store(harness: Any, server: Any) -> Iterator[Callable[..., Any]]:
    """``store(scenario)``: run ``scenario(make_twin)`` on a fresh event loop, where
    ``await make_twin()`` opens another async client of one fresh namespace."""
    made: list[Any] = []

    def run(scenario: Callable[[Callable[[], Awaitable[Any]]], Awaitable[T]]) -> T:
        repo = harness.make_repository(server)
        made.append(repo)

        async def main() -> T:
            twins: list[Any] = []

            async def make_twin() -> AsyncBaseChatMemoryRepository:
                twin = await harness.make_async_twin(server, repo)
                if twin._init_pending:
                    await twin._ensure_initialized()
                twins.append(twin)
                return twin  # type: ignore[no-any-return]

            try:
                return await scenario(make_twin)
            finally:
                for twin in twins:
                    close = getattr(twin, "close", None)
                    if close is not None:
                        await close()

        return asyncio.run(main())

    yield run
    for repo in made:
        harness.cleanup(server, repo)


def dump(session: Session | None) -> Any:
    assert session is not None
    return session.model_dump(mode="json")


def text(s: str, author: str = "user", ts: float = 0.0, **actions: Any) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        invocation_id="inv-1",
        author=author,
        timestamp=ts,
        content=types.Content(role=role, parts=[types.Part(text=s)]),
        actions=EventActions(**actions),
    )


def sequence() -> list[Event]:
    """Text, a function call and its response, state deltas of every scope, temp keys, a
    state-only event, and the rarer fields (bytes, thoughts, usage, transfer, artifacts)."""
    call = types.FunctionCall(id="fc-1", name="add", args={"a": 2, "b": 3})
    response = types.FunctionResponse(id="fc-1", name="add", response={"result": 5})
    return [
        text("hello", ts=1001.0, state_delta={"seen": 1, "temp:scratch": "x"}),
        Event(
            invocation_id="inv-1",
            author="calc",
            timestamp=1002.0,
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=7, candidates_token_count=3
            ),
        ),
        Event(
            invocation_id="inv-1",
            author="calc",
            timestamp=1003.0,
            content=types.Content(role="user", parts=[types.Part(function_response=response)]),
            actions=EventActions(state_delta={"app:calls": 1, "user:last": 5, "temp:t": 1}),
        ),
        text(
            "2 + 3 = 5",
            author="calc",
            ts=1004.0,
            state_delta={"seen": 2, "app:calls": 2, "user:tags": ["a", {"k": None}]},
        ),
        Event(
            invocation_id="inv-2",
            author="calc",
            timestamp=1005.0,
            actions=EventActions(state_delta={"user:flag": True, "temp:only": 0}),
        ),
        Event(
            invocation_id="inv-2",
            author="calc",
            timestamp=1006.0,
            content=types.Content(
                role="model",
                parts=[
                    types.Part(text="thinking", thought=True),
                    types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00")),
                    types.Part(text="done"),
                ],
            ),
            actions=EventActions(
                transfer_to_agent="other", escalate=True, artifact_delta={"img.png": 1}
            ),
            branch="calc.other",
            turn_complete=True,
            custom_metadata={"trace": {"span": 1}},
        ),
    ]


async def same_sessions(
    ours: BaseSessionService, ref: BaseSessionService, app: str, user: str, sid: str
) -> None:
    """Our stored session equals ADK's in-memory one, whole and through every config."""
    assert dump(await ours.get_session(app_name=app, user_id=user, session_id=sid)) == dump(
        await ref.get_session(app_name=app, user_id=user, session_id=sid)
    )
    for config in (
        GetSessionConfig(num_recent_events=0),
        GetSessionConfig(num_recent_events=2),
        GetSessionConfig(after_timestamp=1003.0),
        GetSessionConfig(num_recent_events=3, after_timestamp=1002.0),
    ):
        got = await ours.get_session(app_name=app, user_id=user, session_id=sid, config=config)
        want = await ref.get_session(app_name=app, user_id=user, session_id=sid, config=config)
        assert dump(got) == dump(want), config
    assert await ours.get_user_state(app_name=app, user_id=user) == await ref.get_user_state(
        app_name=app, user_id=user
    )


@pytest.fixture
def fixed_clock() -> Iterator[None]:
    """ADK's clock pinned, so both services stamp sessions alike."""
    platform_time.set_time_provider(lambda: 1000.0)
    yield
    platform_time.reset_time_provider()


# == the session service =======================================================================
def test_the_same_events_give_the_same_sessions_as_adks_in_memory_service(
    store: Any, fixed_clock: None
) -> None:
    async def scenario(make_twin: Callable[[], Awaitable[Any]]) -> None:
        ours = ChatmemSessionService(await make_twin())
        ref = InMemorySessionService()
        initial = {"seen": 0, "app:calls": 0, "user:name": "Ada", "temp:boot": True}
        a = await ours.create_session(app_name="calc", user_id="ada", state=initial, session_id="s")
        b = await ref.create_session(app_name="calc", user_id="ada", state=initial, session_id="s")
        assert dump(a) == dump(b)
        await same_sessions(ours, ref, "calc", "ada", "s")
        for event in sequence():
            twin = event.model_copy(deep=True)
            got = await ours.append_event(a, event)
            want = await ref.append_event(b, twin)
            assert got.model_dump(mode="json") == want.model_dump(mode="json")
            assert dump(a) == dump(b)  # the caller's session object, temp keys included
            await same_sessions(ours, ref, "calc", "ada", "s")
        # A re-delivery (the same event again) and a partial event store nothing.
        first = a.events[0]
        await ours.append_event(a, first.model_copy(deep=True))
        await ref.append_event(b, first.model_copy(deep=True))
        partial = text("typing", author="calc", ts=1007.0)
        partial.partial = True
        await ours.append_event(a, partial)
        await ref.append_event(b, partial.model_copy(deep=True))
        await same_sessions(ours, ref, "calc", "ada", "s")
        # Every field of every event, as ADK's JSON, in a new service on another client.
        fresh = ChatmemSessionService(await make_twin())
        stored = await fresh.get_session(app_name="calc", user_id="ada", session_id="s")
        assert stored is not None and len(stored.events) == len(sequence())
        assert [e.model_dump(mode="json") for e in stored.events] == [
            e.model_dump(mode="json") for e in b.events
        ]
        png = stored.events[-1].content.parts[1].inline_data  # type: ignore[union-attr,index]
        assert png is not None and png.data == b"\x89PNG\x00"
        assert not any(k.startswith("temp:") for e in stored.events for k in e.actions.state_delta)

    store(scenario)


def test_create_get_delete_and_bad_input(store: Any) -> None:
    async def scenario(make_twin: Callable[[], Awaitable[Any]]) -> None:
        svc = ChatmemSessionService(await make_twin())
        made = await svc.create_session(app_name="a/b", user_id="u%1", session_id="x/y")
        assert made.id == "x/y"
        assert session_conversation_id("a/b", "u%1", "x/y") == "adk/s/a%2Fb/u%251/x%2Fy"
        with pytest.raises(AlreadyExistsError):
            await svc.create_session(app_name="a/b", user_id="u%1", session_id="x/y")
        generated = await svc.create_session(app_name="a/b", user_id="u%1")
        assert generated.id
        # Escaping keeps look-alike ids apart.
        assert await svc.get_session(app_name="a", user_id="b/u%1", session_id="x/y") is None
        assert await svc.get_session(app_name="a/b", user_id="u%1", session_id="x") is None
        await svc.delete_session(app_name="a/b", user_id="u%1", session_id="x/y")
        assert await svc.get_session(app_name="a/b", user_id="u%1", session_id="x/y") is None
        await svc.delete_session(app_name="a/b", user_id="u%1", session_id="x/y")  # no-op
        with pytest.raises(SessionNotFoundError):
            await svc.append_event(made, text("late"))
        for bad in ("", None, 3):
            with pytest.raises(InvalidArgumentError, match="app_name"):
                await svc.get_session(app_name=bad, user_id="u", session_id="s")  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="session_id"):
            await svc.create_session(app_name="a", user_id="u", session_id="x\x00")
        with pytest.raises(InvalidArgumentError, match="repository"):
            ChatmemSessionService(object())  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="dedupe_window"):
            ChatmemSessionService(await make_twin(), dedupe_window=0)

    store(scenario)


def test_a_retried_append_is_stored_once_even_when_the_retries_race(store: Any) -> None:
    async def scenario(make_twin: Callable[[], Awaitable[Any]]) -> None:
        svc = ChatmemSessionService(await make_twin())
        session = await svc.create_session(app_name="a", user_id="u", session_id="s")
        event = text("once", ts=1.0, state_delta={"n": 1, "user:n": 1})
        await svc.append_event(session, event)
        await svc.append_event(session, event)  # the same object again
        await svc.append_event(session, event.model_copy(deep=True))  # a copy
        racers = [ChatmemSessionService(await make_twin()) for _ in range(4)]
        again = text("raced", ts=2.0)
        await asyncio.gather(*(r.append_event(session, again.model_copy()) for r in racers))
        stored = await svc.get_session(app_name="a", user_id="u", session_id="s")
        assert stored is not None
        assert [e.id for e in stored.events] == [event.id, again.id]
        assert stored.state == {"n": 1, "user:n": 1}
        # An event with the same id but other fields is another event (ADK's rule).
        other = event.model_copy(update={"author": "agent"})
        await svc.append_event(session, other)
        stored = await svc.get_session(app_name="a", user_id="u", session_id="s")
        assert stored is not None and len(stored.events) == 3

    store(scenario)


def test_stale_sessions_raise_refuses_an_append_to_an_outdated_copy(store: Any) -> None:
    """``stale_sessions="raise"`` mirrors DatabaseSessionService: a copy read before another
    writer appended gets ``StaleSessionError`` and stores nothing; a fresh read can append;
    a re-delivery of a stored event is still no error; a Runner's own turns never trip it.
    The default merges instead (the append lands on the stored state)."""

    async def scenario(make_twin: Callable[[], Awaitable[Any]]) -> None:
        repo = await make_twin()
        strict = ChatmemSessionService(repo, stale_sessions="raise")
        await strict.create_session(app_name="calc", user_id="ada", session_id="chat")
        now = platform_time.get_time()
        first = await strict.get_session(app_name="calc", user_id="ada", session_id="chat")
        second = await strict.get_session(app_name="calc", user_id="ada", session_id="chat")
        assert first is not None and second is not None
        kept = text("first writer", ts=now + 1, state_delta={"n": 1})
        await strict.append_event(first, kept)
        with pytest.raises(StaleSessionError):
            await strict.append_event(
                second, text("stale writer", ts=now + 2, state_delta={"n": 2})
            )
        await strict.append_event(second, kept.model_copy())  # a re-delivery: no error
        fresh = await strict.get_session(app_name="calc", user_id="ada", session_id="chat")
        assert fresh is not None and [e.id for e in fresh.events] == [kept.id]
        assert fresh.state == {"n": 1}
        await strict.append_event(fresh, text("after a fresh read", ts=now + 3))
        merging = ChatmemSessionService(repo)
        await merging.append_event(second, text("merged", ts=now + 4, state_delta={"m": 1}))
        stored = await merging.get_session(app_name="calc", user_id="ada", session_id="chat")
        assert stored is not None and len(stored.events) == 3
        assert stored.state == {"n": 1, "m": 1}
        with pytest.raises(InvalidArgumentError, match="stale_sessions"):
            ChatmemSessionService(repo, stale_sessions="ignore")
        runner = make_runner(strict)
        await strict.delete_session(app_name="calc", user_id="ada", session_id="chat")
        await strict.create_session(app_name="calc", user_id="ada", session_id="chat")
        assert await turn(runner, "one") == {"prompts": ["one"], "sums": [{"sum": 1}]}
        assert await turn(runner, "two") == {
            "prompts": ["one", "two"],
            "sums": [{"sum": 1}, {"sum": 2}],
        }

    store(scenario)


def test_eight_concurrent_appends_on_one_session_lose_nothing(store: Any) -> None:
    async def scenario(make_twin: Callable[[], Awaitable[Any]]) -> None:
        services = [ChatmemSessionService(await make_twin()) for _ in range(8)]
        session = await services[0].create_session(app_name="a", user_id="u", session_id="s")
        events = [
            text(f"m{i}", ts=float(i), state_delta={f"k{i}": i, "app:last": i, f"user:u{i}": i})
            for i in range(8)
        ]
        await asyncio.gather(
            *(s.append_event(session, e) for s, e in zip(services, events, strict=True))
        )
        stored = await services[0].get_session(app_name="a", user_id="u", session_id="s")
        assert stored is not None
        assert sorted(e.id for e in stored.events) == sorted(e.id for e in events)
        for i in range(8):
            assert stored.state[f"k{i}"] == i and stored.state[f"user:u{i}"] == i
        assert stored.state["app:last"] in range(8)

    store(scenario)


def test_recent_events_of_a_10000_event_session_are_a_bounded_read(store: Any) -> None:
    async def scenario(make_twin: Callable[[], Awaitable[Any]]) -> None:
        counting = Counting(await make_twin())
        svc = ChatmemSessionService(counting)
        session = await svc.create_session(app_name="a", user_id="u", session_id="big")
        cid = session_conversation_id("a", "u", "big")
        # 9,999 events written straight to the store (what append_event would store), then
        # one through the service, which moves the session record after them.
        events = [text(f"m{i}", ts=float(i)) for i in range(9999)]
        for start in range(0, len(events), 500):
            chunk = events[start : start + 500]
            await counting.append(cid, [event_message(event_data(e, {}), e) for e in chunk])
        last = text("m9999", ts=9999.0)
        await svc.append_event(session, last)
        events.append(last)

        counting.read = 0
        recent = await svc.get_session(
            app_name="a",
            user_id="u",
            session_id="big",
            config=GetSessionConfig(num_recent_events=20),
        )
        assert recent is not None
        assert [e.id for e in recent.events] == [e.id for e in events[-20:]]
        # 21 session messages (20 events and the record) plus the app and user state reads.
        assert counting.read <= 23, counting.read

        counting.read = 0
        since = await svc.get_session(
            app_name="a",
            user_id="u",
            session_id="big",
            config=GetSessionConfig(after_timestamp=9990.0),
        )
        assert since is not None and [e.timestamp for e in since.events] == [
            float(t) for t in range(9990, 10000)
        ]
        assert counting.read <= 70, counting.read

        counting.read = 0
        listed = await svc.list_sessions(app_name="a", user_id="u")
        assert [s.id for s in listed.sessions] == ["big"] and listed.sessions[0].events == []
        assert counting.read <= 5, counting.read

    store(scenario)


def test_list_sessions_matches_adk_and_reads_no_events(store: Any, fixed_clock: None) -> None:
    async def scenario(make_twin: Callable[[], Awaitable[Any]]) -> None:
        counting = Counting(await make_twin())
        ours = ChatmemSessionService(counting)
        ref = InMemorySessionService()
        for svc in (ours, ref):
            made = {}
            for user, sid in [("u1", "a"), ("u1", "b"), ("u1", "c"), ("u2", "d")]:
                made[sid] = await svc.create_session(
                    app_name="app", user_id=user, session_id=sid, state={"sid": sid}
                )
            for i in range(30):
                await svc.append_event(made["b"], text(f"m{i}", ts=2000.0 + i))
            await svc.append_event(made["d"], text("x", ts=1500.0, state_delta={"user:k": 1}))
            await svc.delete_session(app_name="app", user_id="u1", session_id="c")
        for user in ("u1", "u2", None, "nobody"):
            counting.read = 0
            got = await ours.list_sessions(app_name="app", user_id=user)
            want = await ref.list_sessions(app_name="app", user_id=user)
            assert got.model_dump(mode="json") == want.model_dump(mode="json"), user
            assert counting.read <= 4 + 2 * len(got.sessions), (user, counting.read)
        assert (await ours.list_sessions(app_name="other")).sessions == []

    store(scenario)


# == a Runner with a scripted model, resumed in a new process ==================================
def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers."""
    return {"sum": a + b}


class ScriptedLlm(BaseLlm):
    """Calls ``add`` once per user prompt, then answers with every prompt and sum it was
    shown (so a resumed run proves which history it was given)."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = llm_request.contents
        parts = [p for c in contents for p in c.parts or []]
        prompts = [p.text for c in contents if c.role == "user" for p in c.parts or [] if p.text]
        sums = [p.function_response.response for p in parts if p.function_response]
        last = contents[-1].parts or []
        if any(p.text for p in last):
            n = len(sums)
            call = types.FunctionCall(id=f"call-{n}", name="add", args={"a": n, "b": 1})
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )
            return
        answer = json.dumps({"prompts": prompts, "sums": sums})
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=answer)]))


def make_runner(service: BaseSessionService) -> Runner:
    agent = LlmAgent(name="calc", model=ScriptedLlm(model="scripted"), tools=[add])
    return Runner(agent=agent, app_name="calc", session_service=service)


async def turn(runner: Runner, prompt: str) -> dict[str, Any]:
    message = types.Content(role="user", parts=[types.Part(text=prompt)])
    final = ""
    async for event in runner.run_async(user_id="ada", session_id="chat", new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            final = event.content.parts[0].text or ""
    return json.loads(final)  # type: ignore[no-any-return]


RESUME = textwrap.dedent(
    """
    import asyncio, json, sys
    from chatmem.integrations.adk import ChatmemSessionService
    from chatmem_integrations.tests.test_adk import make_runner, turn

    async def main():
        url, options, prompt = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
        service = await ChatmemSessionService.from_url(url, **options)
        try:
            print(json.dumps(await turn(make_runner(service), prompt)))
        finally:
            close = getattr(service.repository, "close", None)
            if close is not None:
                await close()

    asyncio.run(main())
    """
)


def test_a_runner_with_a_tool_call_resumes_in_a_new_process(
    harness: Any, server: Any, store: Any, tmp_path: Path
) -> None:
    probe = harness.make_repository(server)
    spec = harness.connect_spec(server, probe)
    harness.cleanup(server, probe)
    if spec is None:  # an in-process store: another process reaches SQLite instead
        pytest.importorskip("aiosqlite", reason="aiosqlite not installed (extra: sqlite)")
        spec = (f"sqlite:///{tmp_path / 'adk.db'}", {})
    url, options = spec

    async def first_turns() -> tuple[dict[str, Any], dict[str, Any]]:
        service = await ChatmemSessionService.from_url(url, **options)
        try:
            await service.create_session(app_name="calc", user_id="ada", session_id="chat")
            runner = make_runner(service)
            return await turn(runner, "one"), await turn(runner, "two")
        finally:
            close = getattr(service.repository, "close", None)
            if close is not None:
                await close()

    one, two = asyncio.run(first_turns())
    assert one == {"prompts": ["one"], "sums": [{"sum": 1}]}
    assert two == {"prompts": ["one", "two"], "sums": [{"sum": 1}, {"sum": 2}]}
    done = subprocess.run(
        [sys.executable, "-c", RESUME, url, json.dumps(options), "three"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    three = json.loads(done.stdout.strip().splitlines()[-1])
    assert three == {
        "prompts": ["one", "two", "three"],
        "sums": [{"sum": 1}, {"sum": 2}, {"sum": 3}],
    }

    async def stored() -> list[Message]:
        repo = await async_repository_from_url(url, **options)
        try:
            return await repo.find_by_conversation_id(
                session_conversation_id("calc", "ada", "chat")
            )
        finally:
            close = getattr(repo, "close", None)
            if close is not None:
                await close()

    kinds = [type(m).__name__ for m in asyncio.run(stored())]
    # Per turn: the prompt, the call, its result, the answer; then the session record.
    assert kinds == [
        *["UserMessage", "AssistantMessage", "ToolResponseMessage", "AssistantMessage"] * 3,
        "SystemMessage",
    ]


# == the memory service =======================================================================
def session_with(*texts: str) -> Session:
    return Session(
        id="s1",
        app_name="travel",
        user_id="ada",
        events=[text(t, ts=float(i)) for i, t in enumerate(texts)]
        + [text("Noted.", author="agent", ts=99.0)],
    )


def test_memory_finds_approved_memories_only() -> None:
    async def scenario() -> None:
        records = AsyncInMemoryMemoryRecordRepository()
        memory = ChatmemMemoryService(records)
        session = session_with(
            "I prefer window seats on long flights.", "My name is Ada and I live in Lisbon."
        )
        await memory.add_session_to_memory(session)
        await memory.add_session_to_memory(session)  # again: no duplicates
        assert await memory.flush(timeout=30)
        pending = await records.find(agent_id="travel", user_id="ada", status=MemoryStatus.PENDING)
        assert sorted(r.content for r in pending.records) == [
            "The user prefers window seats on long flights.",
            "The user's name is Ada and the user lives in Lisbon.",
        ]
        assert all(r.conversation_id == "adk/s/travel/ada/s1" for r in pending.records)
        # Pending: never found.
        for query in ("window seats", "Lisbon"):
            found = await memory.search_memory(app_name="travel", user_id="ada", query=query)
            assert found.memories == []
        seats, home = sorted(pending.records, key=lambda r: r.content)
        await records.approve(seats.id, reviewer="test")
        await records.reject(home.id, reviewer="test")
        found = await memory.search_memory(
            app_name="travel", user_id="ada", query="Which seats on flights?"
        )
        assert [m.id for m in found.memories] == [seats.id]
        entry = found.memories[0]
        assert entry.content.parts is not None
        assert entry.content.parts[0].text == seats.content and entry.author == "user"
        # Rejected: never found; another user or app sees nothing.
        assert (
            await memory.search_memory(app_name="travel", user_id="ada", query="Lisbon")
        ).memories == []
        assert (
            await memory.search_memory(app_name="travel", user_id="bob", query="seats")
        ).memories == []
        assert (
            await memory.search_memory(app_name="hotel", user_id="ada", query="seats")
        ).memories == []
        with pytest.raises(InvalidArgumentError, match="query"):
            await memory.search_memory(app_name="travel", user_id="ada", query=None)  # type: ignore[arg-type]
        await memory.analyser.close()

    asyncio.run(scenario())


def test_memory_search_by_embeddings() -> None:
    def embed(s: str) -> list[float]:
        """A toy embedding: letter counts (no model, deterministic)."""
        low = s.lower()
        return [float(low.count(c)) for c in "abcdefghijklmnopqrstuvwxyz"]

    async def scenario() -> None:
        records = AsyncInMemoryMemoryRecordRepository()
        memory = ChatmemMemoryService(records, embed=embed, min_similarity=0.9)
        await memory.add_session_to_memory(session_with("I prefer window seats on long flights."))
        assert await memory.flush(timeout=30)
        (seats,) = (await records.find(status=MemoryStatus.PENDING)).records
        query = "the user prefers window seats on long flights"
        assert (
            await memory.search_memory(app_name="travel", user_id="ada", query=query)
        ).memories == []
        await records.approve(seats.id)
        found = await memory.search_memory(app_name="travel", user_id="ada", query=query)
        assert [m.id for m in found.memories] == [seats.id]
        assert (
            await memory.search_memory(app_name="travel", user_id="ada", query="zzz")
        ).memories == []
        with pytest.raises(InvalidArgumentError, match="embed"):
            ChatmemMemoryService(records, embed=3)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="records"):
            ChatmemMemoryService(object())  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="records"):
            ChatmemMemoryService(InMemoryMemoryRecordRepository())  # type: ignore[arg-type]
        await memory.analyser.close()

    asyncio.run(scenario())


# == the docs page's examples ==================================================================
def test_the_docs_example_runs(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The page's blocks are marked skip for the docs session (no google-adk there); they run
    here, each as a script in a fresh directory, and print what the page says."""
    if request.config.getoption("--backend", default="memory") != "memory":
        pytest.skip("the docs examples use their own SQLite files: run once, with --backend memory")
    pytest.importorskip("aiosqlite", reason="aiosqlite not installed (extra: sqlite)")
    page = (ROOT / "docs" / "integrations" / "adk.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.M | re.S)
    assert len(blocks) == 2
    for i, code in enumerate(blocks):
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        promised = re.findall(r"# -> (.*)$", code, re.M)
        printed = done.stdout.strip().splitlines()
        assert promised == printed, (i, printed)
