"""Collect the per-session conformance rows into one table (conformance-summary.md)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    src = Path(os.environ.get("CHATMEM_SUMMARY_DIR", ".work/summary"))
    rows = [json.loads(p.read_text()) for p in sorted(src.glob("*.json"))]
    lines = [
        "# chatmem conformance summary",
        "",
        "| backend | python | ran against | route | suite | passed | failed | skipped | errors |",
        "|---|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["backend"], r["python"], r.get("suite", ""))):
        lines.append(
            f"| {r['backend']} | {r['python']} | {r['server']} | {r['route'] or '-'} "
            f"| {r.get('suite', '')} "
            f"| {r['passed']} | {r['failed']} | {r['skipped']} | {r['error']} |"
        )
    total = {k: sum(r[k] for r in rows) for k in ("passed", "failed", "skipped", "error")}
    lines += [
        "",
        f"total: {total['passed']} passed, {total['failed'] + total['error']} failed, "
        f"{total['skipped']} skipped",
    ]
    text = "\n".join(lines) + "\n"
    Path("conformance-summary.md").write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
