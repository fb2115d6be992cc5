"""The ``chatmem`` command as users run it: the installed console script in a subprocess (help,
version, exit codes, broken pipes, no tracebacks) and in-process for the rest, on SQLite."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import chatmem
import chatmem.core
from chatmem.core import UserMessage
from chatmem.core._cli import build_parser, main

pytest.importorskip("sqlalchemy", reason="SQLAlchemy not installed (extra: sqlite)")

BIN = Path(sys.executable).parent / ("chatmem.exe" if os.name == "nt" else "chatmem")


def chatmem_cmd(*args: str, cwd: Path | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run the installed console script exactly as a user would."""
    assert BIN.exists(), f"the chatmem console script is not installed at {BIN}"
    env = {k: v for k, v in os.environ.items() if k not in ("CHATMEM_URL", "CHATMEM_DEBUG")}
    return subprocess.run(
        [str(BIN), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120, **kw
    )


@pytest.fixture
def run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Callable[..., tuple[int, str, str]]:
    """In-process ``chatmem ARGS`` in an empty working directory: (exit code, stdout, stderr)."""
    monkeypatch.delenv("CHATMEM_URL", raising=False)
    monkeypatch.chdir(tmp_path)

    def go(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: --help, --version, usage errors
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return go


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A SQLite store holding c1 (2 messages) and c2 (1 message)."""
    from chatmem.core import repository_from_url

    url = f"sqlite:///{tmp_path / 'store.db'}"
    repo = repository_from_url(url)
    repo.save_all("c1", [UserMessage("hello"), UserMessage("again")])
    repo.save_all("c2", [UserMessage("other")])
    return url


def ids_in(url: str) -> dict[str, list[str]]:
    from chatmem.core import repository_from_url

    repo = repository_from_url(url)
    return {
        c: [m.text or "" for m in repo.find_by_conversation_id(c)]
        for c in repo.iter_conversation_ids()
    }


# -- conventions, through the installed script -------------------------------------------------
def test_bare_command_prints_help_and_exits_0(tmp_path: Path) -> None:
    done = chatmem_cmd(cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: chatmem") and "commands:" in done.stdout
    assert done.stderr == ""


def test_version_is_the_distribution_version(tmp_path: Path) -> None:
    done = chatmem_cmd("--version", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip() == f"chatmem {importlib.metadata.version('chatmem')}"
    assert chatmem.core.__version__ == importlib.metadata.version("chatmem")


def test_version_keeps_the_namespace_package() -> None:
    assert getattr(chatmem, "__file__", None) is None  # no chatmem/__init__.py anywhere
    assert len(list(chatmem.__path__)) > 1


def test_help_reads_cleanly_and_documents_exit_codes(tmp_path: Path) -> None:
    done = chatmem_cmd("--help", cwd=tmp_path)
    assert done.returncode == 0
    assert "`" not in done.stdout  # no reST markup
    for line in ("0    success", "1    not found", "2    usage or input error"):
        assert line in done.stdout
    assert "stdout" in done.stdout and "stderr" in done.stdout
    commands = ("demo", "ls", "show", "rm", "stats", "schema", "export", "import", "migrate")
    for command in (*commands, "memories", "serve"):
        sub = chatmem_cmd(command, "--help", cwd=tmp_path)
        assert sub.returncode == 0 and "`" not in sub.stdout
        description = sub.stdout.split("\n\n")[1]
        assert not description.startswith(("positional", "options")), command


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def test_every_command_and_option_has_help_text() -> None:
    parser = build_parser()
    listed = {a.dest: a.help for a in parser._subparsers._group_actions[0]._choices_actions}  # type: ignore[union-attr]
    for name, sub in _subparsers(parser).items():
        assert listed.get(name), f"{name} has no summary"
        assert sub.description, f"{name} has no description"
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_usage_errors_exit_2_and_name_the_option(tmp_path: Path) -> None:
    done = chatmem_cmd(
        "migrate",
        "--from",
        "sqlite:///a.db",
        "--to",
        "sqlite:///b.db",
        "--page-size",
        "0",
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "--page-size" in done.stderr
    assert "limit" not in done.stderr and "Traceback" not in done.stderr
    done = chatmem_cmd(
        "schema", "--url", "sqlite:///x.db", "--table-name", "bad name;", cwd=tmp_path
    )
    assert (
        done.returncode == 2
        and "argument --table-name: 'bad name;' is not a valid name" in done.stderr
    )
    done = chatmem_cmd("ls", "--url", "ftp://x", cwd=tmp_path)
    assert done.returncode == 2 and "--url: unknown scheme 'ftp'" in done.stderr
    done = chatmem_cmd("nosuchcommand", cwd=tmp_path)
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_user_errors_never_print_a_traceback(tmp_path: Path) -> None:
    for args in (
        ["schema", "--url", "redis://localhost:6379/0"],
        ["ls", "--url", "SQLITE:///missing.db"],
        ["ls", "--url", "postgresql://nobody@127.0.0.1:9/none"],
        ["show", "", "--url", "sqlite:///x.db"],
        ["import", "missing.jsonl", "--url", "sqlite:///x.db"],
    ):
        done = chatmem_cmd(*args, cwd=tmp_path)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        assert done.returncode in (0, 1, 2), args
        if done.returncode:
            assert done.stderr.startswith(("chatmem: ", "usage: chatmem")), (args, done.stderr)
    schema = chatmem_cmd("schema", "--url", "redis://localhost:6379/0", cwd=tmp_path)
    assert (schema.returncode == 0 and "FT.CREATE" in schema.stdout) or schema.returncode in (1, 2)


def test_exit_codes_through_the_script(tmp_path: Path, store: str) -> None:
    ok = chatmem_cmd("show", "c1", "--url", store, cwd=tmp_path)
    assert ok.returncode == 0 and "hello" in ok.stdout and ok.stderr == ""
    missing = chatmem_cmd("show", "nope", "--url", store, cwd=tmp_path)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == "chatmem: no such conversation: 'nope'\n"
    no_store = chatmem_cmd("stats", "--url", "sqlite:///absent.db", cwd=tmp_path)
    assert no_store.returncode == 1 and not (tmp_path / "absent.db").exists()
    usage = chatmem_cmd("rm", "c1", cwd=tmp_path)  # no --url, no $CHATMEM_URL
    assert usage.returncode == 2 and "--url" in usage.stderr


def test_scheme_is_case_insensitive(run: Callable[..., tuple[int, str, str]], store: str) -> None:
    code, out, err = run("ls", "--url", store.replace("sqlite", "SQLite", 1))
    assert (code, out.split(), err) == (0, ["c1", "c2"], "")


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    """``chatmem ls | head -1`` with more output than a pipe buffers: no error text."""
    from chatmem.core import repository_from_url

    url = f"sqlite:///{tmp_path / 'many.db'}"
    repo = repository_from_url(url)
    for i in range(1500):  # ~300 KB of ids, far more than a pipe holds
        repo.save_all(f"{i:05d}-" + "x" * 190, [UserMessage("m")])
    proc = subprocess.Popen(
        [str(BIN), "ls", "--url", url, "--page-size", "100"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does after one line
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert first.startswith("00000-")
    assert err == ""


def test_broken_pipe_through_a_shell_pipeline(tmp_path: Path, store: str) -> None:
    done = subprocess.run(
        ["bash", "-c", f'"{BIN}" --help | head -1; echo "status=${{PIPESTATUS[0]}}"'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.splitlines()[0].startswith("usage: chatmem")
    assert "Broken pipe" not in done.stderr and "Traceback" not in done.stderr


# -- reading never creates a store --------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["ls"],
        ["ls", "-l"],
        ["show", "c1"],
        ["stats"],
        ["export"],
        ["export", "c1"],
    ],
)
def test_reading_a_missing_sqlite_file_is_an_error_and_creates_nothing(
    run: Callable[..., tuple[int, str, str]], tmp_path: Path, args: list[str]
) -> None:
    missing = tmp_path / "missing.db"
    code, out, err = run(*args, "--url", f"sqlite:///{missing}")
    assert code == 1 and out == ""
    assert "no SQLite database at" in err
    assert not missing.exists()
    code, out, err = run(*args)  # the demo default, never created by reading either
    assert code == 1 and not (tmp_path / "chatmem-demo.db").exists()


def test_migrate_from_a_missing_file_creates_neither_store(
    run: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    code, _, err = run("migrate", "--from", f"sqlite:///{src}", "--to", f"sqlite:///{dst}")
    assert code == 1 and "--from: no SQLite database" in err
    assert not src.exists() and not dst.exists()


def test_reading_never_creates_the_schema(
    run: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    """An existing database without chatmem's tables: reading is an error naming the fix, and
    the tables are still absent afterwards (initialize_schema never)."""
    import sqlite3

    path = tmp_path / "other.db"
    sqlite3.connect(path).execute("CREATE TABLE unrelated (x)").connection.commit()
    code, out, err = run("ls", "--url", f"sqlite:///{path}")
    assert code == 1 and out == "" and "chatmem schema" in err
    tables = {
        r[0]
        for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='table'")
    }
    assert tables == {"unrelated"}


# -- writing needs an explicit store --------------------------------------------------------------
@pytest.mark.parametrize("args", [["rm", "c1"], ["import", "dump.jsonl"]])
def test_writing_commands_need_an_explicit_url(
    run: Callable[..., tuple[int, str, str]], tmp_path: Path, args: list[str]
) -> None:
    (tmp_path / "dump.jsonl").write_text('{"conversation_id": "c1", "messages": []}\n')
    code, out, err = run(*args)
    assert code == 2 and out == "" and "--url" in err and "CHATMEM_URL" in err
    assert not (tmp_path / "chatmem-demo.db").exists()


def test_chatmem_url_counts_as_explicit(
    run: Callable[..., tuple[int, str, str]], store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHATMEM_URL", store)
    code, out, err = run("rm", "c2")
    assert code == 0 and err == "removed conversation 'c2' (1 message)\n" and out == ""
    assert list(ids_in(store)) == ["c1"]


def test_rm_says_what_it_removed_and_exit_1_when_missing(
    run: Callable[..., tuple[int, str, str]], store: str
) -> None:
    code, out, err = run("rm", "c1", "nope", "--url", store)
    assert code == 1 and out == ""
    assert "removed conversation 'c1' (2 messages)" in err
    assert "no such conversation: 'nope'" in err
    assert list(ids_in(store)) == ["c2"]


# -- show / ls / stats ----------------------------------------------------------------------------
def test_show_missing_id_is_exit_1_on_stderr(
    run: Callable[..., tuple[int, str, str]], store: str
) -> None:
    for extra in ([], ["--json"]):
        code, out, err = run("show", "nope", "--url", store, *extra)
        assert (code, out) == (1, "") and err == "chatmem: no such conversation: 'nope'\n"


def test_show_and_json(run: Callable[..., tuple[int, str, str]], store: str) -> None:
    code, out, err = run("show", "c1", "--url", store)
    assert code == 0 and err == "" and "hello" in out.splitlines()[0]
    code, out, _ = run("show", "c1", "--url", store, "--json")
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["text"] for r in records] == ["hello", "again"]
    assert [r["position"] for r in records] == sorted(r["position"] for r in records)


def test_ls_long_and_json(run: Callable[..., tuple[int, str, str]], store: str) -> None:
    code, out, err = run("ls", "--url", store, "--json")
    assert (
        code == 0
        and err == ""
        and [json.loads(x) for x in out.splitlines()]
        == [
            {"conversation_id": "c1"},
            {"conversation_id": "c2"},
        ]
    )
    code, out, _ = run("ls", "-l", "--url", store)
    counts = [line.split()[0] for line in out.splitlines()]
    assert counts == ["2", "1"] and out.splitlines()[0].endswith("  c1")
    code, out, _ = run("ls", "--long", "--json", "--url", store)
    rows = [json.loads(x) for x in out.splitlines()]
    assert [(r["conversation_id"], r["messages"]) for r in rows] == [("c1", 2), ("c2", 1)]
    assert all(r["last_activity"].endswith("+00:00") for r in rows)


def test_stats_json(run: Callable[..., tuple[int, str, str]], store: str) -> None:
    code, out, err = run("stats", "--url", store, "--json")
    assert code == 0 and err == ""
    assert json.loads(out)["conversations"] == 2 and json.loads(out)["messages"] == 3


def test_demo_then_ls_show(run: Callable[..., tuple[int, str, str]], tmp_path: Path) -> None:
    code, out, _ = run("demo")
    assert code == 0 and "system messages are never evicted" in out
    assert (tmp_path / "chatmem-demo.db").exists()
    code, out, _ = run("ls")
    assert out.split() == ["demo-trip"]
    code, out, _ = run("show", "demo-trip")
    assert out.splitlines()[0].split()[1] == "system" and "Pastéis de nata" in out


def test_schema_ddl_without_a_connection(
    run: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    code, out, err = run("schema", "--url", "sqlite:///nowhere.db")
    assert code == 0, err
    assert "CREATE TABLE ai_chat_memory_conversation" in out
    assert "CREATE INDEX ai_chat_memory_window_idx" in out
    assert not (tmp_path / "nowhere.db").exists()


def test_schema_ddl_needs_no_driver(run: Callable[..., tuple[int, str, str]]) -> None:
    """DDL for a server database prints from SQLAlchemy alone: the DB-API driver (psycopg,
    PyMySQL) need not be installed, since nothing connects."""
    for url, marker in (
        ("postgresql://db.internal/app", 'COLLATE "C"'),
        ("mysql://db.internal/app", "VARBINARY(1020)"),
    ):
        code, out, err = run("schema", "--url", url)
        assert code == 0, err
        assert "CREATE TABLE ai_chat_memory_conversation" in out and marker in out


def test_unexpected_errors_are_one_line(
    run: Callable[..., tuple[int, str, str]], store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem.core._transfer import BaseChatMemoryRepository

    def boom(self: Any, *a: Any, **k: Any) -> Any:
        raise RuntimeError("driver exploded")

    monkeypatch.setattr(BaseChatMemoryRepository, "iter_conversation_ids", boom)
    code, out, err = run("ls", "--url", store)
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.startswith("chatmem: unexpected RuntimeError: driver exploded")


def test_import_from_a_pipe(tmp_path: Path, store: str) -> None:
    """``... | chatmem import --url URL``: stdin is spooled, validated, then written."""
    line = '{"conversation_id": "piped", "messages": [{"v": 1, "type": "USER", "text": "hi"}]}\n'
    done = chatmem_cmd("import", "--url", store, cwd=tmp_path, input=line)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == "imported 1 conversations (1 messages)\n"
    assert ids_in(store)["piped"] == ["hi"]
    bad = subprocess.run(
        [str(BIN), "import", "--url", store],
        input=b'{"conversation_id": "caf\xe9", "messages": []}\n',
        capture_output=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.startswith(b"chatmem: FILE: is not UTF-8 text")
