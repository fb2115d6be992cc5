"""Precision and recall of a long-term memory extractor on the labelled corpus.

The corpus (``chatmem_core/tests/data/longterm_corpus_{en,ko}.jsonl``) holds one message a
line: ``text``, the expected ``type`` (``null`` when nothing should be remembered), for a
positive the confidence ``band`` (``firm``: >= 0.8, ``hedged``: < 0.8), and the ``split``
(``tune``: read while the rules were written; ``holdout``: never read while tuning).

A message counts once: a hit when the extractor finds the expected type, a false positive
for every other type it reports, a miss when it does not find the expected type.

Run the offline rules, or any model through its ``complete(prompt) -> str`` callable (sync
or async) behind ``LlmExtractor``'s strict JSON contract::

    python -m benchmarks.longterm_extraction_eval                       # the offline rules
    python -m benchmarks.longterm_extraction_eval --complete mypkg.llm:complete
    python -m benchmarks.longterm_extraction_eval --lang ko --split holdout --show-errors

A message whose model answer breaks the contract counts as extracting nothing (and is
listed as an error), so a model that answers badly loses recall rather than crashing the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatmem.core.longterm import (
    ExtractionError,
    Extractor,
    LlmExtractor,
    MemoryCandidate,
    RuleBasedExtractor,
)
from chatmem.core.longterm._extract import load_callable

CORPUS_DIR = Path(__file__).resolve().parents[1] / "chatmem_core" / "tests" / "data"
LANGUAGES = ("en", "ko")
TYPES = ("preference", "fact", "context")
FIRM = 0.8
"""A confidence at or above this is a firm statement; below it, a hedged one."""


@dataclass(frozen=True)
class Example:
    """One labelled message."""

    text: str
    expected: str | None
    band: str | None
    split: str
    lang: str


@dataclass
class Counts:
    """Hits, false positives and misses of one slice (a type, or all types)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    band_ok: int = 0

    @property
    def precision(self) -> float:
        """Share of reported memories that were right (1.0 when nothing was reported)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        """Share of expected memories that were found (1.0 when none were expected)."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def band_accuracy(self) -> float:
        """Share of hits whose confidence fell in the labelled band."""
        return self.band_ok / self.tp if self.tp else 1.0


@dataclass
class Report:
    """Counts per (language, split) and type, plus the messages that went wrong."""

    counts: dict[tuple[str, str, str], Counts] = field(default_factory=dict)
    errors: list[tuple[Example, list[MemoryCandidate] | str]] = field(default_factory=list)

    def get(self, lang: str, split: str = "all", kind: str = "all") -> Counts:
        """The counts of one slice (``split``/``kind`` ``"all"`` for every one)."""
        return self.counts.setdefault((lang, split, kind), Counts())

    def table(self) -> str:
        """A plain-text table: language, split, type, P, R, band accuracy, hits/fp/misses."""
        head = f"{'lang':4} {'split':8} {'type':10} {'prec':>5} {'recall':>6} {'band':>5}"
        lines = [head + "   tp  fp  fn", "-" * (len(head) + 13)]
        for (lang, split, kind), c in sorted(self.counts.items(), key=_order):
            lines.append(
                f"{lang:4} {split:8} {kind:10} {c.precision:5.2f} {c.recall:6.2f} "
                f"{c.band_accuracy:5.2f} {c.tp:4} {c.fp:3} {c.fn:3}"
            )
        return "\n".join(lines)


def _order(item: tuple[tuple[str, str, str], Counts]) -> tuple[str, int, int]:
    lang, split, kind = item[0]
    return lang, ("all", "tune", "holdout").index(split), ("all", *TYPES).index(kind)


def load_corpus(
    langs: Iterable[str] = LANGUAGES, directory: Path = CORPUS_DIR, split: str = "all"
) -> list[Example]:
    """The labelled messages of ``langs`` (``split``: ``all``, ``tune`` or ``holdout``)."""
    out = []
    for lang in langs:
        path = directory / f"longterm_corpus_{lang}.jsonl"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row["type"] not in (None, *TYPES) or row["split"] not in ("tune", "holdout"):
                raise ValueError(f"{path}:{number}: bad type or split in {row}")
            if (row["type"] is None) != (row["band"] is None):
                raise ValueError(f"{path}:{number}: a band goes with a type, and only then")
            if split in ("all", row["split"]):
                out.append(Example(row["text"], row["type"], row["band"], row["split"], lang))
    return out


def evaluate(extract: Callable[[str], list[MemoryCandidate]], corpus: Sequence[Example]) -> Report:
    """Run ``extract`` over every message and count hits, false positives and misses per
    language, split and type (an ``ExtractionError`` counts as finding nothing)."""
    report = Report()
    for example in corpus:
        try:
            found: list[MemoryCandidate] | str = extract(example.text)
        except ExtractionError as exc:
            found = f"ExtractionError: {exc}"
        candidates = found if isinstance(found, list) else []
        kinds = {c.memory_type.value for c in candidates}
        wrong = example.expected not in kinds if example.expected else bool(kinds)
        if isinstance(found, str) or wrong or len(kinds) > 1:
            report.errors.append((example, found))
        for split in ("all", example.split):
            for kind in ("all", *TYPES):
                c = report.get(example.lang, split, kind)
                expected_here = example.expected is not None and kind in ("all", example.expected)
                hit = next((x for x in candidates if x.memory_type.value == example.expected), None)
                reported = [x for x in candidates if kind in ("all", x.memory_type.value)]
                if expected_here and hit is not None:
                    c.tp += 1
                    c.band_ok += (hit.confidence >= FIRM) == (example.band == "firm")
                    c.fp += len({x.memory_type for x in reported} - {hit.memory_type})
                else:
                    c.fn += expected_here
                    c.fp += len({x.memory_type for x in reported})
    return report


def format_errors(report: Report) -> str:
    """The messages the extractor got wrong, one a line."""
    lines = []
    for example, found in report.errors:
        got = (
            found
            if isinstance(found, str)
            else [(c.memory_type.value, c.confidence) for c in found]
        )
        where = f"[{example.lang}/{example.split}]"
        lines.append(f"{where} want {example.expected}: {example.text!r} -> {got}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, complete: Callable[..., Any] | None = None) -> int:
    """The command line; ``complete`` (tests) stands in for ``--complete``. Prints the table
    and returns 0, or 1 when ``--min-precision``/``--min-recall`` are not met per language."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.longterm_extraction_eval")
    parser.add_argument("--complete", help="module:function, a complete(prompt) -> str callable")
    parser.add_argument("--lang", action="append", choices=LANGUAGES, help="default: all")
    parser.add_argument("--split", default="all", choices=("all", "tune", "holdout"))
    parser.add_argument("--corpus-dir", type=Path, default=CORPUS_DIR)
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--min-precision", type=float, default=0.0)
    parser.add_argument("--min-recall", type=float, default=0.0)
    args = parser.parse_args(argv)
    if args.complete:
        complete = load_callable(args.complete)
    extractor: Extractor = LlmExtractor(complete) if complete else RuleBasedExtractor()
    langs = args.lang or list(LANGUAGES)
    report = evaluate(extractor.extract, load_corpus(langs, args.corpus_dir, args.split))
    name = type(extractor).__name__ + (f" ({args.complete})" if args.complete else "")
    print(f"extractor: {name}")
    print(report.table())
    if args.show_errors and report.errors:
        print(format_errors(report))
    ok = all(
        report.get(lang).precision >= args.min_precision
        and report.get(lang).recall >= args.min_recall
        for lang in langs
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
