# Generated from chatmem_jdbc/chatmem/jdbc/_async/spring_ai.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The Spring AI layout: chat memory in the table Spring AI's ``JdbcChatMemoryRepository``
(2.0) reads and writes, so a Spring AI service and a Python one share conversations.

Spring's table ``SPRING_AI_CHAT_MEMORY`` has one row per message: ``conversation_id``
(VARCHAR(36)), ``content`` (TEXT), ``type`` (USER, ASSISTANT, SYSTEM, TOOL), ``"timestamp"``
(TIMESTAMP without zone, written and read as UTC; on SQLite INTEGER epoch milliseconds, as
sqlite-jdbc stores it) and ``sequence_id`` (BIGINT), in which order Spring reads a
conversation. Spring's ``saveAll`` rewrites a conversation as ``0..n-1``; chatmem's appends
take ``max + 1`` under a per-conversation lock (PostgreSQL:
``pg_advisory_xact_lock(hashtext(conversation_id))``; MariaDB/MySQL: ``GET_LOCK``, held
until after the commit; SQLite: the database's write lock, taken by ``BEGIN IMMEDIATE``), so
concurrent chatmem writers lose nothing and a replace is one transaction. What the table
cannot hold (tool calls, tool responses, media, metadata) is refused with
``InvalidArgumentError`` unless named in ``lossy``. PostgreSQL, MariaDB/MySQL and SQLite
(Spring's SQL Server and Oracle scripts: DDL export only).
"""

# The SQL below is built from the table name, a validated SQL identifier, never user text.

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from chatmem.core import Message, SchemaMode
from chatmem.core.backend import (
    ConcurrencyError,
    ConversationIdPage,
    SchemaCheck,
    WindowEdit,
    owning,
    spring_ai_lossy,
    spring_ai_storable,
    stamp,
    validate_messages,
    validate_positive_int,
)

from .._config import JdbcConfig, without_layout
from .._errors import translate_errors
from .._native.dialects import dialect_for
from .._native.spring_ai import (
    SPRING_AI_INITIALIZE_SCHEMA,
    SPRING_AI_TABLE_NAME,
    ddl_flavour_of,
    decode,
    epoch_millis,
    exact_edit,
    flavour_of,
    naive_utc,
    spring_ai_schema,
    statements,
)
from .engine import make_engine, memory_lock
from .repository import JdbcChatMemoryRepository


class SpringAiJdbcChatMemoryRepository(JdbcChatMemoryRepository):
    """Chat memory in Spring AI's ``SPRING_AI_CHAT_MEMORY`` table on PostgreSQL,
    MariaDB/MySQL or SQLite, readable and writable by Spring AI's ``JdbcChatMemoryRepository``
    at the same time.

    ``initialize_schema`` defaults to Spring's ``"embedded"`` (on a server: create nothing,
    and ``SchemaError`` at first use when the table is missing; on SQLite, chatmem's embedded
    database, create Spring's table); ``"always"`` creates Spring's DDL. ``lossy`` names
    what a write may silently drop: ``"tool_calls"`` (an assistant message with tool calls
    is not stored, as Spring's ``saveAll`` drops it),
    ``"tool_responses"`` (likewise), ``"media"``, ``"metadata"``; anything else that would be
    lost raises ``InvalidArgumentError`` before any I/O.
    """

    max_conversation_id_length = 36  # Spring's VARCHAR(36)

    def __init__(
        self,
        engine: Engine | str,
        *,
        table_name: str = SPRING_AI_TABLE_NAME,
        initialize_schema: SchemaMode | bool = SPRING_AI_INITIALIZE_SCHEMA,
        lossy: Iterable[str] = (),
    ) -> None:
        self.lossy = spring_ai_lossy(lossy)
        super().__init__(engine, table_name=table_name, initialize_schema=initialize_schema)

    def _setup(self, engine: Engine) -> None:
        self.engine = engine
        self.dialect = dialect_for(engine.dialect.name)
        self._flavour = flavour_of(engine.dialect.name)
        self._fast = None
        url = engine.url
        memory = self._flavour == "sqlite" and url.database in (None, "", ":memory:")
        self._serial = memory_lock(engine) if memory else nullcontext()
        self._table = self.config.table_name
        self._q = statements(self._table, self._flavour)
        self._ts: Callable[[datetime | None], Any] = (
            epoch_millis if self._flavour == "sqlite" else naive_utc
        )
        where = self.engine.url.render_as_string(hide_password=True)
        self._schema_check = SchemaCheck(self._missing_tables, f"database {where}", where)
        mode = self.config.initialize_schema
        if mode == "always" or (mode == "embedded" and self.dialect.embedded):
            self.create_schema()

    @classmethod
    def from_url(
        cls, url: str, *, engine_options: dict[str, Any] | None = None, **options: Any
    ) -> SpringAiJdbcChatMemoryRepository:
        """Build from a PostgreSQL, MariaDB/MySQL or SQLite URL (a ``layout=spring-ai`` query
        parameter is dropped); with ``initialize_schema="always"`` the table is created
        before this returns."""
        options.pop("layout", None)
        spring_ai_lossy(options.get("lossy", ()))
        JdbcConfig(
            table_name=options.get("table_name", SPRING_AI_TABLE_NAME),
            initialize_schema=options.get("initialize_schema", SPRING_AI_INITIALIZE_SCHEMA),
        )
        engine = make_engine(without_layout(url), **(engine_options or {}))

        def build() -> SpringAiJdbcChatMemoryRepository:
            repository = cls(engine, **options)
            repository._ensure_initialized()
            return repository

        return owning(engine, engine.dispose, build)

    # -- schema ----------------------------------------------------------------------
    def schema_statements(self) -> list[str]:
        """Spring AI's DDL for this table (what its ``schema-<database>.sql`` runs)."""
        return spring_ai_schema(self._table, self._flavour)

    schema_sql = schema_statements

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """Spring AI's DDL for ``url``, built without a connection (on SQL Server and Oracle
        too, where the layout itself does not run)."""
        flavour = ddl_flavour_of(sa.engine.make_url(url).get_backend_name())
        name = options.get("table_name", SPRING_AI_TABLE_NAME)
        JdbcConfig(table_name=name)
        return spring_ai_schema(name, flavour)

    def _create_on_server(self) -> bool:
        with self.engine.begin() as conn:
            self._run_ddl(conn)
        return True

    def _create_in_transaction(self) -> bool | None:
        """SQLite: Spring's DDL inside one BEGIN IMMEDIATE (racing creators wait their turn)."""
        with self._transaction() as conn:
            self._run_ddl(conn)
        return True

    def _run_ddl(self, conn: Connection) -> None:
        for statement in spring_ai_schema(self._table, self._flavour):
            conn.exec_driver_sql(statement)

    def _find_missing_tables(self) -> list[str]:
        what = "checking the chat memory schema"
        with translate_errors(what), self.engine.connect() as conn:
            found = conn.execute(self._q["exists"])
            present = found.scalar_one_or_none() is not None
        return [] if present else [f"table {self._table}"]

    # -- writes: refuse what the table cannot hold, before any I/O ---------------------
    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace the history in one transaction (Spring's positions ``0..n-1``)."""
        super().save_all(conversation_id, self._storable(messages, "messages"))

    def append(self, conversation_id: str, messages: Sequence[Message] | Message) -> None:
        """Append after every stored message, under the conversation's advisory lock."""
        super().append(conversation_id, self._storable(messages, "messages"))

    def window_add(
        self,
        conversation_id: str,
        messages: Sequence[Message] | Message,
        max_messages: int,
        *,
        keep_history: bool = False,
    ) -> None:
        """Add under the window rule and store exactly the window, as Spring's
        ``MessageWindowChatMemory`` does (its ``get`` returns every stored row), in one
        locked transaction; ``keep_history`` keeps every row as in the chatmem layout."""
        kept = self._storable(messages, "messages")
        if keep_history:
            super().window_add(conversation_id, kept, max_messages, keep_history=True)
            return
        cid = self._cid(conversation_id)
        msgs = validate_messages(kept)
        validate_positive_int(max_messages, "max_messages")
        if not msgs:
            return
        if self._init_pending:
            self._ensure_initialized()
        new = stamp(msgs)
        self._edit_window(
            cid, max_messages + 1, lambda source: exact_edit(source, new, max_messages)
        )

    def _storable(self, messages: Sequence[Message] | Message, argument: str) -> list[Message]:
        return spring_ai_storable(messages, self.lossy, argument)

    # -- hooks -----------------------------------------------------------------------
    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        sql = self._q
        params: dict[str, Any] = {"n": limit + 1}
        stmt = sql["ids_first"]
        if after is not None:
            stmt, params["after"] = sql["ids_after"], after

        def ids_of(conn: Connection) -> list[str]:
            return [r[0] for r in conn.execute(stmt, params)]

        ids = self._read(ids_of, "listing")
        page = ids[:limit]
        return ConversationIdPage(page, page[-1] if len(ids) > limit else None)

    def _find(self, cid: str) -> list[Message]:
        def rows(conn: Connection) -> list[Message]:
            return decode(conn.execute(self._q["find"], {"cid": cid}))

        return self._read(rows, "reading")

    def _find_last(self, cid: str, n: int) -> list[Message]:
        def rows(conn: Connection) -> list[Message]:
            return decode(conn.execute(self._q["find_last"], {"cid": cid, "n": n}))

        return (self._read(rows, "reading"))[::-1]

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        params = {"cid": cid, "n": non_system_limit}

        def rows(conn: Connection) -> list[Message]:
            return decode(conn.execute(self._q["window"], params))

        return self._read(rows, "reading the window")

    def _save_all(self, cid: str, messages: list[Message]) -> None:
        def write(conn: Connection) -> None:
            conn.execute(self._q["delete"], {"cid": cid})
            self._insert(conn, cid, 0, messages)

        self._locked(cid, write, "replacing the history")

    def _delete(self, cid: str) -> None:
        def write(conn: Connection) -> None:
            conn.execute(self._q["delete"], {"cid": cid})

        self._locked(cid, write, "deleting")

    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        def write(conn: Connection) -> None:
            start = self._next(conn, cid)
            self._insert(conn, cid, start, messages)

        self._locked(cid, write, "appending")

    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        def write(conn: Connection) -> None:
            start = self._next(conn, cid)
            params = {"cid": cid, "n": non_system_limit}
            edit = plan(decode(conn.execute(self._q["window"], params)))
            if edit.delete_positions:
                positions = sorted(edit.delete_positions)
                conn.execute(self._q["delete_at"], {"cid": cid, "positions": positions})
            if edit.delete_non_system_below is not None:
                below = edit.delete_non_system_below
                conn.execute(self._q["delete_below"], {"cid": cid, "below": below})
            if edit.append:
                self._insert(conn, cid, start, list(edit.append))

        self._locked(cid, write, "updating the window")

    # -- helpers ---------------------------------------------------------------------
    def _locked(self, cid: str, fn: Callable[[Connection], None], what: str) -> None:
        """Run ``fn`` in one transaction holding the conversation's lock (retried on a lost
        race such as a deadlock); on SQLite the transaction's BEGIN IMMEDIATE is the lock."""
        if self._flavour == "sqlite":
            self._write(fn, what)
            return
        if self._flavour == "postgresql":  # a transaction-scoped lock: gone at commit

            def locked(conn: Connection) -> None:
                conn.execute(self._q["lock"], {"cid": cid})
                fn(conn)

            self._write(locked, what)
            return
        self._schema_check()

        def attempt() -> bool:
            # GET_LOCK belongs to the session, not the transaction: released after COMMIT
            with self.engine.connect() as conn:
                got = (conn.execute(self._q["lock"], {"cid": cid})).scalar_one()
                if got != 1:
                    raise ConcurrencyError(f"{what}: the conversation's lock was not granted")
                try:
                    fn(conn)
                    conn.commit()
                except BaseException:
                    if not conn.invalidated:
                        conn.rollback()
                    raise
                finally:
                    if not conn.invalidated:
                        conn.execute(self._q["unlock"], {"cid": cid})
                        conn.commit()
            return True

        self._retried(attempt, what)

    def _next(self, conn: Connection, cid: str) -> int:
        """The sequence id after every stored one (under the conversation's lock)."""
        return int((conn.execute(self._q["next"], {"cid": cid})).scalar_one())

    def _insert(self, conn: Connection, cid: str, start: int, messages: Sequence[Message]) -> None:
        rows = [
            {
                "cid": cid,
                "content": m.text or "",
                "type": m.message_type.value.upper(),
                "ts": self._ts(m.created_at),
                "seq": start + i,
            }
            for i, m in enumerate(messages)
        ]
        conn.execute(self._q["insert"], rows)


# the layout ``JdbcChatMemoryRepository.from_url(url, layout="spring-ai")`` builds
JdbcChatMemoryRepository.layouts["spring-ai"] = SpringAiJdbcChatMemoryRepository
