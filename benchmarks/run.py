"""The ``bench`` session: chatmem's turn against the bare driver's, in one run.

A turn is: add a user message, add an assistant message, read the window of 20, on a
conversation already holding H messages. The floor is the bare driver doing the same work in
its best form (append, append, read the last 20). Rounds of chatmem and floor alternate so
both see the same machine noise; the table reports turns/s and chatmem/floor.

Usage: python -m benchmarks.run [backend ...] [--turns N] [--rounds R] [--out FILE]
"""

from __future__ import annotations

import argparse
import importlib
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from chatmem.core import AssistantMessage, MessageWindowChatMemory, UserMessage
from conformance_tests.harness import Unavailable
from conformance_tests.plugin import load_harness, provision

H_VALUES = (10, 1_000, 10_000)
WARMUP_TURNS = 30


def _seed_messages(h: int) -> list:
    return [
        UserMessage(f"seed message {i}") if i % 2 == 0 else AssistantMessage(f"seed message {i}")
        for i in range(h)
    ]


def _chatmem_turn(memory: MessageWindowChatMemory, cid: str) -> Callable[[], None]:
    user = UserMessage("What is the weather like in Lisbon next week?")
    reply = AssistantMessage("Sunny and about 22 degrees, with a light breeze.")

    def turn() -> None:
        memory.add(cid, user)
        memory.add(cid, reply)
        window = memory.get(cid)
        assert len(window) <= 20

    return turn


def bench_backend(name: str, turns: int, rounds: int) -> list[dict]:
    harness = load_harness(name)
    server = provision(harness, Path(tempfile.mkdtemp(prefix=f"chatmem-bench-{name}-")))
    floor_module = importlib.import_module(f"benchmarks.backends.{name}")
    rows = []
    try:
        floor = floor_module.make_floor(server)
        for h in H_VALUES:
            repo = harness.make_repository(server)
            memory = MessageWindowChatMemory(repo, max_messages=20)
            cid_chatmem, cid_floor = f"bench-chatmem-{h}", f"bench-floor-{h}"
            repo.save_all(cid_chatmem, _seed_messages(h))
            floor.seed(cid_floor, h)
            chatmem_turn = _chatmem_turn(memory, cid_chatmem)
            for _ in range(WARMUP_TURNS):
                chatmem_turn()
                floor.turn(cid_floor)
            ours, base = [], []
            for _ in range(rounds):
                t0 = time.perf_counter()
                for _ in range(turns):
                    chatmem_turn()
                ours.append(turns / (time.perf_counter() - t0))
                t0 = time.perf_counter()
                for _ in range(turns):
                    floor.turn(cid_floor)
                base.append(turns / (time.perf_counter() - t0))
            chat_tps, floor_tps = statistics.median(ours), statistics.median(base)
            rows.append(
                {
                    "backend": name,
                    "server": server.label,
                    "H": h,
                    "chatmem": chat_tps,
                    "floor": floor_tps,
                    "ratio": chat_tps / floor_tps,
                }
            )
            print(
                f"{name:<10} H={h:<6} chatmem {chat_tps:9.0f} turns/s  floor {floor_tps:9.0f}"
                f" turns/s  ratio {chat_tps / floor_tps:5.2f}",
                flush=True,
            )
            harness.cleanup(server, repo)
        floor.close()
    finally:
        server.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backends", nargs="*", default=["sqlite"])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/bench.md")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    skipped: list[str] = []
    for name in args.backends:
        try:
            rows += bench_backend(name, args.turns, args.rounds)
        except Unavailable as exc:
            skipped.append(f"{name}: not run ({exc})")
            print(skipped[-1], file=sys.stderr)
    lines = [
        f"# chatmem bench ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, Python "
        f"{platform.python_version()}, {args.rounds} rounds x {args.turns} turns, median)",
        "",
        "Turn = add user, add assistant, read the window of 20, on a conversation holding H.",
        "",
        "| backend | server | H | chatmem turns/s | floor turns/s | ratio |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['backend']} | {r['server']} | {r['H']} | {r['chatmem']:.0f} | {r['floor']:.0f} "
        f"| {r['ratio']:.2f} |"
        for r in rows
    ]
    lines += [f"\n{s}" for s in skipped]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
