"""export / import / migrate / stats, as functions and through the ``chatmem`` command."""

from __future__ import annotations

import io
import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmem.core import (
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    UserMessage,
)
from chatmem.core._cli import main
from chatmem.core._transfer import (
    ProgressBar,
    export_conversations,
    import_conversations,
    line_to_conversation,
    migrate,
    store_stats,
)
from conformance_tests.corpus import FIXED_TS, ID_CORPUS, full_corpus, turn


def dated(messages: list[Any], step_us: int = 1) -> list[Any]:
    return [
        m.with_store_fields(
            created_at=FIXED_TS + timedelta(microseconds=i * step_us), position=None
        )
        for i, m in enumerate(messages)
    ]


def filled() -> InMemoryChatMemoryRepository:
    repo = InMemoryChatMemoryRepository()
    repo.save_all("corpus", dated(full_corpus()))
    for i, cid in enumerate(ID_CORPUS):
        repo.save_all(cid, dated(turn(i)))
    return repo


def export_text(repo: Any, ids: list[str] | None = None) -> str:
    out = io.StringIO()
    export_conversations(repo, out, ids)
    return out.getvalue()


def test_export_import_round_trip_keeps_content_and_created_at() -> None:
    source = filled()
    text = export_text(source)
    assert len(text.splitlines()) == len(ID_CORPUS) + 1
    target = InMemoryChatMemoryRepository()
    assert import_conversations(target, io.StringIO(text)) == (
        len(ID_CORPUS) + 1,
        7 + 2 * len(ID_CORPUS),
    )
    assert export_text(target) == text
    stored = target.find_by_conversation_id("corpus")
    assert stored == full_corpus()
    assert [m.created_at for m in stored] == [
        FIXED_TS + timedelta(microseconds=i) for i in range(7)
    ]


def test_import_is_idempotent_and_replaces() -> None:
    text = export_text(filled())
    target = InMemoryChatMemoryRepository()
    target.save_all("corpus", [UserMessage("stale")])
    import_conversations(target, io.StringIO(text))
    import_conversations(target, io.StringIO(text + "\n\n"))
    assert export_text(target) == text


def test_export_selected_ids_in_the_order_given() -> None:
    text = export_text(filled(), ["a", "A", "unknown"])
    lines = [json.loads(line) for line in text.splitlines()]
    assert [d["conversation_id"] for d in lines] == ["a", "A", "unknown"]
    assert lines[2]["messages"] == []
    assert lines[0]["messages"][0] == {
        "v": 1,
        "type": "USER",
        "text": "u6",
        "created_at": "2024-02-29T12:34:56.789012+00:00",
    }


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        "{}",
        '{"conversation_id": "x", "messages": [{"v": 9}]}',
        '{"conversation_id": "", "messages": []}',
        "[1]",
    ],
)
def test_malformed_import_lines_name_their_line(line: str) -> None:
    repo = InMemoryChatMemoryRepository()
    with pytest.raises(InvalidArgumentError, match="line 2"):
        import_conversations(repo, ['{"conversation_id": "ok", "messages": []}', line])
    with pytest.raises(InvalidArgumentError):
        line_to_conversation(line)


def test_migrate_copies_then_copies_nothing_new() -> None:
    source, target = filled(), InMemoryChatMemoryRepository()
    done: list[int] = []
    first = migrate(source, target, page_size=3, progress=done.append)
    assert (first.copied, first.unchanged, first.messages) == (
        len(ID_CORPUS) + 1,
        0,
        7 + 2 * len(ID_CORPUS),
    )
    assert done == list(range(1, len(ID_CORPUS) + 2))
    assert export_text(target) == export_text(source)
    second = migrate(source, target)
    assert (second.copied, second.unchanged) == (0, len(ID_CORPUS) + 1)


def test_migrate_replaces_changed_conversations_and_keeps_target_only_ones() -> None:
    source, target = filled(), InMemoryChatMemoryRepository()
    migrate(source, target)
    source.append("a", UserMessage("later"))
    target.save_all("only-in-target", [UserMessage("keep me")])
    result = migrate(source, target)
    assert (result.copied, result.messages) == (1, 3)
    assert target.find_by_conversation_id("a")[-1] == UserMessage("later")
    assert target.find_by_conversation_id("only-in-target") == [UserMessage("keep me")]
    with pytest.raises(InvalidArgumentError):
        migrate(source, source)


