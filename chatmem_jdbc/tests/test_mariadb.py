"""MariaDB-specific facts, on the real server the harness started (``--backend mariadb``).

The local harness keeps the server's defaults (latin1, case-insensitive PAD SPACE
collations), so these tests also show chatmem does not depend on the server's settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import pytest
import sqlalchemy as sa

from chatmem.core import (
    AssistantMessage,
    ChatTurn,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem.jdbc import JdbcChatMemoryRepository
from chatmem.testing.harness import ServerInfo

pytestmark = pytest.mark.backend("mariadb")

Repo = JdbcChatMemoryRepository
TS = datetime(2024, 2, 29, 12, 34, 56, 789012, tzinfo=timezone.utc)


def columns(engine: sa.Engine, table: str) -> dict[str, tuple[Any, ...]]:
    sql = (
        "SELECT column_name, column_type, character_set_name, collation_name"
        " FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = :t"
    )
    with engine.connect() as conn:
        return {r[0]: tuple(r[1:]) for r in conn.execute(sa.text(sql), {"t": table})}


def test_columns_have_the_types_chosen_for_mariadb(repository: Repo, server: ServerInfo) -> None:
    engine = server.extra["engine"]
    cols = columns(engine, repository.config.table_name)
    conv = columns(engine, repository.config.conversation_table_name)
    assert cols["conversation_id"] == ("varbinary(1020)", None, None)
    assert conv["conversation_id"] == ("varbinary(1020)", None, None)
    assert cols["content"] == ("longtext", "utf8mb4", "utf8mb4_bin")
    assert cols["payload"] == ("longtext", "utf8mb4", "utf8mb4_bin")
    assert cols["created_at"][0] == "datetime(6)"
    assert conv["updated_at"][0] == "datetime(6)"


def test_default_collation_would_fold_ids_but_ours_do_not(
    repository: Repo, server: ServerInfo
) -> None:
    with server.extra["engine"].connect() as conn:
        folded = conn.execute(sa.text("SELECT 'a' = 'A ', 'naïve' = 'naive'")).one()
    assert tuple(folded) == (1, 1)  # the trap: case, accents and trailing spaces ignored
    for cid in ("a", "A ", "naïve", "naive", "a "):
        repository.save_all(cid, [UserMessage(cid)])
    for cid in ("a", "A ", "naïve", "naive", "a "):
        assert [m.text for m in repository.find_by_conversation_id(cid)] == [cid]
    assert sorted(repository.find_conversation_ids()) == sorted(["a", "A ", "naïve", "naive", "a "])


def test_longest_id_of_four_byte_characters_fits(repository: Repo) -> None:
    cid = "😀" * 255  # 1020 UTF-8 bytes
    repository.append(cid, UserMessage("x"))
    assert repository.find_conversation_ids() == [cid]
    assert [m.text for m in repository.find_by_conversation_id(cid)] == ["x"]


def test_microsecond_timestamps_are_stored_exactly(repository: Repo, server: ServerInfo) -> None:
    repository.save_all("ts", [UserMessage("a", created_at=TS)])
    with server.extra["engine"].connect() as conn:
        stored = conn.execute(sa.select(repository.tables.messages.c.created_at)).scalar_one()
    assert stored == TS.replace(tzinfo=None)
    assert repository.find_by_conversation_id("ts")[0].created_at == TS


def test_text_beyond_64_kib_and_four_byte_characters_round_trip(repository: Repo) -> None:
    big = UserMessage("ü" * 100_000 + "😀", metadata={"emoji": "🙂" * 50_000})
    repository.append("big", big)
    assert repository.find_by_conversation_id("big") == [big]


def test_an_add_is_one_upsert_and_one_insert(repository: Repo, server: ServerInfo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=4)
    engine = server.extra["engine"]
    trims = 0
    for i in range(30):
        with count_statements(engine) as seen:
            memory.add("one", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
        assert seen[0].startswith("INSERT INTO") and "LAST_INSERT_ID" in seen[0].upper(), seen
        assert seen[1].startswith("INSERT INTO"), seen
        if len(seen) > 2:  # every few adds: find the cut, delete what the window cannot show
            trims += 1
            assert len(seen) == 4 and seen[3].startswith("DELETE"), seen
    assert 0 < trims < 30
    with count_queries() as sent:
        window = memory.get("one")
    # the kept connection is in autocommit: the read is its SELECT alone
    assert len(sent) == 1 and sent[0].startswith("SELECT") and ";" not in sent[0], sent
    assert [m.text for m in window] == ["u28", "a28", "u29", "a29"]


def test_a_turn_is_one_query_per_read_and_per_append(repository: Repo) -> None:
    """On an engine ``make_engine`` made, the bounded read and the append each go as one
    query on the kept connection in autocommit: the read its SELECT alone, the append one
    multi-statement transaction (START TRANSACTION .. COMMIT)."""
    repository.save_all("turn", [UserMessage(f"m{i}") for i in range(30)])
    for i in range(3):
        with count_queries() as sent, ChatTurn(repository, "turn", last=20) as turn:
            assert len(turn.history) == 20
            turn.append([UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
        assert len(sent) == 2, sent
        assert sent[0].startswith("SELECT") and ";" not in sent[0], sent
        assert sent[1].upper().startswith("START TRANSACTION;"), sent
        assert "LAST_INSERT_ID" in sent[1].upper() and sent[1].upper().endswith(";COMMIT")
    stored = repository.find_by_conversation_id("turn")
    assert [m.text for m in stored[-6:]] == ["u0", "a0", "u1", "a1", "u2", "a2"]
    assert [m.position for m in stored] == list(range(36))


def test_add_and_get_is_one_query(repository: Repo) -> None:
    """Under ``keep_history`` the add and the window read go as one multi-statement query
    (reserve, insert, the window SELECT, COMMIT), and return what ``get`` then reads."""
    memory = MessageWindowChatMemory(repository, max_messages=4, keep_history=True)
    memory.add("one", [UserMessage("u0"), AssistantMessage("a0"), UserMessage("u1")])
    with count_queries() as sent:
        window = memory.add_and_get("one", AssistantMessage("a1"))
    assert len(sent) == 1 and "LAST_INSERT_ID" in sent[0].upper(), sent
    assert "SELECT" in sent[0].upper() and sent[0].upper().endswith(";COMMIT"), sent
    assert window == memory.get("one") and [m.text for m in window] == ["u0", "a0", "u1", "a1"]


def test_an_engine_made_elsewhere_keeps_one_statement_per_trip(server: ServerInfo) -> None:
    """Without multi-statement connections (an engine the application made itself) the
    repository runs its statements one by one, with the same results."""
    assert server.url is not None
    engine = sa.create_engine(server.url)
    repo = Repo(engine, table_name="cm_plain_engine", initialize_schema="always")
    try:
        assert repo._fast is None
        with ChatTurn(repo, "p", last=5) as turn:
            turn.append([UserMessage("u"), AssistantMessage("a")])
        assert [m.text for m in repo.find_last("p", 5)] == ["u", "a"]
    finally:
        repo.tables.metadata.drop_all(engine)
        engine.dispose()


@contextmanager
def count_queries() -> Iterator[list[str]]:
    """Every query PyMySQL sends inside the block (one per round trip), as text."""
    import pymysql.connections

    sent: list[str] = []
    real = pymysql.connections.Connection._execute_command

    def spy(self: Any, command: int, sql: Any) -> Any:
        text = sql.decode("utf-8", "replace") if isinstance(sql, (bytes, bytearray)) else sql
        sent.append(str(text).lstrip())
        return real(self, command, sql)

    pymysql.connections.Connection._execute_command = spy  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        pymysql.connections.Connection._execute_command = real  # type: ignore[method-assign]


@contextmanager
def count_statements(engine: sa.Engine) -> Iterator[list[str]]:
    """The SQL of every statement SQLAlchemy sends to the server inside the block."""
    seen: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement.lstrip())

    sa.event.listen(engine, "before_cursor_execute", before)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", before)


def test_the_pool_rolls_back_only_connections_with_an_open_transaction(
    server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pymysql.connections

    from chatmem.jdbc import make_engine

    assert server.url is not None
    rollbacks: list[bool] = []
    real = pymysql.connections.Connection.rollback

    def counted(self: Any) -> None:
        rollbacks.append(True)
        real(self)

    monkeypatch.setattr(pymysql.connections.Connection, "rollback", counted)
    engine = make_engine(server.url)
    repo = Repo(engine, table_name="cm_reset_on_return", initialize_schema="always")
    try:
        memory = MessageWindowChatMemory(repo, max_messages=5, keep_history=True)
        memory.add("c", UserMessage("warm"))
        rollbacks.clear()
        memory.add("c", UserMessage("committed, so returned as is"))
        assert rollbacks == []
        raw = engine.raw_connection()  # a read left inside its implicit transaction
        cursor = raw.cursor()
        cursor.execute("SELECT COUNT(*) FROM cm_reset_on_return")
        cursor.fetchall()
        raw.close()
        assert rollbacks == [True]
    finally:
        repo.tables.metadata.drop_all(engine)
        engine.dispose()
