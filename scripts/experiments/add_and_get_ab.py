"""A/B of ``MessageWindowChatMemory.add_and_get`` on one backend, in one run.

``python scripts/experiments/add_and_get_ab.py cassandra [--turns 100] [--passes 3]`` starts
the backend's server through its harness and times, turn by turn interleaved (one
conversation per mode and pass), a turn of ``add(user)`` + ``add_and_get(reply)`` against
``add`` + ``add`` + ``get``, and against ``add_and_get`` on core's default (the append, then
the read: the store's override bypassed). Prints each pass's median ms per turn and the load
average before and after.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chatmem.core import AssistantMessage, MessageWindowChatMemory, UserMessage
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import unique_suffix
from chatmem.testing.plugin import load_harness, provision

WINDOW = 20


def modes(repo: Any, default: Any, keep_history: bool) -> dict[str, Callable[[str, int], Any]]:
    """Each mode's turn ``(cid, i)`` on its own memory."""
    fast = MessageWindowChatMemory(repo, max_messages=WINDOW, keep_history=keep_history)
    plain = MessageWindowChatMemory(default, max_messages=WINDOW, keep_history=keep_history)

    def add_add_get(cid: str, i: int) -> Any:
        fast.add(cid, UserMessage(f"question {i}"))
        fast.add(cid, AssistantMessage(f"answer {i}"))
        return fast.get(cid)

    def add_and_get(cid: str, i: int) -> Any:
        fast.add(cid, UserMessage(f"question {i}"))
        return fast.add_and_get(cid, AssistantMessage(f"answer {i}"))

    def default_add_and_get(cid: str, i: int) -> Any:
        plain.add(cid, UserMessage(f"question {i}"))
        return plain.add_and_get(cid, AssistantMessage(f"answer {i}"))

    return {
        "add + add + get": add_add_get,
        "add + add_and_get": add_and_get,
        "add + add_and_get (core default)": default_add_and_get,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("backend")
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--trimmed", action="store_true", help="without keep_history")
    args = parser.parse_args()
    harness = load_harness(args.backend)
    server = provision(harness, Path(tempfile.mkdtemp(prefix=f"chatmem-ab-{args.backend}-")))
    try:
        repo = harness.make_repository(server)
        default = harness.make_repository(server)
        # core's add, then read: what add_and_get was before the store's override
        default._append_and_load_window = functools.partial(  # type: ignore[method-assign]
            BaseChatMemoryRepository._append_and_load_window, default
        )
        turns = modes(repo, default, keep_history=not args.trimmed)
        print(
            f"# {args.backend} ({server.label}), window {WINDOW}, "
            f"keep_history={not args.trimmed}, load before {os.getloadavg()}"
        )
        results: dict[str, list[float]] = {name: [] for name in turns}
        for p in range(args.passes):
            cids = {name: f"ab-{unique_suffix()}" for name in turns}
            for name, turn in turns.items():
                for i in range(10):  # warm-up: prepared statements, guards, caches
                    turn(cids[name], i)
            times: dict[str, list[float]] = {name: [] for name in turns}
            for i in range(args.turns):  # interleaved turn by turn: the same load on each
                for name, turn in turns.items():
                    t0 = time.perf_counter()
                    turn(cids[name], 10 + i)
                    times[name].append((time.perf_counter() - t0) * 1e3)
            for name, values in times.items():
                results[name].append(statistics.median(values))
            print(
                f"pass {p + 1} (median ms per turn): "
                + ", ".join(f"{n} {v[-1]:.2f}" for n, v in results.items())
            )
        for name, values in results.items():
            print(f"{name}: {min(values):.2f}-{max(values):.2f} ms per turn (pass medians)")
        print(f"# load after {os.getloadavg()}")
        harness.cleanup(server, repo)
        harness.cleanup(server, default)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
