"""The ``chatmem`` command on every backend: reading commands never create a store or schema.

Run against the backend's cold default namespace (no table, index, keyspace or constraint
yet), exactly as a user pointing the command at a fresh store would."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatmem.core import SchemaError, repository_from_url
from chatmem.core._cli import main
from chatmem.testing.harness import Harness, ServerInfo, Unavailable


@pytest.fixture
def cold_url(harness: Harness, server: ServerInfo) -> Iterator[str]:
    try:
        url = harness.cold_default_url(server)
    except Unavailable as exc:
        pytest.skip(f"no cold default namespace on {harness.name}: {exc}")
    yield url
    harness.cleanup_cold_default(server, url)


READING = (["ls"], ["ls", "-l", "--json"], ["stats", "--json"], ["show", "c1"], ["export"])


def test_reading_commands_leave_a_cold_store_without_schema(
    cold_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each reading command either reads the cold store as empty (exit 0; stores whose plain
    reads need no schema, such as Redis without its search index) or fails cleanly (exit 1,
    schema missing); afterwards the schema is still absent."""
    monkeypatch.delenv("CHATMEM_URL", raising=False)
    for args in READING:
        code = main([*args, "--url", cold_url])
        out, err = capsys.readouterr()
        assert "Traceback" not in err, args
        if args[0] == "show":
            assert code == 1 and out == "", args
        elif code == 0:
            assert out in (
                "",
                '{"conversations": 0, "messages": 0, "oldest": null, "newest": null}\n',
            )
        else:
            assert code == 1 and out == "" and err.startswith("chatmem: "), (args, err)
    repo = repository_from_url(cold_url, initialize_schema="never")
    try:
        with pytest.raises(SchemaError):
            repo._schema_check()  # type: ignore[attr-defined]  # the "never" mode's probe
    finally:
        close = getattr(repo, "close", None)
        if callable(close):
            close()
