"""The ``bench`` session: chatmem's turn against its bare-driver floor and its peers, one run.

A turn is: add a user message, add an assistant message, read what goes to the model, on a
conversation that really holds H messages (seeded with ``save_all``; every message the turns
add is kept). chatmem reads its window of 20 (``MessageWindowChatMemory(repo,
max_messages=20, keep_history=True)``, or ``append`` x2 + ``window_get`` until core has that
option: the same storage work). The floor (``benchmarks/backends/<name>.py``) is the bare
driver doing the same work in its best form: the same durability settings, store-assigned
order, the same JSON payload per message, the window of 20 read and decoded (each floor's
docstring says how; the MongoDB one counts positions in the client, as the stand-in offers
nothing else in one round trip). Beside it each backend has a guarded floor
(``make_guarded_floor``: chatmem's read shape, system messages kept, and an order correct
under concurrent writers) and may have a pipelined floor (``make_pipelined_floor``: the
guarded floor's second append and read in one round trip), which ``add_and_get`` is measured
against. Peers (``benchmarks/peers.py``) read their whole history.

Rounds alternate between contenders (rotated order) so all see the same machine noise; the
reported turns/s is the median of the rounds, the ratios are to the floors of the same run.
Msgs and bytes read per turn are counted on one untimed turn (see ``_workload``).

Usage: python -m benchmarks.run [backend ...] [--quick] [--async] [--no-peers] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import os
import platform
import sqlite3
import sys
import tempfile
import traceback
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks._workload import (
    H_VALUES,
    WINDOW,
    WIRE,
    AddAndGetContender,
    ChatmemContender,
    ChatTurnContender,
    accepts_keep_history,
    measure,
    turns_per_conversation,
)
from benchmarks._workload import make_messages as _make_messages
from benchmarks.async_load import run_async
from benchmarks.peers import NotRun, build_peers, explain
from chatmem.core import MessageWindowChatMemory
from chatmem.testing.harness import Unavailable, unique_suffix
from chatmem.testing.plugin import load_harness, provision

SCHEMA = 1
DEFAULT_OUT = "benchmarks/results/latest.json"
QUICK_OUT = ".work/bench/quick.json"  # a smoke run never replaces the committed results
DISTS = (
    "chatmem",
    "SQLAlchemy",
    "psycopg",
    "psycopg-binary",
    "PyMySQL",
    "redis",
    "pymongo",
    "cassandra-driver",
    "neo4j",
    "langchain-core",
    "langchain-community",
    "langchain-postgres",
    "langchain-redis",
    "langchain-mongodb",
    "langchain-neo4j",
    "cassio",
    "llama-index-core",
    "llama-index-storage-chat-store-sqlite",
    "llama-index-storage-chat-store-postgres",
    "llama-index-storage-chat-store-redis",
    "llama-index-storage-chat-store-mongo",
)


def versions() -> dict[str, str]:
    """Installed versions of chatmem, the drivers and the peers (absent ones left out)."""
    found = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in DISTS:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[dist] = metadata.version(dist)
    return found


def machine() -> dict[str, Any]:
    return {
        "node": platform.node(),
        "system": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def _new_cid(h: int) -> str:
    return f"bench-{h}-{unique_suffix()}"


def _cleanup(what: str, close: Any) -> None:
    """Drop a contender's data; a failure here is reported, never allowed to lose the rows."""
    try:
        close()
    except Exception as exc:
        print(f"cleanup of {what} failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def _warm_server(harness: Any, server: Any, floors: list[Any], args: argparse.Namespace) -> None:
    """Untimed turns of chatmem and the floor before the first H: a JVM server (Neo4j,
    Cassandra) compiles its hot paths during the first seconds, which would otherwise land
    on whichever H is measured first."""
    repo = harness.make_repository(server)
    try:
        measure(
            [ChatmemContender(repo), ChatTurnContender(repo), *floors],
            _make_messages(10),
            turns=10**6,
            rounds=1,
            round_seconds=args.server_warmup,
            warmup=0,
            new_cid=functools.partial(_new_cid, 0),
        )
    finally:
        _cleanup("warm-up", lambda: harness.cleanup(server, repo))


def bench_backend(
    name: str, args: argparse.Namespace
) -> tuple[list[dict[str, Any]], list[NotRun], list[dict[str, Any]]]:
    """Every contender on one backend's server at each H: (rows, not-run peers, async rows)."""
    harness = load_harness(name)
    WIRE.install(name)  # before the harness makes its client
    server = provision(harness, Path(tempfile.mkdtemp(prefix=f"chatmem-bench-{name}-")))
    rows: list[dict[str, Any]] = []
    not_run: list[NotRun] = []
    async_rows: list[dict[str, Any]] = []
    try:
        module = importlib.import_module(f"benchmarks.backends.{name}")
        floors = [module.make_floor(server), module.make_guarded_floor(server)]
        if hasattr(module, "make_pipelined_floor"):
            floors.append(module.make_pipelined_floor(server))
        peers, not_run = build_peers(name, server) if args.peers else ([], [])
        _warm_server(harness, server, floors, args)
        for h in args.h:
            repo = harness.make_repository(server)
            contenders: list[Any] = [ChatmemContender(repo), ChatTurnContender(repo)]
            if hasattr(MessageWindowChatMemory, "add_and_get"):
                contenders.append(AddAndGetContender(repo))
            contenders += floors
            seed = _make_messages(h)
            contenders += peers
            measured = measure(
                contenders,
                seed,
                turns=args.turns,
                rounds=args.rounds,
                round_seconds=args.round_seconds,
                warmup=args.warmup,
                new_cid=functools.partial(_new_cid, h),
            )
            tps = {m.contender.kind: m.turns_per_s for m in measured}
            floor_tps, guarded_tps = tps["floor"], tps["guarded"]
            for m in measured:
                if m.failed is not None:
                    not_run.append(NotRun(m.contender.name, explain(m.contender.name, m.failed)))
                    peers.remove(m.contender)
                    continue
                row = {
                    "backend": name,
                    "server": server.label,
                    "contender": m.contender.name,
                    "kind": m.contender.kind,
                    "H": h,
                    "turns_per_s": round(m.turns_per_s, 1),
                    "ratio_to_floor": round(m.turns_per_s / floor_tps, 3),
                    "ratio_to_guarded_floor": round(m.turns_per_s / guarded_tps, 3),
                    "msgs_read_per_turn": m.msgs_read,
                    "bytes_read_per_turn": m.bytes_read,
                    "wire_bytes_read_per_turn": m.wire_bytes_read if WIRE.measures(name) else None,
                    "conversations_seeded": m.conversations,
                    "max_stored_during_turns": m.max_stored,
                    "rounds": [round(r, 1) for r in m.rates],
                }
                if m.contender.kind == "chatmem":
                    row["mode"] = m.contender.mode
                if isinstance(m.contender, AddAndGetContender):  # one round trip per pair
                    against = "pipelined" if "pipelined" in tps else "guarded"
                    row["pipelined_floor"] = against == "pipelined"
                    row["ratio_to_pipelined_floor"] = round(m.turns_per_s / tps[against], 3)
                rows.append(row)
                print(
                    f"{name:<9} H={h:<6} {m.contender.name[:46]:<46} {m.turns_per_s:9.1f} "
                    f"turns/s  x{row['ratio_to_floor']:<6} g{row['ratio_to_guarded_floor']:<6} "
                    f"{m.msgs_read:>6} msgs "
                    f"{m.bytes_read:>9} B/turn",
                    flush=True,
                )
            _cleanup(f"{name} chatmem H={h}", lambda repo=repo: harness.cleanup(server, repo))
        for peer in peers:
            _cleanup(f"{name} {peer.name}", peer.close)
        for floor in floors:
            _cleanup(f"{name} {floor.name}", floor.close)
        if args.async_:
            async_rows = run_async(name, harness, server, quick=args.quick)
    finally:
        server.stop()
    return rows, not_run, async_rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("backends", nargs="*", default=["sqlite"])
    parser.add_argument("--quick", action="store_true", help="a smoke test: few turns")
    parser.add_argument("--async", dest="async_", action="store_true", help="also async x100")
    parser.add_argument("--no-peers", dest="peers", action="store_false")
    parser.add_argument("--turns", type=int, default=None, help="turns per round (cap)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--round-seconds", type=float, default=None, help="time cap per round")
    parser.add_argument("--h", type=int, nargs="+", default=list(H_VALUES))
    parser.add_argument("--out", default=None, help=f"{DEFAULT_OUT} ({QUICK_OUT} with --quick)")
    args = parser.parse_args(argv)
    args.out = args.out or (QUICK_OUT if args.quick else DEFAULT_OUT)
    args.turns = args.turns or (10 if args.quick else 200)
    args.rounds = args.rounds or (2 if args.quick else 9)  # more, shorter rounds: a steadier median
    args.round_seconds = args.round_seconds or (0.3 if args.quick else 1.0)
    args.warmup = 2 if args.quick else 20  # capped by round_seconds like a round
    args.server_warmup = 0.05 if args.quick else 3.0  # seconds per contender, once per server
    started = datetime.now(timezone.utc)
    rows: list[dict[str, Any]] = []
    not_run: list[dict[str, str]] = []
    async_rows: list[dict[str, Any]] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def write() -> None:  # after every backend, so an interrupted run keeps what it measured
        results = {
            "schema": SCHEMA,
            "started": started.isoformat(timespec="seconds"),
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(),
            "versions": versions(),
            "settings": {
                "quick": args.quick,
                "turns_per_round": args.turns,
                "rounds": args.rounds,
                "round_seconds": args.round_seconds,
                "window": WINDOW,
                "H": args.h,
                "turns_per_conversation": {str(h): turns_per_conversation(h) for h in args.h},
                "seed": "repository.save_all (chatmem), bulk insert (floor), add_messages/"
                "set_messages (peers)",
                "chatmem_mode": "keep_history" if accepts_keep_history() else "append+window_get",
                "bytes_read": "UTF-8 size of each returned message's compact JSON, its own form",
            },
            "rows": rows,
            "not_run": not_run,
            "async": async_rows
            or run_async(None, None, None, quick=args.quick, names=args.backends),
        }
        out.write_text(json.dumps(results, indent=1) + "\n")

    for name in args.backends:
        try:
            backend_rows, peers_not_run, backend_async = bench_backend(name, args)
        except Unavailable as exc:
            not_run.append({"backend": name, "contender": "*", "reason": f"server: {exc}"})
            print(f"{name}: not run ({exc})", file=sys.stderr)
            write()
            continue
        except Exception as exc:  # one backend failing must not lose the others' numbers
            traceback.print_exc()
            not_run.append({"backend": name, "contender": "*", "reason": f"error: {exc!r}"})
            write()
            continue
        rows += backend_rows
        async_rows += backend_async
        for p in peers_not_run:
            not_run.append({"backend": name, "contender": p.name, "reason": p.reason})
            print(f"{name}: {p.name}: not run: {p.reason}", file=sys.stderr)
        write()
    write()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
