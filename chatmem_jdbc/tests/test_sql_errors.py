"""Only a lost race is retried: a constraint the caller's schema adds (a trigger, a CHECK)
surfaces at once as the driver's own error, never as "kept conflicting with concurrent
writers" after every retry."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chatmem.core import (
    BackendError,
    ConcurrencyError,
    MessageWindowChatMemory,
    UserMessage,
    repository_from_url,
)

pytestmark = pytest.mark.backend("sqlite")


def test_a_trigger_failure_is_reported_not_retried(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    repo = repository_from_url(url)
    db = sqlite3.connect(tmp_path / "chat.db")
    db.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON ai_chat_memory "
        "WHEN NEW.conversation_id = 'refused' BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
    )
    db.commit()
    db.close()
    memory = MessageWindowChatMemory(repo)
    for write in (
        lambda: repo.save_all("refused", [UserMessage("a")]),
        lambda: memory.add("refused", UserMessage("b")),
    ):
        with pytest.raises(BackendError) as caught:
            write()
        assert not isinstance(caught.value, ConcurrencyError)
        assert "disk on fire" in str(caught.value.__cause__)
    assert repo.find_by_conversation_id("refused") == []
    memory.add("other", UserMessage("fine"))  # the same repository keeps working
    assert repo.find_by_conversation_id("other") == [UserMessage("fine")]
