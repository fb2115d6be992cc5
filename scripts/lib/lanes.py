"""Run nox sessions on two lanes at once and print where the time went.

The machine CI runs on has two cores, and most sessions spend their time waiting on a
server, a JVM's start or a sleep in a fault test, so two sessions at a time finish the
suite in about two thirds of the serial time. Every harness takes free ports, so sessions
never collide. Lanes take the next session from one queue, longest expected first; sessions
that start a JVM (Cassandra, Neo4j) run one at a time, so no two JVMs compete for the cores.

Usage: ``python scripts/lib/lanes.py [--budget MINUTES [--enforce-budget]] [--lanes N]
[SESSION ...]``
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / ".work" / "logs"
TIMES = ROOT / ".work" / "times.json"
TABLE = ROOT / ".work" / "times.md"
TAIL_LINES = 120

JVM = re.compile(r"cassandra|neo4j")
"""Sessions that start a JVM: one at a time (whichever lane is free takes the next)."""

ESTIMATE_MINUTES: dict[str, float] = {
    "conformance(cassandra_cluster": 8.5,
    "conformance(neo4j": 6.0,
    "conformance(cassandra": 5.5,
    "conformance(redis_cluster": 3.0,
    "conformance(ferretdb": 2.7,
    "conformance(mongo": 3.0,
    "conformance(sqlite": 2.5,
    "conformance(memory": 0.3,
    "conformance(oracle": 0.3,
    "conformance(mssql": 0.3,
    "conformance_tc(backend='cassandra')": 3.0,
    "conformance_tc(backend='neo4j')": 1.5,
    "conformance_tc": 1.0,
    "conformance_tc(backend='mssql')": 0.3,
    "conformance_tc(backend='oracle')": 0.3,
    "adk": 2.0,
    "openai-agents-sdk-tests": 1.0,
    "agent-framework-strands": 2.7,
    "unit-3.11": 3.2,
    "unit": 2.0,
    "longterm(cassandra": 2.0,
    "longterm(neo4j": 1.5,
    "longterm": 0.8,
    "reliability": 1.5,
    "typecheck": 1.0,
    "docs": 1.5,
    "lint": 0.3,
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
    first_failure: str = ""  # a failed session's first failing test (or failed command)


class Queue:
    """The sessions not started yet, longest expected first. A lane takes the first one it
    may run: a JVM session only while no other lane runs one."""

    def __init__(self, sessions: list[str], previous: dict[str, float]) -> None:
        self._waiting = sorted(sessions, key=lambda s: -estimate(s, previous))
        self._jvm_busy = False
        self._changed = threading.Condition()

    def take(self) -> str | None:
        """The next session for a free lane (blocks while only JVM sessions wait and one
        runs); None when nothing is left."""
        with self._changed:
            while self._waiting:
                for session in self._waiting:
                    if not (JVM.search(session) and self._jvm_busy):
                        self._waiting.remove(session)
                        self._jvm_busy |= bool(JVM.search(session))
                        return session
                self._changed.wait()
            return None

    def done(self, session: str) -> None:
        """``session`` finished: a waiting JVM session may start."""
        with self._changed:
            if JVM.search(session):
                self._jvm_busy = False
            self._changed.notify_all()


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


def run_lane(lane: int, queue: Queue, results: list[Result], lock: threading.Lock) -> None:
    """Take sessions from the queue until it is empty; record each one's time and status."""
    while (session := queue.take()) is not None:
        log = LOGS / (re.sub(r"[^A-Za-z0-9_.-]+", "_", session) + ".log")
        start = time.monotonic()
        with lock:
            print(f"[lane {lane}] start  {session}", flush=True)
        with log.open("w") as out:
            code = subprocess.call(
                ["nox", "-s", session], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
            )
        queue.done(session)
        seconds = time.monotonic() - start
        text = log.read_text(errors="replace")
        status = "failed" if code else "skipped" if SKIPPED.search(text) else "passed"
        with lock:
            results.append(Result(session, lane, seconds, status, first_failure(text, code)))
            print(f"[lane {lane}] {status:6} {session} in {_clock(seconds)}", flush=True)
            if code != 0:
                tail = text.splitlines()[-TAIL_LINES:]
                print(f"---- {session}: last {len(tail)} lines of {log}", flush=True)
                print("\n".join(tail), flush=True)
                print(f"---- end of {session}", flush=True)


FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)
FAILURE_HEADER = re.compile(r"^_{3,} ((?:ERROR at \w+ of )?\S*test\S*) _{3,}$", re.M)
FAILED_COMMAND = re.compile(r"^nox > Command (.{0,120})", re.M)


def first_failure(text: str, code: int) -> str:
    """The first failing test pytest names (its short summary, else its first failure's
    header), else the first nox command that failed; empty for a session that passed."""
    if code == 0:
        return ""
    for pattern in (FAILED_TEST, FAILURE_HEADER, FAILED_COMMAND):
        match = pattern.search(text)
        if match:
            return match.group(1)
    return f"exit code {code}"


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def table(results: list[Result], wall: float) -> str:
    """The per-session time table, slowest first, with each lane's total and the wall."""
    lines = ["", "## Where the time went (per nox session, slowest first)", ""]
    lines += ["| session | lane | m:ss | status |", "|---|---:|---:|---|"]
    for r in sorted(results, key=lambda r: -r.seconds):
        status = f"{r.status}: {r.first_failure}" if r.first_failure else r.status
        lines.append(f"| {r.session} | {r.lane} | {_clock(r.seconds)} | {status} |")
    lines.append("")
    for lane in sorted({r.lane for r in results}):
        busy = sum(r.seconds for r in results if r.lane == lane)
        lines.append(f"lane {lane}: {_clock(busy)} busy")
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
    parser.add_argument(
        "--enforce-budget", action="store_true", help="exit 1 when the run takes longer"
    )
    args = parser.parse_args(argv)
    sessions = [*(args.sessions or default_sessions()), *args.also]
    previous: dict[str, float] = {}
    if TIMES.exists():
        previous = {r["session"]: r["seconds"] for r in json.loads(TIMES.read_text())["sessions"]}
    LOGS.mkdir(parents=True, exist_ok=True)
    queue = Queue(sessions, previous)
    print(f"{len(sessions)} sessions on {args.lanes} lanes, longest expected first")
    results: list[Result] = []
    lock = threading.Lock()
    start = time.monotonic()
    threads = [
        threading.Thread(target=run_lane, args=(i, queue, results, lock))
        for i in range(max(1, args.lanes))
    ]
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
    over = (
        args.budget is not None
        and (time.time() - args.since if args.since is not None else wall) > args.budget * 60
    )
    if over and args.enforce_budget:
        print(f"\nover the {args.budget:.0f} min budget (--enforce-budget): failing the run")
        return 1
    if failed:
        print(f"\nfailed sessions ({len(failed)}): " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
