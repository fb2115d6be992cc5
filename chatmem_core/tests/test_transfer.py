"""export / import / migrate / stats, as functions and through the ``chatmem`` command."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmem.core import (
    BackendError,
    InMemoryChatMemoryRepository,
    InvalidArgumentError,
    Message,
    UserMessage,
)
from chatmem.core._cli import main
from chatmem.core._cli._progress import ProgressBar
from chatmem.core._transfer import (
    ConversationNotFoundError,
    ImportConflictError,
    ImportIncompleteError,
    export_conversations,
    import_conversations,
    line_to_conversation,
    migrate,
    store_stats,
)
from chatmem.core.backend import ConversationIdPage
from chatmem.testing.corpus import FIXED_TS, ID_CORPUS, full_corpus, turn


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
    result = import_conversations(target, io.StringIO(text))
    assert (result.conversations, result.messages) == (len(ID_CORPUS) + 1, 7 + 2 * len(ID_CORPUS))
    assert export_text(target) == text
    stored = target.find_by_conversation_id("corpus")
    assert stored == full_corpus()
    assert [m.created_at for m in stored] == [
        FIXED_TS + timedelta(microseconds=i) for i in range(7)
    ]


def test_import_with_replace_is_idempotent_and_replaces() -> None:
    text = export_text(filled())
    target = InMemoryChatMemoryRepository()
    target.save_all("corpus", [UserMessage("stale")])
    import_conversations(target, io.StringIO(text), replace=True)
    import_conversations(target, io.StringIO(text + "\n\n"), replace=True)
    assert export_text(target) == text


def test_import_never_overwrites_unless_asked() -> None:
    text = export_text(filled())
    target = InMemoryChatMemoryRepository()
    target.save_all("corpus", [UserMessage("mine")])
    with pytest.raises(ImportConflictError) as info:
        import_conversations(target, io.StringIO(text))
    assert info.value.conversation_ids == ("corpus",)
    assert target.find_conversation_ids() == ["corpus"]  # nothing written at all
    assert target.find_by_conversation_id("corpus") == [UserMessage("mine")]
    result = import_conversations(target, io.StringIO(text), skip_existing=True)
    assert result.skipped_existing == ("corpus",) and result.conversations == len(ID_CORPUS)
    assert target.find_by_conversation_id("corpus") == [UserMessage("mine")]
    with pytest.raises(InvalidArgumentError, match="skip_existing"):
        import_conversations(target, io.StringIO(text), replace=True, skip_existing=True)


def test_an_empty_record_deletes_only_with_replace() -> None:
    """The landed defect: exporting an unknown id gave {"messages": []}, and importing that
    file deleted the conversation from a store that held it."""
    target = InMemoryChatMemoryRepository()
    target.save_all("c1", [UserMessage("keep me")])
    empty = ['{"conversation_id": "c1", "messages": []}']
    with pytest.raises(ImportConflictError):
        import_conversations(target, empty)
    result = import_conversations(target, empty, skip_existing=True)
    assert result.skipped_existing == ("c1",) and result.deleted == ()
    assert target.find_by_conversation_id("c1") == [UserMessage("keep me")]
    fresh = InMemoryChatMemoryRepository()
    assert import_conversations(fresh, empty).empty == ("c1",)
    assert fresh.find_conversation_ids() == []
    assert import_conversations(target, empty, replace=True).deleted == ("c1",)
    assert target.find_conversation_ids() == []


def test_import_validates_the_whole_file_before_writing() -> None:
    """The landed defect: a file failing at line 15 had already applied lines 1-14."""
    lines = [conversation_to_line_for(f"c{i}") for i in range(1, 15)] + ["{broken"]
    target = InMemoryChatMemoryRepository()
    with pytest.raises(InvalidArgumentError, match="line 15"):
        import_conversations(target, io.StringIO("\n".join(lines) + "\n"))
    assert target.find_conversation_ids() == []
    too_long = [conversation_to_line_for("ok"), conversation_to_line_for("x" * 256)]
    with pytest.raises(InvalidArgumentError, match=r"line 2\.conversation_id"):
        import_conversations(target, too_long)
    assert target.find_conversation_ids() == []
    dup = [
        conversation_to_line_for("a"),
        conversation_to_line_for("b"),
        conversation_to_line_for("a"),
    ]
    with pytest.raises(InvalidArgumentError, match=r"line 3.*already appeared on line 1"):
        import_conversations(target, dup)
    assert target.find_conversation_ids() == []


def conversation_to_line_for(cid: str) -> str:
    from chatmem.core._transfer import conversation_to_line

    return conversation_to_line(cid, dated([UserMessage(f"text of {cid}")]))


class FailingAfter(InMemoryChatMemoryRepository):
    """Accepts ``n`` writes, then fails like an unreachable server."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.left = n

    def _save_all(self, cid: str, messages: list[Message]) -> None:
        if self.left == 0:
            raise BackendError("server went away")
        self.left -= 1
        super()._save_all(cid, messages)


