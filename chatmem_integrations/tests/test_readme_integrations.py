"""The documented integration examples, run exactly as printed (each in a fresh process and an
empty working directory, so ``sqlite:///chat.db`` starts cold), with their printed results.

A section is looked up by its heading in README.md, then in the pages under docs/ (the
README is a front door; most framework sections live in the docs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def python_blocks(title: str) -> list[str]:
    """The ```python blocks of the section whose heading (level 2 to 6) starts with ``title``,
    up to the next heading of level 2 up to its own, from the first page that has it (a level-1
    ``#`` line is a comment in a code block, never a section)."""
    heading = re.compile(rf"^(#{{2,6}}) {re.escape(title)}.*$", re.MULTILINE)
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found = heading.search(text)
        if found is None:
            continue
        level = len(found.group(1))
        following = re.compile(rf"^#{{2,{level}}} ", re.MULTILINE).search(text, found.end())
        section = text[found.end() : following.start() if following else len(text)]
        return re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    raise AssertionError(f"no page of README.md or docs/ has a section titled {title!r}")


def run_example(code: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def expected_output(code: str) -> list[str]:
    """The ``# -> value`` comments of an example, in order."""
    return re.findall(r"# -> (.*)$", code, re.MULTILINE)


def needs_sqlite_async_twin() -> None:
    """Skip, naming it, until SQLite's async twin is installed (the README shows the async
    default, which opens it)."""
    pytest.importorskip("aiosqlite", reason="aiosqlite not installed (extra: sqlite)")
    try:
        from chatmem.jdbc import AsyncJdbcChatMemoryRepository  # noqa: F401
    except ImportError:
        pytest.skip("SQLite's async twin chatmem.jdbc.AsyncJdbcChatMemoryRepository is missing")


def test_readme_llamaindex_examples_run(tmp_path: Path) -> None:
    pytest.importorskip("llama_index.core", reason="llama-index-core not installed")
    pytest.importorskip("sqlalchemy", reason="SQLAlchemy not installed (extra: sqlite)")
    needs_sqlite_async_twin()  # ChatmemDBChatStore.from_url opens the async twin
    blocks = python_blocks("LlamaIndex")
    assert len(blocks) == 2
    # both examples in one process, as printed, one after the other (llama-index imports slowly)
    out = run_example("\n".join(blocks), tmp_path).splitlines()
    assert out[:2] == expected_output(blocks[0]) == ["['Hi', 'Hello!']", "2"]
    assert "Hello!" in out[2] and out[3] == "['li-demo', 'li-memory']"


def test_readme_async_adapters_example_runs(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.checkpoint.base", reason="langgraph not installed")
    needs_sqlite_async_twin()
    (example,) = python_blocks("The framework adapters on an event loop")
    out = run_example(example, tmp_path).splitlines()
    assert out == expected_output(example) == ["2", "2"]


def test_readme_token_window_example_runs(tmp_path: Path) -> None:
    pytest.importorskip("sqlalchemy", reason="SQLAlchemy not installed (extra: sqlite)")
    (example,) = python_blocks("Token windows")
    out = run_example(example, tmp_path).splitlines()
    assert out == expected_output(example) == ["['in May', 'booked']", "4"]


def test_readme_spring_advisors_example_runs(tmp_path: Path) -> None:
    (example,) = python_blocks("Memory in the system prompt")
    out = run_example(example, tmp_path).splitlines()
    assert out[:2] == ["USER:My cat is Tom.", "ASSISTANT:Nice name!"]
    assert out[-1] == "I live in Rome." == expected_output(example)[-1]


def test_readme_langgraph_example_runs(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.graph", reason="langgraph not installed (extra: langgraph)")
    pytest.importorskip("sqlalchemy", reason="SQLAlchemy not installed (extra: sqlite)")
    (example,) = python_blocks("LangGraph")
    out = run_example(example, tmp_path).splitlines()
    assert out == expected_output(example) == ["4", "You said 'Bye'.", "{'text': 'vegetarian'}"]
