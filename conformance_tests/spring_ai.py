"""Helpers of the Spring AI layout tests beside each store (``chatmem_*/tests/
test_spring_ai_layout.py``): messages in the JSON shape of the Java harnesses in
``scripts/servers/spring-ai/``, their comparison, and the history the window tests replay."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from chatmem.core import AssistantMessage, Message, SystemMessage, UserMessage


def cid(tag: str) -> str:
    """A fresh conversation id (at most 36 characters: Spring's JDBC column)."""
    return f"{tag}-{uuid.uuid4().hex[:16]}"


def msg(kind: str, text: str, ts: str | None = None) -> dict[str, Any]:
    """A message as the harness reads it: Spring's type name, text, ISO instant or None."""
    return {"type": kind, "text": text, "timestamp": ts}


def as_spring(messages: list[Message]) -> list[dict[str, Any]]:
    """chatmem messages in the harness's JSON shape (type, text, ISO instant)."""
    out = []
    for m in messages:
        assert m.created_at is not None
        ts = m.created_at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
        out.append({"type": m.message_type.value, "text": m.text, "timestamp": ts})
    return out


def same_instants(
    a: list[dict[str, Any]], b: list[dict[str, Any]], *, resolution_us: int = 1
) -> None:
    """Equal lists of messages, comparing timestamps as instants (Java prints ``...Z``)
    truncated to ``resolution_us`` microseconds (the store's: 1 on PostgreSQL, 1,000 on
    Cassandra, 1,000,000 on MariaDB's ``TIMESTAMP``)."""

    def norm(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        def when(r: dict[str, Any]) -> int:
            ts = datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00"))
            micros = int(ts.timestamp()) * 1_000_000 + ts.microsecond
            return micros // resolution_us

        return [(r["type"], r["text"], when(r)) for r in rows]

    assert norm(a) == norm(b)


def history(n: int) -> list[dict[str, Any]]:
    """A system message, ``n`` question-answer pairs and a new system message halfway."""
    out = [msg("SYSTEM", "rules")]
    for i in range(n):
        out += [msg("USER", f"u{i}"), msg("ASSISTANT", f"a{i}")]
        if i == n // 2:
            out.append(msg("SYSTEM", "new rules"))
    return out


def assert_chatmem_ls_lists(url: str, ids: Sequence[str]) -> None:
    """``chatmem ls --url url`` (a subprocess, as a user runs it) lists every one of ``ids``."""
    done = subprocess.run(
        [sys.executable, "-m", "chatmem.core._cli", "ls", "--url", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert set(ids) <= set(done.stdout.split())


def as_chatmem(m: dict[str, Any]) -> Message:
    """A harness message as a chatmem one (type and text)."""
    cls = {"USER": UserMessage, "ASSISTANT": AssistantMessage, "SYSTEM": SystemMessage}
    return cls[m["type"]](m["text"])


class Harness:
    """One JVM running a harness's ``serve`` loop for a test module: Spring's repository,
    answering one JSON list of operations per line (see the harnesses' usage)."""

    def __init__(self, java: Path, classpath: str, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            [java.read_text().strip(), "-cp", classpath, *argv, "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lock = threading.Lock()

    def __call__(self, ops: list[dict[str, Any]]) -> Any:
        """Run ``ops`` in Spring and return their results."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(json.dumps(ops) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            assert self.proc.stderr is not None
            pytest.fail(f"the Spring AI harness exited: {self.proc.stderr.read()[-3000:]}")
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def snapped(window: list[dict[str, Any]]) -> list[str]:
    """Spring AI 1.1's window as 2.0 would keep it: 2.0's ``MessageWindowChatMemory`` moves
    the cut forward to the next user message (no reply kept without its question); 1.1 cuts
    by count only. chatmem follows 2.0."""
    first_user = next((i for i, m in enumerate(window) if m["type"] == "USER"), len(window))
    return [m["text"] for i, m in enumerate(window) if i >= first_user or m["type"] == "SYSTEM"]


def assert_windows_agree(
    repo: Any,
    spring: Callable[[list[dict[str, Any]]], Any],
    sizes: Sequence[int],
    compare: Callable[[list[dict[str, Any]], list[Message]], None],
    exact_sizes: Sequence[int] | None = None,
) -> None:
    """Replay ``history(6)`` one message at a time into Spring's ``MessageWindowChatMemory``
    and chatmem's for each size (one call of ``spring`` for all): the same window, up to
    Spring 1.1's count cut (``snapped``; exact at ``exact_sizes``, or at every size when
    None), each side's window over the other's rows, and Spring adding to chatmem's rows.
    ``compare`` checks Spring's rows against chatmem's messages (texts, timestamps...)."""
    from chatmem.core import MessageWindowChatMemory

    replayed = history(6)
    ops: list[dict[str, Any]] = []
    before: dict[int, list[Message]] = {}
    ids = {size: (cid(f"ws{size}"), cid(f"wc{size}")) for size in sizes}
    for size, (theirs, ours) in ids.items():
        memory = MessageWindowChatMemory(repo, max_messages=size)
        for m in replayed:
            memory.add(ours, as_chatmem(m))
        before[size] = memory.get(ours)
        ops += [{"op": "window_add", "cid": theirs, "max": size, "messages": [m]} for m in replayed]
        ops += [
            {"op": "window_get", "cid": theirs, "max": size},
            # Spring's window over what chatmem stored, then Spring adding to it
            {"op": "window_get", "cid": ours, "max": size},
            {"op": "window_add", "cid": ours, "max": size, "messages": [msg("USER", "last")]},
            {"op": "window_get", "cid": ours, "max": size},
        ]
    results = iter(spring(ops))
    for size, (theirs, ours) in ids.items():
        *_, spring_window, spring_over_ours, _, after_spring_add = (
            next(results) for _ in range(len(replayed) + 4)
        )
        memory = MessageWindowChatMemory(repo, max_messages=size)
        mine = [m.text for m in before[size]]
        assert snapped(spring_window) == mine, size  # the same rule, up to 1.1's cut
        if exact_sizes is None or size in exact_sizes:
            assert [m["text"] for m in spring_window] == mine, size
        # Spring's window is what it stored: chatmem's window over it is the same list
        assert [m.text for m in memory.get(theirs)] == [m["text"] for m in spring_window], size
        compare(spring_over_ours, before[size])  # Spring reads chatmem's window
        # after Spring's add, chatmem reads the window Spring stored
        assert [m["text"] for m in after_spring_add] == [m.text for m in memory.get(ours)], size


def race_appenders(repo: Any, conversation: str, writers: int = 8, each: int = 10) -> list[Message]:
    """``writers`` threads appending ``each`` messages to one conversation at once: every
    message is stored, each writer's in its own order; returns the stored log."""
    from chatmem.core import UserMessage

    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(w: int) -> None:
        try:
            barrier.wait()
            for i in range(each):
                repo.append(conversation, UserMessage(f"{w}:{i}"))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    log: list[Message] = repo.find_by_conversation_id(conversation)
    assert sorted(m.text or "" for m in log) == sorted(
        f"{w}:{i}" for w in range(writers) for i in range(each)
    )
    for w in range(writers):  # each writer's messages in its own order
        mine = [m.text for m in log if (m.text or "").startswith(f"{w}:")]
        assert mine == [f"{w}:{i}" for i in range(each)]
    return log