def test_a_failed_import_reports_exactly_what_was_applied() -> None:
    lines = [conversation_to_line_for(f"c{i}") for i in range(1, 6)]
    target = FailingAfter(3)
    with pytest.raises(ImportIncompleteError) as info:
        import_conversations(target, lines)
    assert info.value.result.written == ("c1", "c2", "c3")
    assert (info.value.failed_line, info.value.failed_id) == (4, "c4")
    assert "failed at line 4" in str(info.value) and "3 conversation(s) before it" in str(
        info.value
    )
    assert isinstance(info.value.__cause__, BackendError)
    assert sorted(target.find_conversation_ids()) == ["c1", "c2", "c3"]


def test_import_from_a_pipe_is_spooled_not_lost() -> None:
    text = export_text(filled())
    target = InMemoryChatMemoryRepository()
    result = import_conversations(target, iter(text.splitlines(keepends=True)))
    assert result.conversations == len(ID_CORPUS) + 1
    assert export_text(target) == text


def test_export_of_an_unknown_id_is_an_error_and_writes_nothing() -> None:
    out = io.StringIO()
    with pytest.raises(ConversationNotFoundError) as info:
        export_conversations(filled(), out, ["a", "unknown"])
    assert info.value.conversation_ids == ("unknown",)
    assert out.getvalue() == ""


class Ghost(InMemoryChatMemoryRepository):
    """Lists a conversation that reads empty, as one deleted between listing and reading."""

    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        page = super()._find_ids_page(limit, after)
        return ConversationIdPage(["ghost", *page.ids], page.next_after) if after is None else page


def test_a_conversation_deleted_meanwhile_is_never_an_empty_record_or_a_delete() -> None:
    source = Ghost()
    source.save_all("real", [UserMessage("x")])
    out = io.StringIO()
    result = export_conversations(source, out)
    assert (result.written, result.vanished) == (1, ("ghost",))
    assert '"ghost"' not in out.getvalue()
    target = InMemoryChatMemoryRepository()
    target.save_all("ghost", [UserMessage("the target's own")])
    moved = migrate(source, target)
    assert (moved.copied, moved.vanished) == (1, 1)
    assert target.find_by_conversation_id("ghost") == [UserMessage("the target's own")]


def test_export_selected_ids_in_the_order_given() -> None:
    text = export_text(filled(), ["a", "A", "a"])
    lines = [json.loads(line) for line in text.splitlines()]
    assert [d["conversation_id"] for d in lines] == ["a", "A"]
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
    assert repo.find_conversation_ids() == []
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


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_bar_shows_rate_and_eta_only_on_a_terminal() -> None:
    tty, clock = FakeTty(), FakeClock()
    bar = ProgressBar(400, stream=tty, label="x ", clock=clock)
    clock.now += 2.0
    bar(100)  # 100 in 2 s: 50/s, 300 left: 6 s
    assert tty.getvalue() == "\rx [#######-----------------------] 100/400  25% 50/s ETA 0:06"
    clock.now += 0.01
    bar(101)  # same percent, too soon: no redraw
    assert tty.getvalue().count("\r") == 1
    clock.now += 6.0
    bar(400)
    bar.close()
    assert tty.getvalue().endswith("\rx [" + "#" * 30 + "] 400/400 100% 50/s ETA 0:00\n")
    unknown = ProgressBar(None, stream=FakeTty(), clock=clock)
    clock.now += 4.0
    assert unknown.render(20, clock.now) == "20 5.0/s elapsed 0:04"
    plain = io.StringIO()
    quiet = ProgressBar(4, stream=plain)
    quiet(1)
    quiet.close()
    assert plain.getvalue() == ""


