"""Packaging promises: the core needs nothing third-party; a missing driver names its extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_core_imports_no_third_party_module() -> None:
    code = (
        "import sys; before = set(sys.modules);"
        "import chatmem.core, chatmem.core._cli;"
        "std = set(sys.stdlib_module_names);"
        "new = {m.split('.')[0] for m in set(sys.modules) - before};"
        "print(sorted(new - std - {'chatmem'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_distribution_has_no_required_dependency() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert "\ndependencies = []\n" in text
