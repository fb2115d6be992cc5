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

from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chatmem.core import Message, SchemaMode
from chatmem.core.backend import (
    AsyncSchemaCheck,
    ConcurrencyError,
    ConversationIdPage,
    WindowEdit,
    async_owning,
    spring_ai_lossy,
    spring_ai_storable,
    stamp,
    validate_messages,
    validate_positive_int,
)

from .._config import JdbcConfig, without_layout
from .._errors import translate_errors
from .._native.dialects import async_dialect_for
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
from .engine import make_async_engine, memory_lock
from .repository import AsyncJdbcChatMemoryRepository

ASYNC = True


class AsyncSpringAiJdbcChatMemoryRepository(AsyncJdbcChatMemoryRepository):
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
        engine: AsyncEngine | str,
        *,
        table_name: str = SPRING_AI_TABLE_NAME,
        initialize_schema: SchemaMode | bool = SPRING_AI_INITIALIZE_SCHEMA,
        lossy: Iterable[str] = (),
    ) -> None:
        self.lossy = spring_ai_lossy(lossy)
        super().__init__(engine, table_name=table_name, initialize_schema=initialize_schema)

    def _setup(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.dialect = async_dialect_for(engine.dialect.name)
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
        self._schema_check = AsyncSchemaCheck(self._missing_tables, f"database {where}", where)
        mode = self.config.initialize_schema
        if mode == "always" or (mode == "embedded" and self.dialect.embedded):
            if ASYNC:
                self._init_pending = True  # a constructor cannot await: the first call does
            else:
                self.create_schema()

    @classmethod
    async def from_url(
        cls, url: str, *, engine_options: dict[str, Any] | None = None, **options: Any
    ) -> AsyncSpringAiJdbcChatMemoryRepository:
        """Build from a PostgreSQL, MariaDB/MySQL or SQLite URL (a ``layout=spring-ai`` query
        parameter is dropped); with ``initialize_schema="always"`` the table is created
        before this returns."""
        options.pop("layout", None)
        spring_ai_lossy(options.get("lossy", ()))
        JdbcConfig(
            table_name=options.get("table_name", SPRING_AI_TABLE_NAME),
            initialize_schema=options.get("initialize_schema", SPRING_AI_INITIALIZE_SCHEMA),
        )
        engine = make_async_engine(without_layout(url), **(engine_options or {}))

        async def build() -> AsyncSpringAiJdbcChatMemoryRepository:
            repository = cls(engine, **options)
            await repository._ensure_initialized()
            return repository

        return await async_owning(engine, engine.dispose, build)

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

    async def _create_on_server(self) -> bool:
        async with self.engine.begin() as conn:
            await self._run_ddl(conn)
        return True

    async def _create_in_transaction(self) -> bool | None:
        """SQLite: Spring's DDL inside one BEGIN IMMEDIATE (racing creators wait their turn)."""
        async with self._transaction() as conn:
            await self._run_ddl(conn)
        return True

    async def _run_ddl(self, conn: AsyncConnection) -> None:
        for statement in spring_ai_schema(self._table, self._flavour):
            await conn.exec_driver_sql(statement)

    async def _find_missing_tables(self) -> list[str]:
        what = "checking the chat memory schema"
        with translate_errors(what):
            async with self.engine.connect() as conn:
                found = await conn.execute(self._q["exists"])
                present = found.scalar_one_or_none() is not None
        return [] if present else [f"table {self._table}"]

    # -- writes: refuse what the table cannot hold, before any I/O ---------------------
    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace the history in one transaction (Spring's positions ``0..n-1``)."""
        await super().save_all(conversation_id, self._storable(messages, "messages"))

    async def append(self, conversation_id: str, messages: Sequence[Message] | Message) -> None:
        """Append after every stored message, under the conversation's advisory lock."""
        await super().append(conversation_id, self._storable(messages, "messages"))

    async def window_add(
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
            await super().window_add(conversation_id, kept, max_messages, keep_history=True)
            return
        cid = self._cid(conversation_id)
        msgs = validate_messages(kept)
        validate_positive_int(max_messages, "max_messages")
        if not msgs:
            return
        if self._init_pending:
            await self._ensure_initialized()
        new = stamp(msgs)
        await self._edit_window(
            cid, max_messages + 1, lambda source: exact_edit(source, new, max_messages)
        )

    def _storable(self, messages: Sequence[Message] | Message, argument: str) -> list[Message]:
        return spring_ai_storable(messages, self.lossy, argument)

    # -- hooks -----------------------------------------------------------------------
    async def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        sql = self._q
        params: dict[str, Any] = {"n": limit + 1}
        stmt = sql["ids_first"]
        if after is not None:
            stmt, params["after"] = sql["ids_after"], after

        async def ids_of(conn: AsyncConnection) -> list[str]:
            return [r[0] for r in await conn.execute(stmt, params)]

        ids = await self._read(ids_of, "listing")
        page = ids[:limit]
        return ConversationIdPage(page, page[-1] if len(ids) > limit else None)

    async def _find(self, cid: str) -> list[Message]:
        async def rows(conn: AsyncConnection) -> list[Message]:
            return decode(await conn.execute(self._q["find"], {"cid": cid}))

        return await self._read(rows, "reading")

    async def _find_last(self, cid: str, n: int) -> list[Message]:
        async def rows(conn: AsyncConnection) -> list[Message]:
            return decode(await conn.execute(self._q["find_last"], {"cid": cid, "n": n}))

        return (await self._read(rows, "reading"))[::-1]

    async def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        params = {"cid": cid, "n": non_system_limit}

        async def rows(conn: AsyncConnection) -> list[Message]:
            return decode(await conn.execute(self._q["window"], params))

        return await self._read(rows, "reading the window")

    async def _save_all(self, cid: str, messages: list[Message]) -> None:
        async def write(conn: AsyncConnection) -> None:
            await conn.execute(self._q["delete"], {"cid": cid})
            await self._insert(conn, cid, 0, messages)

        await self._locked(cid, write, "replacing the history")

    async def _delete(self, cid: str) -> None:
        async def write(conn: AsyncConnection) -> None:
            await conn.execute(self._q["delete"], {"cid": cid})

        await self._locked(cid, write, "deleting")

    async def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        async def write(conn: AsyncConnection) -> None:
            start = await self._next(conn, cid)
            await self._insert(conn, cid, start, messages)

        await self._locked(cid, write, "appending")

    async def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        async def write(conn: AsyncConnection) -> None:
            start = await self._next(conn, cid)
            params = {"cid": cid, "n": non_system_limit}
            edit = plan(decode(await conn.execute(self._q["window"], params)))
            if edit.delete_positions:
                positions = sorted(edit.delete_positions)
                await conn.execute(self._q["delete_at"], {"cid": cid, "positions": positions})
            if edit.delete_non_system_below is not None:
                below = edit.delete_non_system_below
                await conn.execute(self._q["delete_below"], {"cid": cid, "below": below})
            if edit.append:
                await self._insert(conn, cid, start, list(edit.append))

        await self._locked(cid, write, "updating the window")

    # -- helpers ---------------------------------------------------------------------
    async def _locked(
        self, cid: str, fn: Callable[[AsyncConnection], Awaitable[None]], what: str
    ) -> None:
        """Run ``fn`` in one transaction holding the conversation's lock (retried on a lost
        race such as a deadlock); on SQLite the transaction's BEGIN IMMEDIATE is the lock."""
        if self._flavour == "sqlite":
            await self._write(fn, what)
            return
        if self._flavour == "postgresql":  # a transaction-scoped lock: gone at commit

            async def locked(conn: AsyncConnection) -> None:
                await conn.execute(self._q["lock"], {"cid": cid})
                await fn(conn)

            await self._write(locked, what)
            return
        await self._schema_check()

        async def attempt() -> bool:
            # GET_LOCK belongs to the session, not the transaction: released after COMMIT
            async with self.engine.connect() as conn:
                got = (await conn.execute(self._q["lock"], {"cid": cid})).scalar_one()
                if got != 1:
                    raise ConcurrencyError(f"{what}: the conversation's lock was not granted")
                try:
                    await fn(conn)
                    await conn.commit()
                except BaseException:
                    if not conn.invalidated:
                        await conn.rollback()
                    raise
                finally:
                    if not conn.invalidated:
                        await conn.execute(self._q["unlock"], {"cid": cid})
                        await conn.commit()
            return True

        await self._retried(attempt, what)

    async def _next(self, conn: AsyncConnection, cid: str) -> int:
        """The sequence id after every stored one (under the conversation's lock)."""
        return int((await conn.execute(self._q["next"], {"cid": cid})).scalar_one())

    async def _insert(
        self, conn: AsyncConnection, cid: str, start: int, messages: Sequence[Message]
    ) -> None:
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
        await conn.execute(self._q["insert"], rows)


# the layout ``AsyncJdbcChatMemoryRepository.from_url(url, layout="spring-ai")`` builds
AsyncJdbcChatMemoryRepository.layouts["spring-ai"] = AsyncSpringAiJdbcChatMemoryRepository
