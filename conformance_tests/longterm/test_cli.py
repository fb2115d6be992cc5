"""``chatmem memories ...`` on a SQLite file, and ``chatmem serve``'s key rules, run as a user
runs them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from chatmem.core import AssistantMessage, UserMessage
from chatmem.core._cli import main
from chatmem.core.longterm import MemoryCandidate, MemoryType
from chatmem.jdbc import JdbcMemoryRecordRepository

from ._server import serve

pytestmark = pytest.mark.backend("sqlite")


def seeded(tmp_path: Path) -> tuple[str, list[str]]:
    url = f"sqlite:///{tmp_path / 'memories.db'}"
    repo = JdbcMemoryRecordRepository(url)
    ids = [
        repo.add(
            "agent",
            user,
            MemoryCandidate(memory_type=MemoryType(kind), content=text, confidence=0.9),
        ).record.id
        for user, kind, text in [
            ("ana", "preference", "The user prefers tables."),
            ("ana", "fact", "The user is a CTO."),
            ("bob", "context", "The user travels next week."),
        ]
    ]
    repo.close()
    return url, ids


def test_memories_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, ids = seeded(tmp_path)
    assert main(["memories", "ls", "--url", url, "--user", "ana", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["content"] for r in rows} == {"The user prefers tables.", "The user is a CTO."}
    assert main(["memories", "approve", ids[0], "--url", url, "--reviewer", "rita"]) == 0
    assert "approved" in capsys.readouterr().out
    assert main(["memories", "reject", ids[1], "--url", url, "--reason", "wrong"]) == 0
    assert main(["memories", "approve", ids[1], "--url", url]) == 1  # a conflict
    assert "is rejected, not pending" in capsys.readouterr().err
    assert main(["memories", "ls", "--url", url, "--status", "approved"]) == 0
    out = capsys.readouterr().out
    assert ids[0] in out and ids[1] not in out
    assert main(["memories", "expire", "--url", url]) == 0
    assert "expired 0 pending memories" in capsys.readouterr().out
    assert main(["memories", "rm", ids[2], "--url", url]) == 0
    assert main(["memories", "rm", ids[2], "--url", url]) == 1
    assert main(["memories", "approve", "not-a-uuid", "--url", url]) == 2
    assert "record_id" in capsys.readouterr().err
    assert main(["memories", "schema", "--url", "postgresql://"]) == 0
    assert "CREATE TABLE ai_memory_record" in capsys.readouterr().out
    assert main(["memories", "forget", "--url", url, "--user", "ana"]) == 0
    assert "deleted 2 memories of user ana" in capsys.readouterr().out
    assert main(["memories", "ls", "--url", url, "--user", "ana"]) == 0
    assert capsys.readouterr().out == ""
    with pytest.raises(SystemExit) as usage:  # --user is required: never "forget everyone"
        main(["memories", "forget", "--url", url])
    assert usage.value.code == 2 and "--user" in capsys.readouterr().err


def test_memories_create_no_schema_without_create_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert main(["memories", "ls", "--url", url]) == 1  # the schema is missing
    assert "ai_memory_record" in capsys.readouterr().err
    with sqlite3.connect(tmp_path / "fresh.db") as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == []
    assert main(["memories", "ls", "--url", url, "--create-schema"]) == 0
    assert main(["memories", "ls", "--url", url, "--table-name", "team_memories"]) == 1
    capsys.readouterr()
    assert main(["memories", "schema", "--url", url, "--table-name", "team_memories"]) == 0
    assert "CREATE TABLE team_memories" in capsys.readouterr().out


def test_store_option_typos_are_usage_errors_before_any_io(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--store-option`` takes NAME=VALUE for a text option of the store's class; the
    options with flags of their own are refused by the flag's name, and nothing is created."""
    url = f"sqlite:///{tmp_path / 'none.db'}"
    cases = {
        "table_name=x": "is set with --table-name",
        "initialize_schema=always": "is set with --create-schema",
        "table_nme=x": "it takes: none",
        "no-equals-sign": "is not NAME=VALUE",
    }
    for option, message in cases.items():
        assert main(["memories", "ls", "--url", url, "--store-option", option]) == 2
        err = capsys.readouterr().err
        assert "--store-option:" in err and message in err, err
    assert not (tmp_path / "none.db").exists()


def test_memories_finds_a_third_party_record_store_by_its_scheme(tmp_path: Path) -> None:
    """A record store registered in ``chatmem.memory_stores`` by another distribution is
    opened through its ``from_url``; it has no ``schema_sql_for`` and takes no table name,
    so ``memories schema`` and ``--table-name`` are usage errors (exit 2) naming the flag."""
    (tmp_path / "notes_store.py").write_text(
        textwrap.dedent(
            """
            from chatmem.core.longterm import InMemoryMemoryRecordRepository

            class NotesMemoryRecordRepository(InMemoryMemoryRecordRepository):
                @classmethod
                def from_url(cls, url, *, initialize_schema="always"):
                    print("opened", url, initialize_schema)
                    return cls()
            """
        )
    )
    info = tmp_path / "notes_store-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: notes-store\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[chatmem.memory_stores]\nnotes = notes_store:NotesMemoryRecordRepository\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "chatmem.core._cli", "memories", *args],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip

    listed = run("ls", "--url", "notes://box", "--create-schema")
    assert (listed.returncode, listed.stdout) == (0, "opened notes://box always\n")
    assert run("expire", "--url", "notes://box").stdout.startswith("opened notes://box never\n")
    refused = run("ls", "--url", "notes://box", "--table-name", "t")
    assert refused.returncode == 2 and "--table-name: is not an option of" in refused.stderr
    schema = run("schema", "--url", "notes://box")
    assert schema.returncode == 2 and "has no schema script" in schema.stderr
    unknown = run("ls", "--url", "nosuch://x")
    assert unknown.returncode == 2 and "known schemes:" in unknown.stderr
    assert "notes" in unknown.stderr and "sqlite" in unknown.stderr


