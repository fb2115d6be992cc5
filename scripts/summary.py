"""Collect the per-session conformance rows into one table (conformance-summary.md).

Each row names the route the server was reached by (local, testcontainers, env) and, for a
container, its image; a stand-in names itself. Expected failures (a stand-in's documented
gaps) are counted apart from failures.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

NO_LOCAL_IMAGE = {
    "mssql": "SQL Server",
    "oracle": "Oracle Database",
}


def main() -> int:
    src = Path(os.environ.get("CHATMEM_SUMMARY_DIR", ".work/summary"))
    rows = [json.loads(p.read_text()) for p in sorted(src.glob("*.json"))]
    lines = [
        "# chatmem conformance summary",
        "",
        "| backend | python | ran against | route | image | suite "
        "| passed | failed | skipped | errors | xfailed |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=_order):
        lines.append(
            f"| {r['backend']} | {r['python']} | {_cell(r['server'])} | {r.get('route') or '-'} "
            f"| {r.get('image') or '-'} | {r.get('suite', '')} "
            f"| {r['passed']} | {r['failed']} | {r['skipped']} | {r['error']} "
            f"| {r.get('xfailed', 0)} |"
        )
    total = {
        k: sum(r.get(k, 0) for r in rows)
        for k in ("passed", "failed", "skipped", "error", "xfailed", "xpassed")
    }
    lines += [
        "",
        f"total: {total['passed']} passed, {total['failed'] + total['error']} failed, "
        f"{total['skipped']} skipped, {total['xfailed']} expected failures (stand-in gaps), "
        f"{total['xpassed']} unexpectedly passed",
    ]
    tc_rows = {r["backend"] for r in rows if r.get("route") == "testcontainers"}
    missing = [b for b in NO_LOCAL_IMAGE if any(r["backend"] == b for r in rows)]
    if tc_rows or missing:
        lines += [""]
    for backend in missing:
        lines.append(
            f"- {backend}: {NO_LOCAL_IMAGE[backend]} cannot run on this machine: no registry "
            "can be reached for its official image and it cannot be built from packages "
            "reachable here; its testcontainers route runs wherever Docker can pull the image."
        )
    text = "\n".join(lines) + "\n"
    Path("conformance-summary.md").write_text(text)
    sys.stdout.write(text)
    return 0


def _order(r: dict[str, object]) -> tuple[str, ...]:
    return (str(r["backend"]), str(r["python"]), str(r.get("route") or ""), str(r.get("suite")))


def _cell(text: str) -> str:
    """One table cell: a multi-line reason on one line, pipes escaped, kept short."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    return flat if len(flat) <= 300 else flat[:297] + "..."


if __name__ == "__main__":
    raise SystemExit(main())
