"""What a Redis append and turn cost, server and client, for one or more source trees.

``python -m benchmarks.redis_costs [--tree DIR ...] [--h 1000] [--turns 300] [--passes 3]``
starts one Redis (the harness's route) and, for each pass, runs a child process per tree
(``DIR``'s packages first on ``sys.path``; no ``--tree``: the installed chatmem) in turn, so
every tree sees the same machine. Each child reports, for single-message appends on a
conversation of H messages: the script's server time (the median of ``SLOWLOG``, which
times every command, the mean of ``INFO commandstats``, and the server thread's CPU time
per append, I/O included, from ``/proc``: the server runs locally) and the ``redis.call``s each
append makes (the commands the scripts ran, per script call); then, per contender (the window
memory's add, add, get; add + ``add_and_get``; ``ChatTurn``; the naive and guarded floors),
the wall clock and the client's CPU (``process_time``) per turn, and the turn's speed against
its floor, per pass. Figures print as the median over passes (then the range). Nothing is
written to ``benchmarks/results``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOTS = ("chatmem_core", "chatmem_testing", "chatmem_redis")


def _server_cpu_ns(admin: Any) -> int:
    """CPU time the server's main thread has run (``/proc/<pid>/schedstat``): unlike the
    server's own timings, not inflated when a loaded machine preempts it."""
    pid = admin.info("server")["process_id"]
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def _child(url: str, h: int, turns: int) -> dict[str, Any]:
    """One tree's figures on the server at ``url``."""
    import redis

    from benchmarks._workload import (
        AddAndGetContender,
        ChatmemContender,
        ChatTurnContender,
        make_messages,
        turn_pairs,
    )
    from benchmarks.backends.redis import RedisFloor, RedisGuardedFloor
    from chatmem.redis import RedisChatMemoryRepository
    from chatmem.testing.harness import ServerInfo, unique_suffix

    token = unique_suffix()
    admin = redis.Redis.from_url(url)
    repo = RedisChatMemoryRepository.from_url(
        url, key_prefix=f"cost-{token}:", index_name=f"cost-{token}"
    )
    seed = make_messages(h)
    pairs = turn_pairs()
    out: dict[str, Any] = {}

    # server time of single-message appends
    cid = f"append-{token}"
    repo.save_all(cid, seed)
    for i in range(30):
        repo.append(cid, [pairs[i % len(pairs)][0]])
    admin.config_set("slowlog-log-slower-than", 0)
    admin.config_set("slowlog-max-len", 4 * turns + 100)
    admin.slowlog_reset()
    admin.config_resetstat()
    cpu0 = _server_cpu_ns(admin)
    for i in range(turns):
        repo.append(cid, [pairs[i % len(pairs)][i % 2]])
    cpu = _server_cpu_ns(admin) - cpu0
    stats = admin.info("commandstats")
    log = admin.slowlog_get(4 * turns + 100)
    admin.config_set("slowlog-log-slower-than", 10000)
    evals = [e["duration"] for e in log if e["command"].split(b" ", 1)[0].upper() == b"EVALSHA"]
    script = stats.get("cmdstat_evalsha", {"calls": 0, "usec_per_call": 0.0})
    inner = {
        name[len("cmdstat_") :]: s["calls"]
        for name, s in stats.items()
        if name != "cmdstat_evalsha" and not name.startswith(("cmdstat_config", "cmdstat_slowlog"))
    }
    calls = max(1, script["calls"])
    out["append_server_us_median"] = statistics.median(evals) if evals else None
    out["append_server_us_mean"] = script["usec_per_call"]
    out["append_server_cpu_us"] = cpu / turns / 1000
    out["redis_calls_per_append"] = sum(inner.values()) / calls
    out["inner_commands"] = {k: v / calls for k, v in sorted(inner.items())}

    server = ServerInfo("Redis", "", url, "env")
    contenders: list[Any] = [
        ChatmemContender(repo, "window memory"),
        AddAndGetContender(repo, "add_and_get"),
        ChatTurnContender(repo, "ChatTurn"),
        RedisFloor(server),
        RedisGuardedFloor(server),
    ]
    for c in contenders:
        c_cid = f"turn-{token}-{c.name}"
        c.seed(c_cid, seed)
        for i in range(30):
            c.turn(c_cid, *pairs[i % len(pairs)])
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for i in range(turns):
            c.turn(c_cid, *pairs[i % len(pairs)])
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        out[c.name] = {"wall_us": wall / turns * 1e6, "cpu_us": cpu / turns * 1e6}
        c.close()
    for key in admin.scan_iter(match=f"cost-{token}:*", count=1000):
        admin.delete(key)
    admin.execute_command("FT.DROPINDEX", f"cost-{token}")
    repo.close()
    admin.close()
    return out


def _run_child(tree: str | None, url: str, h: int, turns: int) -> dict[str, Any]:
    env = dict(os.environ)
    if tree:
        roots = [str(Path(tree) / r) for r in ROOTS]
        env["PYTHONPATH"] = os.pathsep.join([*roots, env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "benchmarks.redis_costs", "--child", url]
    cmd += ["--h", str(h), "--turns", str(turns)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def _summary(label: str, runs: list[dict[str, Any]]) -> str:
    def span(values: list[float]) -> str:
        return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"

    lines = [f"## {label}"]
    lines.append(
        f"append server time: median {span([r['append_server_us_median'] for r in runs])} us, "
        f"mean {span([r['append_server_us_mean'] for r in runs])} us, server CPU "
        f"{span([r['append_server_cpu_us'] for r in runs])} us (with the round trip's I/O); "
        f"redis.calls per append {span([r['redis_calls_per_append'] for r in runs])} "
        f"({runs[-1]['inner_commands']})"
    )
    for name in ("window memory", "add_and_get", "ChatTurn", "floor", "guarded floor"):
        wall = [r[name]["wall_us"] for r in runs]
        cpu = [r[name]["cpu_us"] for r in runs]
        lines.append(f"{name:14} wall {span(wall)} us/turn, client CPU {span(cpu)} us/turn")
    for name, floor in (
        ("window memory", "guarded floor"),
        ("ChatTurn", "floor"),
        ("add_and_get", "floor"),
    ):
        ratios = [r[floor]["wall_us"] / r[name]["wall_us"] for r in runs]
        lines.append(
            f"{name} vs {floor}: {statistics.median(ratios):.2f}x "
            f"({min(ratios):.2f}-{max(ratios):.2f})"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tree", action="append", default=[])
    parser.add_argument("--h", type=int, default=1_000)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.h, args.turns)))
        return 0
    from chatmem.testing.plugin import load_harness, provision

    harness = load_harness("redis")
    server = provision(harness, Path(tempfile.mkdtemp(prefix="chatmem-redis-costs-")))
    trees: list[str | None] = args.tree or [None]
    results: dict[str | None, list[dict[str, Any]]] = {t: [] for t in trees}
    try:
        assert server.url is not None
        for _ in range(args.passes):
            for tree in trees:
                results[tree].append(_run_child(tree, server.url, args.h, args.turns))
    finally:
        server.stop()
    print(f"# {server.label}, H={args.h}, {args.turns} turns x {args.passes} passes")
    for tree in trees:
        print(_summary(tree or "installed", results[tree]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
