"""``chatmem memories settings`` and ``chatmem memories work`` on a SQLite file, as a user
runs them: the settings a running process applies, the queue a ``LongTermMemory(durable=
True)`` left, and typed usage errors (exit 2) for bad input."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from chatmem.core._cli import main
from chatmem.core.longterm import AgentSettings, LongTermMemory, get_settings
from chatmem.jdbc import JdbcMemoryRecordRepository

pytestmark = pytest.mark.backend("sqlite")


def _url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memories.db'}"


def test_settings_show_and_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = _url(tmp_path)
    base = ["memories", "settings", "--url", url, "--create-schema", "--agent", "helper"]
    assert main(base) == 0
    assert capsys.readouterr().out.strip() == (
        "agent helper: enabled, pending memories expire after 7 days"
    )
    assert main([*base, "--disable", "--pending-days", "3"]) == 0
    assert "disabled, pending memories expire after 3 days" in capsys.readouterr().out
    assert main([*base, "--enable", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "enabled": True,
        "pending_ttl_seconds": 3 * 86400,
    }
    repo = JdbcMemoryRecordRepository(url)
    assert get_settings(repo, "helper") == AgentSettings(pending_ttl=timedelta(days=3))
    repo.close()


def test_settings_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = _url(tmp_path)
    base = ["memories", "settings", "--url", url, "--create-schema", "--agent", "helper"]
    assert main([*base, "--pending-days", "0"]) == 2
    assert "--pending-days" in capsys.readouterr().err
    for bad in ([*base, "--enable", "--disable"], [*base, "--pending-days", "x"], base[:-2]):
        with pytest.raises(SystemExit) as exc:
            main(bad)
        assert exc.value.code == 2
    assert "--agent" in capsys.readouterr().err
    assert main([*base[:-2], "--agent", "", "--disable"]) == 2
    assert "agent_id" in capsys.readouterr().err


def test_work_drains_what_a_durable_memory_queued(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _url(tmp_path)
    repo = JdbcMemoryRecordRepository(url)
    memory = LongTermMemory(repo, agent_id="helper", durable=True)  # no extractor here
    for text in ("I work at Acme Robotics.", "I prefer tables.", "I work at Acme Robotics."):
        assert memory.observe("ana", text)
    assert main(["memories", "work", "--url", url, "--lease-seconds", "5"]) == 0
    out = capsys.readouterr().out
    assert "analysed 3 queued messages: 2 memories stored as pending, 1 already known" in out
    assert len(repo.find(user_id="ana").records) == 2
    assert main(["memories", "work", "--url", url, "--agent", "helper"]) == 0
    assert "analysed 0 queued messages" in capsys.readouterr().out
    assert main(["memories", "work", "--url", url, "--lease-seconds", "0"]) == 2
    assert "--lease-seconds" in capsys.readouterr().err
    assert main(["memories", "work", "--url", url, "--complete", "nope:nothing"]) == 2
    assert "--complete" in capsys.readouterr().err
    repo.close()
