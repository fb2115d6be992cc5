"""Running a framework page's one python example where the framework is installed: the docs
session does not install every framework, so such a block is marked skip there and run by
the framework's own nox session through these helpers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=300, check=False, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def run_page_example(request: pytest.FixtureRequest, page: str, tmp_path: Path) -> None:
    """Run ``docs/integrations/<page>``'s one block as a script in ``tmp_path``; it prints
    exactly what its ``# ->`` comments promise (once, on the memory backend's run)."""
    if request.config.getoption("--backend", default="memory") != "memory":
        pytest.skip("the docs example uses its own SQLite file: run once, with --backend memory")
    pytest.importorskip("aiosqlite", reason="aiosqlite not installed (extra: sqlite)")
    text = (ROOT / "docs" / "integrations" / page).read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)
    assert len(blocks) == 1
    printed = _run(["-c", blocks[0]], tmp_path).strip().splitlines()
    assert printed == re.findall(r"# -> (.*)$", blocks[0], re.M)


def chatmem_show(conversation_id: str, url: str, cwd: Path) -> str:
    """What ``chatmem show <conversation_id> --url <url>`` prints."""
    return _run(["-m", "chatmem.core._cli", "show", conversation_id, "--url", url], cwd)