def test_stats() -> None:
    stats = store_stats(filled())
    assert (stats.conversations, stats.messages) == (len(ID_CORPUS) + 1, 7 + 2 * len(ID_CORPUS))
    assert stats.oldest == FIXED_TS and stats.newest == FIXED_TS + timedelta(microseconds=6)
    empty = store_stats(InMemoryChatMemoryRepository())
    assert empty.as_dict() == {"conversations": 0, "messages": 0, "oldest": None, "newest": None}


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_only_on_a_terminal() -> None:
    tty = FakeTty()
    bar = ProgressBar(4, stream=tty, label="x ")
    for i in range(1, 5):
        bar(i)
    bar.close()
    assert tty.getvalue().endswith("\rx [" + "#" * 30 + "] 4/4 100%\n")
    plain = io.StringIO()
    quiet = ProgressBar(4, stream=plain)
    quiet(1)
    quiet.close()
    assert plain.getvalue() == ""


# -- the command -----------------------------------------------------------------------------
@pytest.fixture
def sqlite_url(tmp_path: Path) -> Any:
    pytest.importorskip("sqlalchemy", reason="SQLAlchemy not installed (extra: sqlite)")
    return lambda name: f"sqlite:///{tmp_path / name}"


def test_cli_export_import_stats(
    sqlite_url: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chatmem.core import repository_from_url

    src = sqlite_url("src.db")
    repository_from_url(src).save_all("c1", dated(full_corpus()))
    repository_from_url(src).save_all("c2", dated(turn(1)))
    assert main(["export", "--url", src]) == 0
    captured = capsys.readouterr()
    assert "exported 2 conversations" in captured.err
    dump = tmp_path / "dump.jsonl"
    dump.write_text(captured.out, encoding="utf-8")
    assert main(["export", "c2", "--url", src, "-o", str(tmp_path / "one.jsonl")]) == 0
    assert len((tmp_path / "one.jsonl").read_text(encoding="utf-8").splitlines()) == 1
    dst = sqlite_url("dst.db")
    capsys.readouterr()
    assert main(["import", str(dump), "--url", dst]) == 0
    assert "imported 2 conversations (9 messages)" in capsys.readouterr().out
    assert main(["export", "--url", dst]) == 0
    assert capsys.readouterr().out == dump.read_text(encoding="utf-8")
    assert main(["stats", "--url", dst, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "conversations": 2,
        "messages": 9,
        "oldest": FIXED_TS.isoformat(),
        "newest": (FIXED_TS + timedelta(microseconds=6)).isoformat(),
    }
    assert main(["stats", "--url", dst]) == 0
    assert "conversations 2" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "missing.jsonl"), "--url", dst]) == 2
    assert main(["migrate", "--from", dst, "--to", dst]) == 2


def _seed_sqlite(url: str, conversations: int) -> None:
    """Fill a store fast, straight through the repository's own table (as a bulk load would)."""
    from chatmem.core import repository_from_url

    repo = repository_from_url(url)
    corpus = dated(full_corpus())
    for i in range(conversations):
        messages = corpus if i % 1000 == 0 else dated(turn(i), step_us=i + 1)
        repo.save_all(f"conv-{i:05d}", messages)


def test_migrate_10000_conversations_sqlite_to_sqlite(
    sqlite_url: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The acceptance run: 10,000 conversations copied with identical exports, then a second
    run copies nothing. Runs in CI (a few seconds on SQLite)."""
    src, dst = sqlite_url("big-src.db"), sqlite_url("big-dst.db")
    _seed_sqlite(src, 10_000)
    started = time.monotonic()
    assert main(["migrate", "--from", src, "--to", dst, "--page-size", "700"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == (
        "migrated 10000 conversations: 10000 copied (20050 messages), 0 already up to date"
    )
    assert err == ""  # no progress bar when stderr is not a terminal
    assert time.monotonic() - started < 60
    exports = []
    for url in (src, dst):
        assert main(["export", "--url", url, "-o", str(tmp_path / "x.jsonl")]) == 0
        exports.append((tmp_path / "x.jsonl").read_text(encoding="utf-8"))
    assert exports[0] == exports[1] and len(exports[0].splitlines()) == 10_000
    capsys.readouterr()
    assert main(["migrate", "--from", src, "--to", dst]) == 0
    assert capsys.readouterr().out.strip() == (
        "migrated 10000 conversations: 0 copied (0 messages), 10000 already up to date"
    )


def test_migrate_into_the_selected_backend(
    sqlite_url: Any, make_repository: Any, harness: Any
) -> None:
    """With ``--backend <server>`` the copy also lands in that server, identical by export."""
    from chatmem.core import repository_from_url

    src = repository_from_url(sqlite_url("sel.db"))
    for i in range(50):
        src.save_all(f"c{i}", dated(full_corpus() if i == 0 else turn(i)))
    target = make_repository()
    assert migrate(src, target, page_size=7).copied == 50
    assert export_text(target) == export_text(src)
    assert migrate(src, target).copied == 0
