"""``chatmem memories ...`` with ``--url`` naming each non-SQL store, run as a user runs it:
the command opens the store at its default names, the records a program stored are listed,
reviewed and removed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chatmem.core._cli import main
from chatmem.core.longterm import MemoryCandidate, MemoryType
from chatmem.testing.harness import Harness, ServerInfo, unique_suffix

from .conftest import open_store, store_url

pytestmark = pytest.mark.backend("redis", "mongo", "cassandra", "neo4j")


def test_memories_ls_approve_and_rm_on_the_store_at_url(
    harness: Harness, server: ServerInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    url = store_url(server)
    repo = open_store(server, harness.name)  # the default names, as the CLI opens them
    user = f"ana-{unique_suffix()}"  # default names are shared: this test's own user
    ids = [
        repo.add(
            "agent",
            user,
            MemoryCandidate(memory_type=MemoryType(kind), content=text, confidence=0.9),
        ).record.id
        for kind, text in [
            ("preference", "The user prefers tables."),
            ("fact", "The user is a CTO."),
        ]
    ]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "chatmem.core._cli", "memories", "ls", "--url", url,
             "--user", user, "--json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        assert sorted(r["id"] for r in rows) == sorted(ids)
        assert {r["status"] for r in rows} == {"pending"}
        assert main(["memories", "approve", ids[0], "--url", url, "--reviewer", "rita"]) == 0
        assert "approved" in capsys.readouterr().out
        assert main(["memories", "approve", ids[0], "--url", url]) == 1  # a conflict
        assert "is approved, not pending" in capsys.readouterr().err
        assert main(["memories", "ls", "--url", url, "--user", user, "--status", "approved"]) == 0
        out = capsys.readouterr().out
        assert ids[0] in out and ids[1] not in out
        assert main(["memories", "rm", ids[1], "--url", url]) == 0
        assert main(["memories", "rm", ids[1], "--url", url]) == 1
        # --table-name reaches a store whose record class takes a table name (Cassandra's
        # rejects this one as an identifier); the others refuse the flag by its name
        assert main(["memories", "ls", "--url", url, "--table-name", "bad name;"]) == 2
        err = capsys.readouterr().err
        if harness.name == "cassandra":
            assert "--table-name:" in err and "is not an option" not in err
        else:
            assert "--table-name: is not an option of" in err
    finally:
        for rid in ids:
            repo.delete(rid)
        repo.close()  # type: ignore[attr-defined]


def _named_options(harness: str, server: ServerInfo) -> dict[str, str]:
    """Options naming where this test's records live, other than each store's defaults."""
    suffix = unique_suffix()
    if harness == "cassandra":
        return {"keyspace": str(server.extra["keyspace"])}
    return {
        "redis": {"key_prefix": f"cli{suffix}:", "index_name": f"cli{suffix}"},
        "mongo": {"collection_name": f"cli_{suffix}"},
        "neo4j": {"memory_label": f"CliMemory{suffix}"},
    }[harness]


def test_store_options_reach_the_record_store_class(
    harness: Harness, server: ServerInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--store-option NAME=VALUE`` opens records kept under non-default names (a Redis
    prefix and index, a MongoDB collection, a Neo4j label, a Cassandra keyspace); a name
    the class does not take is a usage error naming the flag and listing what it takes."""
    url = store_url(server)
    options = _named_options(harness.name, server)
    repo = open_store(server, harness.name, **options)
    user = f"ana-{unique_suffix()}"
    candidate = MemoryCandidate(
        memory_type=MemoryType.FACT, content="The user is a CTO.", confidence=0.9
    )
    rid = repo.add("agent", user, candidate).record.id
    flags = [f for name, value in options.items() for f in ("--store-option", f"{name}={value}")]
    try:
        assert main(["memories", "ls", "--url", url, "--user", user, "--json", *flags]) == 0
        assert [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()] == [rid]
        if harness.name != "cassandra":  # its option names the keyspace the URL names too
            assert main(["memories", "ls", "--url", url, "--user", user, "--create-schema"]) == 0
            assert capsys.readouterr().out == ""  # the default names hold none of them
        name = next(iter(options))
        assert main(["memories", "ls", "--url", url, "--store-option", f"{name}x=1"]) == 2
        err = capsys.readouterr().err
        assert "--store-option:" in err and "it takes: " in err and name in err
        assert main(["memories", "ls", "--url", url, *flags, *flags]) == 2
        assert "given twice" in capsys.readouterr().err
    finally:
        repo.delete(rid)
        repo.close()  # type: ignore[attr-defined]
