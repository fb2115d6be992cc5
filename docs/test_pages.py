"""README stays a front door and the docs the one copy of everything else.

- README.md is at most ``MAX_README_LINES`` lines, shows the two set-up commands, and every
  relative link in it reaches a file (and a heading, when it names one);
- no paragraph of README (a blank-line-separated chunk of ``MIN_LINES`` lines or
  ``MIN_CHARS`` characters, whitespace normalised) appears again in a page under docs/:
  where both need a fact, README links to it;
- the benchmark tables have one home, docs/performance.md, and that is where
  ``benchmarks.report`` writes them;
- the store written out on the "Writing a backend" page passes the whole shared conformance
  suite with the harness shown there.

Run by ``nox -s docs`` beside docs/test_examples.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
MAX_README_LINES = 200
MIN_LINES = 3
MIN_CHARS = 200
BENCH_START, BENCH_END = "<!-- bench:results -->", "<!-- /bench:results -->"
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.M | re.S)


def paragraphs(text: str) -> list[str]:
    """The chunks of ``text`` long enough to count as copied (whitespace normalised)."""
    chunks = re.split(r"\n\s*\n", text)
    return [
        " ".join(chunk.split())
        for chunk in chunks
        if len(chunk.strip().splitlines()) >= MIN_LINES or len(" ".join(chunk.split())) >= MIN_CHARS
    ]


def copies(readme: str, pages: dict[str, str]) -> list[tuple[str, str]]:
    """``(page, paragraph)`` for every README paragraph found in a page."""
    flat = {name: " ".join(text.split()) for name, text in pages.items()}
    return [(name, p) for p in paragraphs(readme) for name, page in flat.items() if p in page]


def slug(heading: str) -> str:
    """The anchor MkDocs (Python-Markdown's toc) gives a heading."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(h) for h in re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)}


def test_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines (at most {MAX_README_LINES})"
    for command in ("bash scripts/demo.sh", "bash scripts/test.sh"):
        assert f"```bash\n{command}\n```" in text, f"README lost its set-up command {command!r}"
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text(), "CI no longer runs it"


def test_no_readme_paragraph_is_copied_into_the_docs() -> None:
    pages = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in DOCS}
    found = copies(README.read_text(encoding="utf-8"), pages)
    assert not found, "README paragraphs copied into docs/ (link to one copy instead):\n" + (
        "\n".join(f"  {page}: {p[:100]}..." for page, p in found)
    )


def test_the_copy_detector_sees_copies() -> None:
    """A copy is found even rewrapped and inside a longer paragraph; short lines are not."""
    readme = "# T\n\nOne line.\n\nA paragraph of\nthree lines that\nmatters.\n\n" + "x " * 120
    page = "Before. A paragraph of three lines\nthat matters. After.\n\nOne line.\n"
    assert copies(readme, {"p.md": page}) == [("p.md", "A paragraph of three lines that matters.")]
    assert copies(readme, {"p.md": "x " * 119 + "x\n"}) == [("p.md", ("x " * 120).strip())]
    assert copies("# T\n\nOne line.\n", {"p.md": "One line.\n"}) == []


def test_readme_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    links = [link for link in LINK.findall(text) if "://" not in link]
    assert links, "README links to nothing in docs/"
    broken = []
    for link in links:
        path, _, anchor = link.partition("#")
        target = (README.parent / path).resolve()
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {path}")
    assert not broken, broken


def test_slug_matches_mkdocs() -> None:
    assert slug("8. What differs per store") == "8-what-differs-per-store"
    assert slug("Memory in the system prompt: Spring AI's prompt") == (
        "memory-in-the-system-prompt-spring-ais-prompt"
    )


def test_bench_tables_have_one_home() -> None:
    from benchmarks import report

    assert Path("docs/performance.md") == report.DOC
    assert BENCH_START not in README.read_text(encoding="utf-8")
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        expected = 1 if page == ROOT / report.DOC else 0
        assert text.count(BENCH_START) == text.count(BENCH_END) == expected, page


def _block_after(text: str, marker: str) -> str:
    at = text.index(marker)
    found = FENCE.search(text, at)
    assert found, f"no python block after {marker!r}"
    return found.group(1)


def test_the_backend_on_the_page_passes_the_shared_suite(tmp_path: Path) -> None:
    """The store and harness of docs/writing-a-backend.md, run through the kit as a third
    party would run them (the whole shared suite, sync twin)."""
    text = (ROOT / "docs" / "writing-a-backend.md").read_text(encoding="utf-8")
    (tmp_path / "mystore.py").write_text(_block_after(text, "<!-- backend-example -->"))
    (tmp_path / "myharness.py").write_text(_block_after(text, "The harness of the store above"))
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_conformance.py").write_text("from chatmem.testing.suite import *  # noqa\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATMEM_")}
    env["PYTHONPATH"] = str(tmp_path)
    kit = ["-p", "chatmem.testing.plugin", "--harness", "myharness:DictStoreHarness"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *kit, "-p", "no:cacheprovider", "-q", "tests"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) >= 100, proc.stdout[-2000:]