# -- the command -----------------------------------------------------------------------------
@pytest.fixture
def sqlite_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    pytest.importorskip("sqlalchemy", reason="SQLAlchemy not installed (extra: sqlite)")
    monkeypatch.delenv("CHATMEM_URL", raising=False)
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
    assert captured.err == "exported 2 conversations to stdout\n"
    dump = tmp_path / "dump.jsonl"
    dump.write_text(captured.out, encoding="utf-8")
    assert main(["export", "c2", "--url", src, "-o", str(tmp_path / "one.jsonl")]) == 0
    assert len((tmp_path / "one.jsonl").read_text(encoding="utf-8").splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".one")) == []
    dst = sqlite_url("dst.db")
    capsys.readouterr()
    assert main(["import", str(dump), "--url", dst]) == 0
    assert capsys.readouterr() == ("", "imported 2 conversations (9 messages)\n")
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
    assert "FILE: cannot read" in capsys.readouterr().err
    assert main(["migrate", "--from", dst, "--to", dst]) == 2
    assert "--to: is the same URL as --from" in capsys.readouterr().err


def test_cli_export_of_an_unknown_id_then_import_deletes_nothing(
    sqlite_url: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 11: ``export ID`` of an id the source lacks wrote {"messages": []}; importing it
    into a store holding ID deleted that conversation."""
    from chatmem.core import repository_from_url

    src, dst = sqlite_url("src.db"), sqlite_url("dst.db")
    repository_from_url(src).save_all("other", [UserMessage("x")])
    repository_from_url(dst).save_all("c1", [UserMessage("precious")])
    out = tmp_path / "c1.jsonl"
    assert main(["export", "c1", "--url", src, "-o", str(out)]) == 1
    assert capsys.readouterr().err == "chatmem: no such conversation: 'c1'\n"
    assert not out.exists()
    assert main(["export", "c1", "other", "--url", src]) == 1
    assert capsys.readouterr().out == ""  # nothing written for any id
    out.write_text('{"conversation_id": "c1", "messages": []}\n', encoding="utf-8")
    assert main(["import", str(out), "--url", dst]) == 1
    err = capsys.readouterr().err
    assert "already exist" in err and "'c1'" in err and "--replace" in err
    assert main(["import", str(out), "--url", dst, "--skip-existing"]) == 0
    assert "skipped 'c1': already in the store" in capsys.readouterr().err
    assert repository_from_url(dst).find_by_conversation_id("c1") == [UserMessage("precious")]
    assert main(["import", str(out), "--url", dst, "--replace"]) == 0
    assert "deleted 1" in capsys.readouterr().err
    assert repository_from_url(dst).find_conversation_ids() == []


def test_cli_import_is_all_or_nothing(
    sqlite_url: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 11: a file failing at line 15 had applied lines 1-14 without saying so."""
    from chatmem.core import repository_from_url
    from chatmem.core._transfer import conversation_to_line

    lines = [conversation_to_line(f"c{i}", dated(turn(i))) for i in range(1, 15)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines, '{"conversation_id": "c15"}']) + "\n", encoding="utf-8")
    dst = sqlite_url("dst.db")
    assert main(["import", str(bad), "--url", dst]) == 2
    assert capsys.readouterr().err.startswith("chatmem: line 15: is not a chatmem export line")
    assert repository_from_url(dst).find_conversation_ids() == []
    stdin = io.StringIO("\n".join(lines) + "\n")
    monkey = pytest.MonkeyPatch()
    monkey.setattr("sys.stdin", stdin)
    try:
        assert main(["import", "--url", dst]) == 0
    finally:
        monkey.undo()
    assert "imported 14 conversations (28 messages)" in capsys.readouterr().err
    assert len(repository_from_url(dst).find_conversation_ids()) == 14


