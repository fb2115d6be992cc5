"""Tables and plot from ``benchmarks/results/latest.json``, so they can be regenerated.

``python -m benchmarks.report [results.json]`` draws ``docs/assets/bench.png`` (turns/s
against H on log axes, one panel per backend, chatmem vs floor vs peers) and rewrites the
part of docs/performance.md between the ``<!-- bench:results -->`` and
``<!-- /bench:results -->`` markers: that page is the tables' one copy (README links to it).
matplotlib is imported only here (the bench session installs it).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

START, END = "<!-- bench:results -->", "<!-- /bench:results -->"
DOC = Path("docs/performance.md")
PLOT = Path("docs/assets/bench.png")
IMAGE = "assets/bench.png"  # the plot, relative to DOC


def _n(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _r(value: float) -> str:
    return f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"


def short_server(label: str) -> str:
    """``Redis 8.2.3 (ReJSON ...)`` -> ``Redis 8.2.3``; a stand-in is named as one."""
    stand_in = re.search(r"stand-in: ([^)]*)", label)
    if stand_in:
        return f"MongoDB stand-in {stand_in[1]}"
    return label.split(" (")[0]


def _clean(reason: str) -> str:
    return re.sub(r" \(/[^)]*\)", "", reason)  # file paths of this machine say nothing


def _guarded(row: dict[str, Any]) -> str:
    """The ratio to the guarded floor; ``add_and_get``'s is to the pipelined floor (marked
    p), or to the guarded one where the backend has no pipelined floor (marked g)."""
    if "ratio_to_pipelined_floor" in row:
        mark = "p" if row.get("pipelined_floor") else "g"
        return f"{_r(row['ratio_to_pipelined_floor'])} {mark}"
    if "ratio_to_guarded_floor" not in row:  # results from before the guarded floor
        return "n/a"
    return _r(row["ratio_to_guarded_floor"])


def table(results: dict[str, Any]) -> str:
    """One row per backend and contender: turns/s and ratio at each H, reads at the top H."""
    hs: list[int] = results["settings"]["H"]
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    servers: dict[str, str] = {}
    for row in results["rows"]:
        by[(row["backend"], row["contender"])][row["H"]] = row
        servers[row["backend"]] = row["server"]
    head_h = " / ".join(f"{h:,}" for h in hs)
    lines = [
        f"| backend | contender | turns/s, H = {head_h} | x naive floor, H = {head_h} "
        f"| x guarded floor, H = {head_h} | msgs / KB read per turn, H = {hs[-1]:,} |",
        "|---|---|---|---|---|---:|",
    ]
    order = {"chatmem": 0, "floor": 1, "guarded": 2, "pipelined": 3, "peer": 4}
    keys = sorted(
        by, key=lambda k: (list(servers).index(k[0]), order[next(iter(by[k].values()))["kind"]])
    )
    for backend, contender in keys:
        cells = by[(backend, contender)]
        tps = " / ".join(_n(cells[h]["turns_per_s"]) if h in cells else "n/a" for h in hs)
        ratio = " / ".join(_r(cells[h]["ratio_to_floor"]) if h in cells else "n/a" for h in hs)
        guarded = " / ".join(_guarded(cells[h]) if h in cells else "n/a" for h in hs)
        last = cells.get(hs[-1])
        reads = "n/a"
        if last:
            reads = f"{last['msgs_read_per_turn']:,} / {last['bytes_read_per_turn'] / 1024:,.1f}"
            if last.get("wire_bytes_read_per_turn") is not None:  # what the driver received
                reads += f" (replies {last['wire_bytes_read_per_turn'] / 1024:,.1f})"
        name = f"**{contender}**" if contender.startswith("chatmem") else contender
        lines.append(
            f"| {short_server(servers[backend])} | {name} | {tps} | {ratio} | {guarded} | {reads} |"
        )
    return "\n".join(lines)


def not_run(results: dict[str, Any]) -> str:
    from benchmarks.peers import explain

    lines = [
        f"- {r['backend']}: {r['contender']}: not run: "
        f"{_clean(explain(r['contender'], r['reason']))}"
        for r in results["not_run"]
    ]
    for row in results.get("async", []):
        if "not_run" in row:
            lines.append(f"- {row['backend']}: async x100: not run: {_clean(row['not_run'])}")
        else:
            lines.append(
                f"- {row['backend']}: async x{row['conversations']}: "
                f"{row['async_turns_per_s']:,.0f} turns/s against "
                f"{row['sync_threads_turns_per_s']:,.0f} on threads "
                f"(x{row['ratio_async_to_sync']:.2f})"
            )
    return "\n".join(lines)


def section(results: dict[str, Any], image: str) -> str:
    """The generated Markdown: when and where it ran, the table, the plot, what did not run."""
    m, s, v = results["machine"], results["settings"], results["versions"]
    when = results["started"].replace("T", " ").removesuffix("+00:00")
    return "\n".join(
        [
            START,
            f"Measured {when} UTC on {m['system']} ({m['cpus']} CPUs, shared with other "
            f"work), Python {m['python']}, chatmem {v.get('chatmem', '?')} "
            f"(turn: {s['chatmem_mode']}), median of {s['rounds']} alternating rounds of up to "
            f"{s['turns_per_round']} turns or {s['round_seconds']} s. Generated by "
            "`python -m benchmarks.report` from `benchmarks/results/latest.json`.",
            "",
            table(results),
            "",
            "Servers: "
            + "; ".join(sorted({r["server"] for r in results["rows"]}))
            + ". Ratios are to the floors of the same backend in the same run; for **chatmem "
            "add_and_get** the guarded column is its ratio to the pipelined floor (p: its "
            "second append and window read in one round trip) or, where the backend has "
            "none, to the guarded floor (g).",
            "",
            f"![turns/s against history length, per backend]({image})",
            "",
            not_run(results),
            END,
        ]
    )


def plot(results: dict[str, Any], path: Path) -> None:
    """One panel per backend: turns/s against H (log-log), chatmem vs floor vs peers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, dict[str, list[tuple[int, float, str]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for row in results["rows"]:
        series[row["backend"]][row["contender"]].append((row["H"], row["turns_per_s"], row["kind"]))
    n = len(series)
    cols = min(n, 4)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    style = {
        "chatmem": ("C0", "-", 2.6),
        "floor": ("black", "--", 1.6),
        "guarded": ("dimgray", "-", 1.6),
        "pipelined": ("darkgray", "-.", 1.4),
    }
    by_name = {
        "chatmem ChatTurn": ("C0", "-.", 2.0),
        "chatmem add_and_get": ("C0", ":", 2.0),
    }
    for ax, (backend, contenders) in zip(axes.flat, series.items(), strict=False):
        for i, (name, points) in enumerate(sorted(contenders.items())):
            points.sort()
            kind = points[0][2]
            color, line, width = by_name.get(name) or style.get(kind, (f"C{i + 1}", ":", 1.2))
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                line,
                color=color,
                linewidth=width,
                marker="o",
                markersize=3,
                label=name,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(backend)
        ax.set_xlabel("H (messages stored)")
        ax.set_ylabel("turns/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="lower left")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.suptitle(f"chatmem bench {results['started'][:10]}: turn = add, add, read", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rewrite(doc: Path, generated: str) -> None:
    """Replace the marked block in ``doc`` (it must already hold the markers)."""
    text = doc.read_text()
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{doc}: no {START} ... {END} block to rewrite")
    doc.write_text(pattern.sub(lambda _: generated, text, count=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("results", nargs="?", default="benchmarks/results/latest.json")
    parser.add_argument("--no-docs", dest="docs", action="store_false")
    parser.add_argument("--plot", default=str(PLOT))
    args = parser.parse_args(argv)
    results = json.loads(Path(args.results).read_text())
    plot(results, Path(args.plot))
    if args.docs:
        rewrite(DOC, section(results, IMAGE))
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
