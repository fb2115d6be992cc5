"""TTL, for backends claiming ``Capability.TTL``: a conversation expires as a whole once it
has been idle for the TTL, and every write slides the expiry of the whole conversation."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from chatmem.core import (
    AssistantMessage,
    MessageWindowChatMemory,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import BaseChatMemoryRepository, Capability

from ..corpus import full_corpus, turn
from ..harness import Harness, ServerInfo

Repo = BaseChatMemoryRepository
POLL = 0.25


def _texts(repo: Repo, cid: str) -> list[str | None]:
    return [m.text for m in repo.find_by_conversation_id(cid)]


def _wait_until_gone(repo: Repo, cid: str, whole: Sequence[str | None], bound: float) -> None:
    """Poll until ``cid`` reads empty within ``bound`` seconds; every read before that must
    be the whole conversation (expiry never removes part of it)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        got = _texts(repo, cid)
        if not got:
            return
        assert got == list(whole), f"expiry left part of {cid!r}: {got}"
        time.sleep(POLL)
    raise AssertionError(f"{cid!r} was still stored {bound:.0f}s after its TTL could expire it")


@pytest.mark.capability(Capability.TTL)
def test_ttl_expires_an_idle_conversation_as_a_whole(
    ttl_repository: Repo, harness: Harness, server: ServerInfo
) -> None:
    repo = ttl_repository
    whole = [m.text for m in full_corpus() + turn(1) + turn(2)]
    repo.save_all("idle", full_corpus() + turn(1))
    repo.append("idle", turn(2))
    assert _texts(repo, "idle") == whole  # not expired right after the write
    ttl = harness.short_ttl.total_seconds()
    _wait_until_gone(repo, "idle", whole, ttl + harness.expiry_grace(server))
    assert "idle" not in repo.find_conversation_ids()
    assert repo.find_last("idle", 5) == []
    assert MessageWindowChatMemory(repo, max_messages=10).get("idle") == []
    if Capability.SEARCH in type(repo).capabilities:  # its messages left the index too
        assert repo.find_by_type("SYSTEM", conversation_id="idle") == []  # type: ignore[attr-defined]


@pytest.mark.capability(Capability.TTL)
def test_an_expired_conversation_starts_afresh(
    ttl_repository: Repo, harness: Harness, server: ServerInfo
) -> None:
    repo = ttl_repository
    repo.save_all("again", turn(1) + turn(2))
    ttl = harness.short_ttl.total_seconds()
    _wait_until_gone(repo, "again", ["u1", "a1", "u2", "a2"], ttl + harness.expiry_grace(server))
    repo.append("again", UserMessage("new life"))
    assert _texts(repo, "again") == ["new life"]
    assert repo.find_conversation_ids() == ["again"]


@pytest.mark.capability(Capability.TTL)
def test_ttl_slides_on_every_write_and_expires_idle_conversations_only(
    ttl_repository: Repo, harness: Harness, server: ServerInfo
) -> None:
    repo = ttl_repository
    ttl = harness.short_ttl.total_seconds()
    memory = MessageWindowChatMemory(repo, max_messages=1000)
    call = AssistantMessage(None, tool_calls=(ToolCall(id="c", name="f"),))
    memory.add("busy", [UserMessage("q0"), call])
    memory.add("busy", ToolResponseMessage((ToolResponse(id="c", name="f", response_data="r"),)))
    repo.save_all("idle", [UserMessage("left alone")])
    expected: list[str | None] = ["q0", None, ""]
    # Keep the busy conversation active (a write every third of the TTL) for well past the
    # TTL and until the idle one has expired: its oldest turn must never go.
    started = time.monotonic()
    bound = ttl + harness.expiry_grace(server)
    i = 0
    while True:
        assert _texts(repo, "busy") == expected, "an active conversation lost messages"
        idle = _texts(repo, "idle")
        assert idle in ([], ["left alone"]), idle
        elapsed = time.monotonic() - started
        if not idle and elapsed > 2.5 * ttl:
            break
        assert not idle or elapsed < bound, f"the idle conversation outlived its TTL by {bound}s"
        time.sleep(ttl / 3)
        memory.add("busy", UserMessage(f"u{i}"))
        expected.append(f"u{i}")
        i += 1
    assert repo.find_conversation_ids() == ["busy"]
    _wait_until_gone(repo, "busy", expected, ttl + harness.expiry_grace(server))
