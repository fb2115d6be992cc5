"""Every ```python block in README.md and docs/**/*.md runs, each in a fresh temp dir.

A block that needs a server is preceded by an HTML comment ``<!-- skip: <reason> -->``
(the reason is required); it is reported as a skip with that reason, never dropped.
A ```sql block preceded by ``<!-- ddl: <url> -->`` must equal ``chatmem.jdbc.schema_sql(url)``,
so the DDL shown on the backend pages cannot drift from the code.
A line ``print(...)  # -> text`` (one value, no "then") must print exactly ``text``: the
outputs the docs promise are checked, not only that the code runs.
Run by ``nox -s docs``; each block runs in its own interpreter so blocks cannot lean on
one another's state or leave background threads behind.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.M | re.S)
SKIP = re.compile(r"<!--\s*skip:\s*(\S.*?)\s*-->\s*$")
PROMISE = re.compile(r"^(\s*)print\((.*)\)\s*# -> (.+?)\s*$", re.M)
PRELUDE = """\
def __promised(*values, expected):
    out = " ".join(str(v) for v in values)
    assert out == expected, f"printed {out!r}, the docs say {expected!r}"
    print(out)
"""
DDL = re.compile(r"<!--\s*ddl:\s*(\S+)\s*-->\n```sql\n(.*?)^```", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One python code block: where it is, its code, and its skip reason if marked."""

    path: Path
    line: int
    code: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def with_checks(code: str) -> str:
    """The block with every single-value ``print(...)  # -> text`` turned into a check."""

    def check(m: re.Match[str]) -> str:
        if " then " in m.group(3):
            return m.group(0)
        return f"{m.group(1)}__promised({m.group(2)}, expected={m.group(3)!r})"

    return PRELUDE + PROMISE.sub(check, code)


def extract(path: Path) -> list[Block]:
    """The python blocks of one markdown file, with the skip comment on the line before."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        blocks.append(Block(path, line, m.group(1), skip.group(1) if skip else None))
    return blocks


BLOCKS = [b for p in SOURCES for b in extract(p)]


def test_promises_become_checks() -> None:
    """The rewrite keeps the code and adds the check (and leaves narrative arrows alone)."""
    code = 'print(len([1, 2]))  # -> 2\nprint("a")  # -> a   then   b\n'
    out = with_checks(code)
    assert "__promised(len([1, 2]), expected='2')" in out
    assert 'print("a")  # -> a   then   b' in out
    ok = subprocess.run([sys.executable, "-c", with_checks("print(1 + 1)  # -> 2")], check=False)
    bad = subprocess.run([sys.executable, "-c", with_checks("print(1 + 2)  # -> 2")], check=False)
    assert (ok.returncode, bad.returncode != 0) == (0, True)


def test_blocks_were_found() -> None:
    """The extractor sees the README and the docs (a broken regex must not pass silently)."""
    files = {b.path.name for b in BLOCKS}
    assert "README.md" in files and len(files) > 3, files
    skipped = [b for b in BLOCKS if b.skip]
    print(f"\n{len(BLOCKS)} python blocks, {len(skipped)} marked skip:")
    for b in skipped:
        print(f"  {b.id}: {b.skip}")


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_example_runs(block: Block, tmp_path: Path) -> None:
    """The block runs to completion as a script, in an empty directory."""
    if block.skip:
        pytest.skip(f"{block.id}: {block.skip}")
    script = tmp_path / "example.py"
    script.write_text(with_checks(block.code), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATMEM_")}
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"{block.id} failed:\n{proc.stdout}\n{proc.stderr}"


DDL_BLOCKS = [
    (f"{p.relative_to(ROOT)}:{m.group(1)}", m.group(1), m.group(2))
    for p in SOURCES
    for m in DDL.finditer(p.read_text(encoding="utf-8"))
]


def test_ddl_blocks_were_found() -> None:
    """Every SQL backend page shows its DDL (a broken marker must not pass silently)."""
    assert len(DDL_BLOCKS) >= 5, [d[0] for d in DDL_BLOCKS]


@pytest.mark.parametrize(
    ("url", "shown"), [d[1:] for d in DDL_BLOCKS], ids=[d[0] for d in DDL_BLOCKS]
)
def test_ddl_matches_code(url: str, shown: str) -> None:
    """The DDL on the page is what ``schema_sql`` prints (trailing spaces aside)."""
    from chatmem.jdbc import schema_sql

    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip().splitlines()]

    assert lines(shown) == lines(schema_sql(url))
