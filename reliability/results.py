"""The results table: one row per backend, one column per property, rendered as Markdown.

``write_row`` stores a backend's row as JSON and re-renders ``results.md``/``results.json``
from every row of the same profile, so a run of several backends builds one table.
``python -m reliability.results DIR`` re-renders without running anything.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

COLUMNS = {
    "latency": "faults: latency",
    "reset": "faults: reset mid-write",
    "stall": "faults: stall (typed error within)",
    "restart": "restart under load",
    "scale_threads": "scale: threads",
    "scale_processes": "scale: processes",
    "corpus": "bad-input corpus",
    "async loop lag": "async twin at +100 ms (loop never blocked)",
}
ORDER = ["memory", "sqlite", "postgres", "mariadb", "redis", "mongo", "cassandra", "neo4j"]


def write_row(results_dir: Path, row: dict[str, Any]) -> Path:
    """Store ``row`` and re-render the profile's table; returns the Markdown path."""
    folder = results_dir / row["profile"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{row['backend']}.json"
    if path.exists():  # a partial run (-k ...) updates its cells and keeps the others
        old = json.loads(path.read_text())
        if old.get("server") == row["server"]:
            row = {**row, "columns": {**old["columns"], **row["columns"]}}
    path.write_text(json.dumps(row, indent=1, sort_keys=True))
    return render(folder)


def render(folder: Path) -> Path:
    """Write ``results.md`` and ``results.json`` from the rows in ``folder``."""
    rows = [json.loads(p.read_text()) for p in folder.glob("*.json") if p.name != "results.json"]
    rows.sort(key=lambda r: ORDER.index(r["backend"]) if r["backend"] in ORDER else 99)
    (folder / "results.json").write_text(json.dumps(rows, indent=1, sort_keys=True))
    lines = [
        "| backend | server | " + " | ".join(COLUMNS.values()) + " |",
        "|" + "---|" * (len(COLUMNS) + 2),
    ]
    for row in rows:
        cells = [cell(row["columns"].get(key)) for key in COLUMNS]
        lines.append(f"| {row['backend']} | {row['server']} | " + " | ".join(cells) + " |")
    times = sorted(r["ran_at"] for r in rows)
    hosts = sorted({f"{r['host']}, Python {r['python']}" for r in rows})
    span = times[0] if times[0] == times[-1] else f"{times[0]} to {times[-1]}"
    runs = [f"{span} on {'; '.join(hosts)}"]
    toxi = sorted({str(r["toxiproxy"]) for r in rows if r.get("toxiproxy")})
    lines += [
        "",
        f"Profile `{rows[0]['profile'] if rows else '?'}`; ran " + "; ".join(runs) + ".",
    ]
    if toxi:
        lines.append(f"Faults injected by Toxiproxy {', '.join(toxi)}.")
    md = folder / "results.md"
    md.write_text("\n".join(lines) + "\n")
    return md


def cell(data: dict[str, Any] | None) -> str:
    """``pass (detail)``, ``FAIL (detail)``, ``n/a (why)`` or ``not run``."""
    if not data:
        return "not run"
    passed, failed, skipped = data["pass"], data["fail"], data["skip"]
    details = data.get("details", [])
    summaries = [d["summary"] for d in details if d.get("summary")]
    if failed:
        bad = [d for d in details if "error" in d]
        known = any("known limitation" in d.get("error", "") for d in bad)
        head = f"FAIL {passed}/{passed + failed}" if passed + failed > 1 else "FAIL"
        head += " (known, xfail)" if known else ""
        if passed + failed > 1:
            names = ", ".join(d["test"].split("[")[-1].rstrip("]") for d in bad[:4])
            return f"{head}: {names}"
        return f"{head}: {summaries[0] if summaries else bad[0]['error'][:100] if bad else ''}"
    if passed == 0 and skipped:
        why = next((d.get("skipped", "") for d in details if d.get("skipped")), "")
        return f"n/a ({why.removeprefix('Skipped: ')[:90]})"
    head = f"pass {passed}/{passed}" if passed > 1 else "pass"
    if skipped:
        head += f" ({skipped} n/a)"
    return f"{head} ({'; '.join(summaries)})" if summaries else head


if __name__ == "__main__":
    print(render(Path(sys.argv[1] if len(sys.argv) > 1 else ".work/reliability/full")))
