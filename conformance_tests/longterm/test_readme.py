"""The long-term memory page's worked example runs as printed and prints what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend("memory")
README = Path(__file__).resolve().parents[2] / "docs" / "long-term-memory.md"


def test_readme_long_term_example_runs_and_prints_what_it_says() -> None:
    text = README.read_text(encoding="utf-8")
    found = re.search(
        r"<!-- longterm-example -->\n```python\n(.*?)```\n\nprints\n\n```text\n(.*?)```",
        text,
        re.DOTALL,
    )
    assert found, "docs/long-term-memory.md lost its example"
    code, expected = found.groups()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "long-term-memory.md", "exec"), {"__name__": "readme_example"})
    assert out.getvalue() == expected