def _seed_sqlite(url: str, conversations: int) -> None:
    """Fill a store fast, straight through the repository's own table (as a bulk load would)."""
    from chatmem.core import repository_from_url

    repo = repository_from_url(url)
    corpus = dated(full_corpus())
    for i in range(conversations):
        messages = corpus if i % 1000 == 0 else dated(turn(i), step_us=i + 1)
        repo.save_all(f"conv-{i:05d}", messages)


@pytest.mark.scale
def test_migrate_10000_conversations_sqlite_to_sqlite(
    sqlite_url: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The acceptance run: 10,000 conversations copied with identical exports, then a second
        run copies nothing. Runs in CI on the main Python (about 45 s: 10,000 seeded writes, two
    copies and two exports; speed is the bench's concern)."""
    src, dst = sqlite_url("big-src.db"), sqlite_url("big-dst.db")
    _seed_sqlite(src, 10_000)
    assert main(["migrate", "--from", src, "--to", dst, "--page-size", "700"]) == 0
    out, err = capsys.readouterr()
    assert out == ""  # summaries go to stderr; no progress bar when it is not a terminal
    assert err == (
        "migrated 10000 conversations: 10000 copied (20050 messages), 0 already up to date\n"
    )
    exports = []
    for url in (src, dst):
        assert main(["export", "--url", url, "-o", str(tmp_path / "x.jsonl")]) == 0
        exports.append((tmp_path / "x.jsonl").read_text(encoding="utf-8"))
    assert exports[0] == exports[1] and len(exports[0].splitlines()) == 10_000
    capsys.readouterr()
    assert main(["migrate", "--from", src, "--to", dst]) == 0
    assert capsys.readouterr().err.strip() == (
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


def test_cli_bad_files_are_input_errors(
    sqlite_url: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chatmem.core import repository_from_url

    src = sqlite_url("src.db")
    repository_from_url(src).save_all("c1", [UserMessage("x")])
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(b'{"conversation_id": "caf\xe9", "messages": []}\n')
    capsys.readouterr()
    assert main(["import", str(latin1), "--url", src]) == 2
    assert capsys.readouterr().err.startswith("chatmem: FILE: is not UTF-8 text")
    assert main(["export", "--url", src, "-o", str(tmp_path / "no" / "such" / "dir.jsonl")]) == 2
    assert capsys.readouterr().err.startswith("chatmem: --output: cannot write")
    good = tmp_path / "good.jsonl"
    good.write_text("old content\n", encoding="utf-8")
    assert main(["export", "c1", "nope", "--url", src, "-o", str(good)]) == 1
    assert good.read_text(encoding="utf-8") == "old content\n"  # never truncated on failure
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".good")] == []


def test_cli_import_says_exactly_what_was_applied_when_the_store_fails(
    sqlite_url: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real SQLite store that refuses conversation c4 (a trigger), as a failing disk would.
    (The SQL store reports the trigger's abort as a conflict after its retries; what matters
    here is that the command says which lines were applied.)"""
    import sqlite3

    from chatmem.core import repository_from_url
    from chatmem.core._transfer import conversation_to_line

    dst = sqlite_url("dst.db")
    repository_from_url(dst).save_all("c2", [UserMessage("already here")])
    db = sqlite3.connect(tmp_path / "dst.db")
    db.execute(
        "CREATE TRIGGER refuse_c4 BEFORE INSERT ON ai_chat_memory "
        "WHEN NEW.conversation_id = 'c4' BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
    )
    db.commit()
    db.close()
    dump = tmp_path / "dump.jsonl"
    lines = [conversation_to_line(f"c{i}", dated(turn(i))) for i in range(1, 7)]
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["import", str(dump), "--url", dst, "--skip-existing"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "skipped 'c2': already in the store"
    assert err[1] == (
        "before the failure: imported 2 conversations (4 messages), skipped 1 already in the store"
    )
    assert err[2].startswith("chatmem: the store failed at line 4 ('c4': ")
    assert "run it again with --skip-existing" in err[2]
    stored = repository_from_url(dst)
    assert sorted(stored.find_conversation_ids()) == ["c1", "c2", "c3"]
    assert stored.find_by_conversation_id("c2") == [UserMessage("already here")]
