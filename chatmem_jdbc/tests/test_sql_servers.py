"""Facts every SQL server dialect shares, run on each real server (PostgreSQL, MariaDB)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa

from chatmem.core import (
    AssistantMessage,
    BackendUnavailableError,
    MessageWindowChatMemory,
    SchemaError,
    SystemMessage,
    UserMessage,
)
from chatmem.jdbc import JdbcChatMemoryRepository, schema_sql
from chatmem.testing.harness import ServerInfo, free_port, unique_suffix

pytestmark = pytest.mark.backend("postgres", "mariadb")

Repo = JdbcChatMemoryRepository


def test_appends_trim_rows_the_window_can_no_longer_show(repository: Repo) -> None:
    memory = MessageWindowChatMemory(repository, max_messages=10)
    memory.add("t", SystemMessage("sys"))
    for i in range(200):
        memory.add("t", UserMessage(f"u{i}"))
    log = repository.find_by_conversation_id("t")
    assert len(log) <= 1 + 2 * 11
    assert log[0].text == "sys"
    assert [m.text for m in memory.get("t")] == ["sys", *[f"u{i}" for i in range(191, 200)]]


@pytest.mark.parametrize("mode", ["embedded", "never", False])
def test_schema_embedded_and_never_modes_create_nothing_on_a_server(
    server: ServerInfo, mode: object
) -> None:
    name = f"cm_{unique_suffix()}"
    repo = JdbcChatMemoryRepository(server.extra["engine"], table_name=name, initialize_schema=mode)  # type: ignore[arg-type]
    assert not sa.inspect(server.extra["engine"]).has_table(name)
    with pytest.raises(SchemaError, match="chatmem schema --url") as info:
        repo.save_all("c", [UserMessage("x")])
    assert f"table {name}" in str(info.value) and "create_schema()" in str(info.value)
    with pytest.raises(SchemaError):
        repo.find_by_conversation_id("c")
    assert not sa.inspect(server.extra["engine"]).has_table(name)
    repo.create_schema()
    repo.save_all("c", [UserMessage("x")])
    assert repo.find_by_conversation_id("c") == [UserMessage("x")]
    repo.tables.metadata.drop_all(server.extra["engine"])


def test_the_default_creates_the_schema_on_a_server(server: ServerInfo) -> None:
    name = f"cm_{unique_suffix()}"
    repo = JdbcChatMemoryRepository(server.extra["engine"], table_name=name)
    try:
        assert repo.config.initialize_schema == "always"
        assert sa.inspect(server.extra["engine"]).has_table(name)
    finally:
        repo.tables.metadata.drop_all(server.extra["engine"])


def test_schema_always_mode_is_idempotent(make_repository: Callable[..., Repo]) -> None:
    first = make_repository()
    first.save_all("c", [UserMessage("kept")])
    again = make_repository(table_name=first.config.table_name)
    assert [m.text for m in again.find_by_conversation_id("c")] == ["kept"]


def test_exported_ddl_creates_a_working_schema(
    server: ServerInfo, make_repository: Callable[..., Repo]
) -> None:
    engine = server.extra["engine"]
    name = f"cm_{unique_suffix()}"
    ddl = schema_sql(f"{engine.dialect.name}://", table_name=name)
    with engine.begin() as conn:
        for statement in ddl.split(";\n"):
            if statement.strip():
                conn.exec_driver_sql(statement)
    repo = make_repository(table_name=name, initialize_schema="never")
    repo.append("c", [UserMessage("u"), AssistantMessage("a")])
    assert [m.text for m in repo.find_by_conversation_id("c")] == ["u", "a"]
    assert ddl == ";\n\n".join(repo.schema_sql()) + ";\n"


def test_an_unreachable_server_is_backend_unavailable(server: ServerInfo) -> None:
    url = sa.make_url(server.url).set(host="127.0.0.1", port=free_port())
    text = url.render_as_string(hide_password=False)
    with pytest.raises(BackendUnavailableError):  # the default creates the schema at once
        JdbcChatMemoryRepository.from_url(text)
    repo = JdbcChatMemoryRepository.from_url(text, initialize_schema="never")
    try:
        with pytest.raises(BackendUnavailableError):  # the first-use schema check
            repo.find_by_conversation_id("c")
        repo._schema_check.passed()  # as if verified before the server went away
        with pytest.raises(BackendUnavailableError) as info:
            repo.find_by_conversation_id("c")
        assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
        with pytest.raises(BackendUnavailableError) as info:  # the driver-level fast path
            MessageWindowChatMemory(repo).add("c", UserMessage("x"))
        assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
        with pytest.raises(BackendUnavailableError) as info:
            MessageWindowChatMemory(repo).get("c")
        assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
    finally:
        repo.close()
