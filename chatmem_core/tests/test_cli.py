"""The chatmem console script against a SQLite file."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

from chatmem.core._cli import main


def run(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(list(args))
    return code, buf.getvalue()


def test_demo_then_ls_show_rm(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    code, out = run("demo", "--url", url)
    assert code == 0
    assert "evicted" in out and "system messages are never evicted" in out
    code, out = run("ls", "--url", url)
    assert out.split() == ["demo-trip"]
    code, out = run("show", "demo-trip", "--url", url)
    lines = out.splitlines()
    assert lines[0].split()[1] == "system" and "Pastéis de nata" in lines[-1]
    code, out = run("show", "demo-trip", "--json", "--url", url)
    assert '"type": "SYSTEM"' in out.splitlines()[0]
    assert run("rm", "demo-trip", "--url", url)[0] == 0
    assert run("ls", "--url", url)[1] == ""


def test_schema_prints_ddl_without_a_connection() -> None:
    code, out = run("schema", "--url", "sqlite:///nowhere.db")
    assert code == 0 and "CREATE TABLE ai_chat_memory_conversation" in out
    assert "CREATE INDEX ai_chat_memory_window_idx" in out


def test_bad_url_is_a_clean_error(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["ls", "--url", "ftp://x"]) == 2
    assert "unknown scheme" in capsys.readouterr().err
