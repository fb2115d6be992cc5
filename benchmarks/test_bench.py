"""The bench's own test: a quick run on SQLite and memory, its results file checked.

No timing assertions: only that every contender produced rows, that turns/s are positive,
that chatmem read exactly its window, and that the file has the documented schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import report, run
from benchmarks._workload import WINDOW

H = [10, 300]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("bench") / "latest.json"
    argv = ["sqlite", "memory", "--quick", "--no-peers", "--h", *map(str, H), "--out", str(out)]
    assert run.main(argv) == 0
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def test_results_have_the_documented_top_level_keys(results: dict[str, Any]) -> None:
    assert results["schema"] == run.SCHEMA
    for key in ("started", "finished", "machine", "versions", "settings", "rows", "not_run"):
        assert key in results
    assert results["machine"]["cpus"] >= 1
    assert results["settings"]["H"] == H
    assert "chatmem" in results["versions"]


def test_every_backend_has_chatmem_and_floor_at_every_h(results: dict[str, Any]) -> None:
    seen = {(r["backend"], r["contender"], r["H"]) for r in results["rows"]}
    for backend in ("sqlite", "memory"):
        for h in H:
            for contender in ("chatmem", "chatmem ChatTurn", "floor", "guarded floor"):
                assert (backend, contender, h) in seen


def test_rows_are_positive_and_chatmem_reads_its_window(results: dict[str, Any]) -> None:
    for row in results["rows"]:
        assert row["turns_per_s"] > 0
        assert row["ratio_to_floor"] > 0
        assert row["bytes_read_per_turn"] > 0
        assert row["conversations_seeded"] >= 1
        # every added message is kept, and H stays H within 10% or 10 messages
        assert row["H"] < row["max_stored_during_turns"] <= row["H"] + max(10, row["H"] // 10)
        assert row["ratio_to_guarded_floor"] > 0
        if row["kind"] in ("chatmem", "floor", "guarded"):  # the window, never more
            assert min(WINDOW, row["H"] + 2) <= row["msgs_read_per_turn"] <= WINDOW
    floors = [r for r in results["rows"] if r["kind"] == "floor"]
    assert all(r["ratio_to_floor"] == 1.0 for r in floors)
    guarded = [r for r in results["rows"] if r["kind"] == "guarded"]
    assert guarded and all(r["ratio_to_guarded_floor"] == 1.0 for r in guarded)


def test_chatmem_really_stores_h(results: dict[str, Any]) -> None:
    # the bytes a window returns do not grow with H: the read is bounded
    chat = {(r["backend"], r["H"]): r for r in results["rows"] if r["contender"] == "chatmem"}
    for backend in ("sqlite", "memory"):
        sizes = {chat[(backend, h)]["bytes_read_per_turn"] for h in H}
        assert max(sizes) < 2 * min(sizes)


def test_async_is_reported_even_when_not_run(results: dict[str, Any]) -> None:
    assert {r["backend"] for r in results["async"]} == {"sqlite", "memory"}
    assert all("not_run" in r or r["async_turns_per_s"] > 0 for r in results["async"])


def test_report_renders_table_and_plot(results: dict[str, Any], tmp_path: Path) -> None:
    text = report.section(results, "bench.png")
    assert text.startswith(report.START) and text.endswith(report.END)
    assert "**chatmem**" in text and "floor" in text
    pytest.importorskip("matplotlib")
    report.plot(results, tmp_path / "bench.png")
    assert (tmp_path / "bench.png").stat().st_size > 1000