def test_serve_refuses_a_public_address_without_a_key(tmp_path: Path) -> None:
    url, _ = seeded(tmp_path)
    for extra in ([], ["--no-auth"]):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "chatmem.core._cli",
                "serve",
                "--url",
                url,
                "--host",
                "0.0.0.0",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin"},
        )
        assert done.returncode == 2
        assert "0.0.0.0" in done.stderr


def _get(url: str, key: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"X-API-Key": key} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_serve_requires_the_api_key(tmp_path: Path) -> None:
    url, ids = seeded(tmp_path)
    with serve(url, env={"CHATMEM_API_KEY": "key-from-the-environment"}) as (base, _):
        assert _get(base + "api/memories")[0] == 401
        assert _get(base + "api/memories", "wrong-key-123")[0] == 401
        status, body = _get(base + "api/memories?user_id=bob", "key-from-the-environment")
        assert status == 200 and [i["id"] for i in json.loads(body)["items"]] == [ids[2]]
        assert "Long-term memory review" in _get(base)[1]


def test_serve_on_loopback_without_a_key_generates_one(tmp_path: Path) -> None:
    url, _ = seeded(tmp_path)
    with serve(url) as (base, log):
        assert _get(base + "api/memories")[0] == 401
        printed = [line for line in log.read_text().splitlines() if "API key" in line]
        key = printed[0].rsplit(" ", 1)[1]
        assert len(key) >= 24 and _get(base + "api/memories", key)[0] == 200


def _history(tmp_path: Path, conversations: int, per: int) -> str:
    """A SQLite chat store of ``conversations`` x ``per`` distinct facts, each followed by a
    reply (so positions are 0, 2, 4, ...)."""
    from chatmem.jdbc import JdbcChatMemoryRepository

    url = f"sqlite:///{tmp_path / 'history.db'}"
    chat = JdbcChatMemoryRepository.from_url(url)
    for c in range(conversations):
        messages = []
        for i in range(per):
            messages += [UserMessage(f"I work at Company{c}x{i}."), AssistantMessage("Noted.")]
        chat.save_all(f"c{c}", messages)
    chat.close()
    return url


def _analyse(url: str, *extra: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "chatmem.core._cli", "memories", "analyse", "--url", url]
    command += ["--agent", "helper", "--user", "ana", "--create-schema", *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _sources(url: str) -> list[tuple[str, int]]:
    repo = JdbcMemoryRecordRepository(url)
    found, cursor = [], None
    while True:
        page = repo.find(user_id="ana", limit=1000, cursor=cursor)
        found += [(r.conversation_id or "", r.message_position or 0) for r in page.records]
        if page.next_cursor is None:
            repo.close()
            return found
        cursor = page.next_cursor


def test_two_processes_share_a_backfill_and_a_killed_one_is_run_again(tmp_path: Path) -> None:
    """1,000 user messages: shard 1/2 killed (-9) part way, then both shards side by side,
    then the whole backfill again: every message analysed, one record each, none twice."""
    url = _history(tmp_path, 200, 5)
    expected = sorted((f"c{c}", 2 * i) for c in range(200) for i in range(5))
    killed = _analyse(url, "--shard", "1/2")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and killed.poll() is None:
        time.sleep(0.2)
        if len(_sources(url)) >= 50:
            break
    killed.kill()
    killed.communicate()
    partial = len(_sources(url))
    assert 0 < partial < 1000, f"kill it part way: {partial} records when killed"
    shards = [_analyse(url, "--shard", f"{k}/2") for k in range(2)]
    outputs = [p.communicate(timeout=300) for p in shards]
    assert [p.returncode for p in shards] == [0, 0], outputs
    assert "failed" in outputs[0][0] and " 0 failed" in outputs[0][0]
    messages = sum(int(out.split()[1]) for out, _ in outputs)
    assert messages == 1000, outputs
    assert sorted(_sources(url)) == expected
    again = _analyse(url)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert "analysed 1000 user messages in 200 conversations" in out
    assert "0 memories stored as pending, 1000 already known" in out
    assert sorted(_sources(url)) == expected


def test_analyse_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = _history(tmp_path, 1, 1)
    base = ["memories", "analyse", "--url", url, "--agent", "a", "--user", "u"]
    assert main([*base, "--shard", "2/2"]) == 2
    assert "shard" in capsys.readouterr().err
    assert main([*base, "--complete", "no_such_module:complete"]) == 2
    assert "--complete" in capsys.readouterr().err
    missing = f"sqlite:///{tmp_path / 'nothing.db'}"
    assert main(["memories", "analyse", "--url", missing, "--agent", "a", "--user", "u"]) != 0
    assert not (tmp_path / "nothing.db").exists()
    with pytest.raises(SystemExit):
        main(["memories", "analyse", "--url", url, "--agent", "a"])
    assert "--user" in capsys.readouterr().err
