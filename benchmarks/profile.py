"""Where a chatmem turn spends its time on one backend: cProfile of N turns, as text.

``python -m benchmarks.profile <backend> --h 1000 [--turns 500] [--chat-turn] [--out FILE]``
starts the backend's server as the bench does, seeds a conversation with H messages, runs the
bench's turn N times under cProfile (after a warm-up) and writes the top functions by
cumulative and by own time, plus µs per turn, to ``.work/bench/profile-<backend>.txt``.
``--chat-turn`` profiles the ``ChatTurn`` contender (one read, one append) instead of the
window memory's add, add, get.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
import time
from pathlib import Path

from benchmarks._workload import (
    ChatmemContender,
    ChatTurnContender,
    make_messages,
    turn_pairs,
)
from chatmem.testing.harness import unique_suffix
from chatmem.testing.plugin import load_harness, provision


def profile(backend: str, h: int, turns: int, top: int, chat_turn: bool = False) -> str:
    """The report text for ``turns`` chatmem turns on ``backend`` at history length ``h``."""
    harness = load_harness(backend)
    server = provision(harness, Path(tempfile.mkdtemp(prefix=f"chatmem-profile-{backend}-")))
    try:
        repo = harness.make_repository(server)
        chat = ChatTurnContender(repo) if chat_turn else ChatmemContender(repo)
        cid = f"profile-{unique_suffix()}"
        chat.seed(cid, make_messages(h))
        pairs = turn_pairs()
        for i in range(30):
            chat.turn(cid, *pairs[i % len(pairs)])
        t0 = time.perf_counter()
        for i in range(turns):
            chat.turn(cid, *pairs[i % len(pairs)])
        plain_us = (time.perf_counter() - t0) / turns * 1e6
        prof = cProfile.Profile()
        prof.enable()
        for i in range(turns):
            chat.turn(cid, *pairs[i % len(pairs)])
        prof.disable()
        harness.cleanup(server, repo)
    finally:
        server.stop()
    out = io.StringIO()
    out.write(
        f"# {backend} ({server.label}), H={h}, {turns} turns, mode {chat.mode}\n"
        f"# {plain_us:.0f} us per turn without the profiler (wall clock, shared machine)\n\n"
    )
    for key in ("cumulative", "tottime"):
        out.write(f"## top {top} by {key}\n")
        stats = pstats.Stats(prof, stream=out)
        stats.strip_dirs().sort_stats(key).print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("backend")
    parser.add_argument("--h", type=int, default=1_000)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", default=None)
    parser.add_argument("--chat-turn", action="store_true", help="profile the ChatTurn turn")
    args = parser.parse_args(argv)
    text = profile(args.backend, args.h, args.turns, args.top, args.chat_turn)
    out = Path(args.out or f".work/bench/profile-{args.backend}.txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text.split("## top", 1)[0] + f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
