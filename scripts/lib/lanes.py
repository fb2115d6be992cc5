"""Run nox sessions on two lanes at once and print where the time went.

The machine CI runs on has two cores, and most sessions spend their time waiting on a
server, a JVM's start or a sleep in a fault test, so two sessions at a time finish the
suite in about two thirds of the serial time. Every harness takes free ports, so sessions
never collide; sessions that start a JVM (Cassandra, Neo4j) stay on one lane so that no
two JVMs compete for the cores at once.

Usage: ``python scripts/lib/lanes.py [--budget MINUTES] [--lanes N] [SESSION ...]``
(default: nox's default sessions). Each session's output goes to ``.work/logs/``; a failed
session's tail is printed; the time table comes last and is written to
``.work/times.json`` and ``.work/times.md``. Exit status: 1 when any session failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / ".work" / "logs"
TIMES = ROOT / ".work" / "times.json"
TABLE = ROOT / ".work" / "times.md"
TAIL_LINES = 120

JVM = re.compile(r"cassandra|neo4j")
"""Sessions that start a JVM: one at a time, on lane 0."""

ESTIMATE_MINUTES: dict[str, float] = {
    "conformance(cassandra_cluster": 9.0,
    "conformance(neo4j": 6.0,
    "conformance(cassandra": 5.0,
    "conformance_tc": 1.5,
    "longterm(cassandra": 1.5,
    "longterm(neo4j": 1.5,
    "typecheck": 2.5,
    "unit": 2.5,
    "reliability": 2.0,
    "conformance(redis_cluster": 2.0,
    "docs": 1.5,
}
"""First guesses at each session's minutes (longest prefix wins), used to balance the
lanes on a fresh machine; a previous run's ``.work/times.json`` replaces them."""
DEFAULT_MINUTES = 1.0
SKIPPED = re.compile(r"^nox > Session \S+ skipped", re.M)


@dataclass
class Result:
    """One finished session."""

    session: str
    lane: int
    seconds: float
    status: str  # "passed", "failed", "skipped"


@dataclass
class Lane:
    """Sessions run one after another in one nox process each."""

    index: int
    sessions: list[str] = field(default_factory=list)
    planned: float = 0.0


def default_sessions() -> list[str]:
    """nox's default sessions, in the noxfile's order."""
    out = subprocess.run(
        ["nox", "--list", "--json"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [s["session"] for s in json.loads(out)]


def estimate(session: str, previous: dict[str, float]) -> float:
    """Expected minutes of ``session``: last run's time when known, else the table's."""
    if session in previous:
        return previous[session] / 60
    prefixes = [p for p in ESTIMATE_MINUTES if session.startswith(p)]
    return ESTIMATE_MINUTES[max(prefixes, key=len)] if prefixes else DEFAULT_MINUTES


def plan(sessions: list[str], lanes: int, previous: dict[str, float]) -> list[Lane]:
    """JVM sessions on lane 0, then the rest longest first onto the least loaded lane."""
    result = [Lane(i) for i in range(lanes)]
    ordered = sorted(sessions, key=lambda s: -estimate(s, previous))
    for session in ordered:
        lane = result[0] if JVM.search(session) else min(result, key=lambda lane: lane.planned)
        lane.sessions.append(session)
        lane.planned += estimate(session, previous)
    return result


def run_lane(lane: Lane, results: list[Result], lock: threading.Lock) -> None:
    """Run the lane's sessions in turn; record each one's time and status."""
    for session in lane.sessions:
        log = LOGS / (re.sub(r"[^A-Za-z0-9_.-]+", "_", session) + ".log")
        start = time.monotonic()
        with lock:
            print(f"[lane {lane.index}] start  {session}", flush=True)
        with log.open("w") as out:
            code = subprocess.call(
                ["nox", "-s", session], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
            )
        seconds = time.monotonic() - start
        text = log.read_text(errors="replace")
        status = "failed" if code else "skipped" if SKIPPED.search(text) else "passed"
        with lock:
            results.append(Result(session, lane.index, seconds, status))
            print(f"[lane {lane.index}] {status:6} {session} in {_clock(seconds)}", flush=True)
            if code != 0:
                tail = text.splitlines()[-TAIL_LINES:]
                print(f"---- {session}: last {len(tail)} lines of {log}", flush=True)
                print("\n".join(tail), flush=True)
                print(f"---- end of {session}", flush=True)


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def table(results: list[Result], wall: float) -> str:
    """The per-session time table, slowest first, with each lane's total and the wall."""
    lines = ["", "## Where the time went (per nox session, slowest first)", ""]
    lines += ["| session | lane | m:ss | status |", "|---|---:|---:|---|"]
    for r in sorted(results, key=lambda r: -r.seconds):
        lines.append(f"| {r.session} | {r.lane} | {_clock(r.seconds)} | {r.status} |")
    for lane in sorted({r.lane for r in results}):
        busy = sum(r.seconds for r in results if r.lane == lane)
        lines.append(f"\nlane {lane}: {_clock(busy)} busy")
    lines.append(f"sessions: {_clock(sum(r.seconds for r in results))} serial, {_clock(wall)} wall")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the sessions; print the table; 1 when a session failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="*", help="nox sessions (default: nox's defaults)")
    parser.add_argument("--also", nargs="*", default=[], help="sessions run beside the defaults")
    parser.add_argument("--since", type=float, default=None, help="epoch the whole run began")
    parser.add_argument("--lanes", type=int, default=int(os.environ.get("CHATMEM_LANES", "2")))
    parser.add_argument("--budget", type=float, default=None, help="minutes for the whole run")
    args = parser.parse_args(argv)
    sessions = [*(args.sessions or default_sessions()), *args.also]
    previous: dict[str, float] = {}
    if TIMES.exists():
        previous = {r["session"]: r["seconds"] for r in json.loads(TIMES.read_text())["sessions"]}
    LOGS.mkdir(parents=True, exist_ok=True)
    lanes = plan(sessions, max(1, args.lanes), previous)
    for lane in lanes:
        print(f"[lane {lane.index}] {len(lane.sessions)} sessions, ~{lane.planned:.0f} min planned")
    results: list[Result] = []
    lock = threading.Lock()
    start = time.monotonic()
    threads = [threading.Thread(target=run_lane, args=(lane, results, lock)) for lane in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    TIMES.write_text(
        json.dumps(
            {"wall": wall, "sessions": [r.__dict__ for r in results]}, indent=1, sort_keys=True
        )
    )
    report = table(results, wall)
    if args.since is not None:
        whole = time.time() - args.since
        report += f"\nwhole run, installs included: {_clock(whole)}"
        if args.budget is not None:
            verdict = "within" if whole <= args.budget * 60 else "OVER"
            report += f" ({verdict} the {args.budget:.0f} min budget)"
    TABLE.write_text(report + "\n")
    print(report)
    failed = [r.session for r in results if r.status == "failed"]
    if failed:
        print(f"\nfailed sessions ({len(failed)}): " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
