"""PostgreSQL-specific facts, on the real server the harness started (``--backend postgres``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import pytest
import sqlalchemy as sa

from chatmem.core import (
    AssistantMessage,
    MessageWindowChatMemory,
    SchemaError,
    UserMessage,
)
from chatmem.jdbc import JdbcChatMemoryRepository
from chatmem.testing.harness import ServerInfo

pytestmark = pytest.mark.backend("postgres")

Repo = JdbcChatMemoryRepository
TS = datetime(2024, 2, 29, 12, 34, 56, 789012, tzinfo=timezone.utc)


def test_columns_have_the_types_chosen_for_postgresql(repository: Repo, server: ServerInfo) -> None:
    engine = server.extra["engine"]
    sql = (
        "SELECT column_name, data_type, character_maximum_length, collation_name,"
        " datetime_precision FROM information_schema.columns WHERE table_name = :t"
    )
    with engine.connect() as conn:
        table = repository.config.table_name
        cols = {r[0]: r[1:] for r in conn.execute(sa.text(sql), {"t": table})}
        conv = {
            r[0]: r[1:]
            for r in conn.execute(sa.text(sql), {"t": repository.config.conversation_table_name})
        }
    assert cols["conversation_id"] == ("character varying", 255, "C", None)
    assert conv["conversation_id"] == ("character varying", 255, "C", None)
    assert cols["payload"][0] == "json"  # not jsonb: keeps number text exactly
    assert cols["content"][0] == "text"
    assert cols["created_at"] == ("timestamp without time zone", None, None, 6)
    assert cols["position"][0] == "bigint"


def test_microsecond_timestamps_are_stored_exactly(repository: Repo, server: ServerInfo) -> None:
    repository.save_all("ts", [UserMessage("a", created_at=TS)])
    with server.extra["engine"].connect() as conn:
        stored = conn.execute(sa.select(repository.tables.messages.c.created_at)).scalar_one()
    assert stored == TS.replace(tzinfo=None)
    assert repository.find_by_conversation_id("ts")[0].created_at == TS


def test_float_metadata_keeps_its_type_and_sign(repository: Repo) -> None:
    # JSONB would return 1e16 as the int 10000000000000000 and -0.0 as 0.0.
    values = {"big": 1e16, "huge": 1e300, "neg_zero": -0.0, "tiny": 5e-324, "int": 10**20}
    repository.save_all("f", [UserMessage("x", metadata=values)])
    back = dict(repository.find_by_conversation_id("f")[0].metadata)
    assert back == values
    assert {k: type(v) for k, v in back.items()} == {k: type(v) for k, v in values.items()}
    assert str(back["neg_zero"]) == "-0.0"


def test_payload_is_queryable_json(repository: Repo, server: ServerInfo) -> None:
    repository.save_all("q", [AssistantMessage("x", metadata={"model": "m-1"})])
    m = repository.tables.messages
    with server.extra["engine"].connect() as conn:
        model = conn.execute(
            sa.select(m.c.payload.op("->")("metadata").op("->>")("model"))
        ).scalar_one()
    assert model == "m-1"


def test_an_add_is_one_statement_in_autocommit(repository: Repo, server: ServerInfo) -> None:
    """Counted at the driver: one statement per add, none of psycopg's BEGIN/COMMIT round
    trips (it sends those only outside autocommit), the same for the window read."""
    assert type(repository._fast).__name__ == "PsycopgFastPath"
    memory = MessageWindowChatMemory(repository, max_messages=4)
    engine = server.extra["engine"]
    for i in range(30):  # crosses the trim boundary several times: still one statement each
        with driver_statements(engine) as seen:
            memory.add("one", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
        assert len(seen) == 1, seen
        sql, autocommit = seen[0]
        assert sql.lstrip().upper().startswith("WITH") and autocommit
    with driver_statements(engine) as seen:
        window = memory.get("one")
    assert len(seen) == 1 and seen[0][1]
    assert [m.text for m in window] == ["u28", "a28", "u29", "a29"]


def test_without_the_fast_path_an_add_is_still_one_statement(
    repository: Repo, server: ServerInfo
) -> None:
    """The SQLAlchemy route (other PostgreSQL drivers) runs the same single statement."""
    repository._fast = None
    memory = MessageWindowChatMemory(repository, max_messages=3)
    for i in range(10):
        with driver_statements(server.extra["engine"]) as seen:
            memory.add("sa", UserMessage(f"u{i}"))
        assert len(seen) == 1 and seen[0][1], seen
    assert [m.text for m in memory.get("sa")] == ["u7", "u8", "u9"]


def test_large_text_and_payload_round_trip(repository: Repo) -> None:
    text = "x" * 2_000_000 + "ü😀"
    big = UserMessage(text, metadata={"blob": "y" * 1_000_000})
    repository.append("big", big)
    assert repository.find_by_conversation_id("big") == [big]


@contextmanager
def driver_statements(engine: sa.Engine) -> Iterator[list[tuple[str, bool]]]:
    """Every statement psycopg executes inside the block (on ``engine``'s pooled connections
    and on the fast path's kept one), with the connection's autocommit flag (SQLAlchemy's
    events miss the driver-level fast path)."""
    import psycopg

    seen: list[tuple[str, bool]] = []
    real = psycopg.Cursor.execute

    def counted(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        seen.append((str(query), self.connection.autocommit))
        return real(self, query, params, **kw)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        psycopg.Cursor.execute = real  # type: ignore[method-assign]


def test_a_failing_fast_path_statement_is_translated_and_leaves_the_pool_usable(
    server: ServerInfo, make_repository: Callable[..., Repo]
) -> None:
    repo = make_repository()
    memory = MessageWindowChatMemory(repo, max_messages=5)
    memory.add("c", UserMessage("before"))
    repo.tables.metadata.drop_all(server.extra["engine"])
    with pytest.raises(SchemaError):
        memory.add("c", UserMessage("x"))
    with pytest.raises(SchemaError):
        memory.get("c")
    repo.create_schema()
    memory.add("c", UserMessage("after"))
    assert [m.text for m in memory.get("c")] == ["after"]
