# Generated from chatmem_jdbc/chatmem/jdbc/_async/repository.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The SQL chat memory repository, through SQLAlchemy 2 (each twin on its own kind of engine
and its own drivers).

Every write is one transaction that first locks the conversation's row in
``<table>_conversation`` (SQLite: BEGIN IMMEDIATE), so appends, replaces and window edits on
one conversation are serialised and lose nothing, while other conversations proceed. Reads are
single statements, bounded with LIMIT and served by the ``(conversation_id, is_system,
position)`` index. A lost race (duplicate key, deadlock) rolls back and retries.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from chatmem.core import Message, SchemaMode
from chatmem.core.backend import (
    BaseChatMemoryRepository,
    ConversationIdPage,
    DecodeCache,
    OwnedClientMixin,
    SchemaCheck,
    WindowEdit,
    owning,
    retry,
)

from .._codec import from_row, to_row
from .._config import JdbcConfig, layout_of
from .._native._sync.fast import FastPath, fast_path_for
from .._native.dialects import SqlDialect, dialect_for
from .._native.drivers import require_sql_driver
from .._plan import Statements, build_statements
from .._schema import Tables, build_tables, schema_sql, schema_statements
from .engine import make_engine, memory_lock, to_the_end
from .schema_ops import JdbcSchemaOps
from .transactions import JdbcTransactions, now


class JdbcChatMemoryRepository(
    JdbcSchemaOps,
    JdbcTransactions,
    OwnedClientMixin,
    BaseChatMemoryRepository,
):
    """Chat memory in SQLite, PostgreSQL, MySQL/MariaDB, SQL Server or Oracle (the blocking
    twin serves all five; the non-blocking one the first three, and the others raise
    ``InvalidArgumentError``).

    Pass a SQLAlchemy engine of this twin's kind (never disposed by us) or a URL string; use
    ``from_url`` for the URL form with engine options. An engine made from a URL is the
    repository's own: ``close()`` (or leaving a ``with`` block) disposes it. ``from_url``
    creates the schema before it returns; otherwise the blocking twin's constructor creates
    it, and the non-blocking twin's first call does (its constructor does no I/O).
    """

    layouts: ClassVar[dict[str, type[JdbcChatMemoryRepository]]] = {}
    """The other table layouts ``from_url(url, layout=...)`` builds, by name; each registers
    itself (``spring_ai``), so this module imports none of them."""

    def __init__(
        self,
        engine: Engine | str,
        *,
        table_name: str = JdbcConfig.table_name,
        initialize_schema: SchemaMode | bool = JdbcConfig.initialize_schema,
    ) -> None:
        self.config = JdbcConfig(
            table_name=table_name,
            initialize_schema=initialize_schema,  # type: ignore[arg-type]  # bools normalised
        )
        if isinstance(engine, str):
            owned = make_engine(engine)
            self._own(owned, owned.dispose)
            try:
                self._setup(owned)
            except BaseException:
                self.close()
                raise
        else:
            self._setup(engine)

    def _setup(self, engine: Engine) -> None:
        self.engine = engine
        self.dialect: SqlDialect = dialect_for(self.engine.dialect.name)
        self.tables: Tables = build_tables(self.config.table_name, self.dialect)
        self._sql: Statements = build_statements(
            self.tables, limit_in_union_member=self.dialect.limit_in_union_member
        )
        self._lock_sql = self.dialect.lock_statement(self.tables.conversations)
        self._reserve_sql = self.dialect.reserve_statement(self.tables.conversations)
        self._fast: FastPath | None = fast_path_for(
            self.dialect, self.engine, self.tables, self._sql, self._reserve_sql
        )
        self._append_sql = self.dialect.append_statement(self.tables)
        self._decoded = DecodeCache()
        url = self.engine.url
        memory = url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")
        self._serial: AbstractContextManager[Any] = (
            memory_lock(self.engine) if memory else nullcontext()
        )
        mode = self.config.initialize_schema
        self._schema_check = SchemaCheck(
            self._missing_tables,
            f"database {self.engine.url.render_as_string(hide_password=True)}",
            self.engine.url.render_as_string(hide_password=True),
        )
        if mode == "always" or (mode == "embedded" and self.dialect.embedded):
            self.create_schema()

    def close(self) -> None:
        """Dispose the engine this repository made (a given one stays open)."""
        super().close()

    def _initialize(self) -> None:
        self.create_schema()

    @classmethod
    def require_driver(cls, url: str) -> None:
        """Import the DB-API driver ``url`` needs, before any I/O: ``MissingDependencyError``
        naming the extra when it is not installed."""
        require_sql_driver(url, aio=False)

    @classmethod
    def from_url(
        cls, url: str, *, engine_options: dict[str, Any] | None = None, **options: Any
    ) -> JdbcChatMemoryRepository:
        """Build from a SQLAlchemy URL such as ``sqlite:///chat.db`` or
        ``postgresql+psycopg://user:pw@host/db`` (without a ``+driver``, this twin's default
        driver for the database) and create the schema now; ``close()`` disposes the engine
        made. ``layout="spring-ai"`` (or a ``layout=spring-ai`` URL query parameter) builds
        the Spring AI layout instead (``SpringAiJdbcChatMemoryRepository``)."""
        layout = layout_of(url, options)
        if layout != "chatmem":
            return cls.layouts[layout].from_url(url, engine_options=engine_options, **options)
        options.pop("layout", None)
        JdbcConfig(**options)  # reject bad options before building an engine
        engine = make_engine(url, **(engine_options or {}))

        def build() -> JdbcChatMemoryRepository:
            repository = cls(engine, **options)
            repository._ensure_initialized()  # the schema, at once (sync: already)
            return repository

        return owning(engine, engine.dispose, build)

    # -- schema ----------------------------------------------------------------------
    def schema_statements(self) -> list[str]:
        """The DDL for this repository's database, as SQL text for your own migrations."""
        return schema_statements(self.tables, self.engine.dialect, if_not_exists=False)

    schema_sql = schema_statements  # the earlier name

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """The DDL for the database ``url`` names, built without a connection or a driver
        (``options``: ``table_name``; the others do not change the DDL). A ``layout``
        option or URL parameter of ``spring-ai`` gives Spring AI's DDL."""
        layout = layout_of(url, options)
        if layout != "chatmem":
            options.pop("layout", None)
            return cls.layouts[layout].schema_statements_for_url(url, **options)
        config = JdbcConfig(
            table_name=options.get("table_name", JdbcConfig.table_name),
            initialize_schema=options.get("initialize_schema", JdbcConfig.initialize_schema),
        )
        script = schema_sql(url, table_name=config.table_name).strip()
        return [s.strip() for s in script.rstrip(";").split(";\n\n")]

    def create_schema(self) -> None:
        """Create the tables and index if missing; safe when many threads and processes race
        to do it. SQLite checks and creates inside one BEGIN IMMEDIATE transaction (the
        write lock is taken up front, so no connection has to upgrade a read lock, which
        SQLite refuses at once with "database is locked"); servers retry a lost race."""
        to_the_end(self._create_schema())
        self._schema_check.passed()

    # -- hooks -----------------------------------------------------------------------
    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        params: dict[str, Any] = {"n": limit + 1}
        stmt = self._sql.list_first
        if after is not None:
            stmt, params["after"] = self._sql.list_after, after

        def ids_of(conn: Connection) -> list[str]:
            return [r[0] for r in conn.execute(stmt, params)]

        ids = self._read(ids_of, "listing")
        page = ids[:limit]
        return ConversationIdPage(page, page[-1] if len(ids) > limit else None)

    def _rows(self, conn: Connection, stmt: Any, params: dict[str, Any]) -> list[Message]:
        # .all() fetches in one call; iterating fetches row by row (measurably slower). A row
        # read again (every window read re-reads most of the last one) is decoded once: its
        # values are its key, so a replaced or newly written row is decoded afresh.
        result = conn.execute(stmt, params)
        rows, get = result.all(), self._decoded.get
        try:
            return [get(tuple(r), partial(from_row, r._mapping)) for r in rows]
        except TypeError:  # an unhashable value (a driver that parsed a JSON column itself)
            return [from_row(r._mapping) for r in rows]

    def _find(self, cid: str) -> list[Message]:
        return self._read(lambda conn: self._rows(conn, self._sql.find, {"cid": cid}), "reading")

    def _find_last(self, cid: str, n: int) -> list[Message]:
        if self._fast is not None:
            self._schema_check()
            return (to_the_end(self._fast_last(self._fast, cid, n)))[::-1]
        params = {"cid": cid, "n": n}
        rows = self._read(lambda conn: self._rows(conn, self._sql.find_last, params), "reading")
        return rows[::-1]

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        if self._fast is not None:
            self._schema_check()
            return to_the_end(self._fast_read(self._fast, cid, non_system_limit))
        return self._read(
            lambda conn: self._window_rows(conn, cid, non_system_limit), "reading the window"
        )

    def _fast_read(self, fast: FastPath, cid: str, limit: int) -> list[Message]:
        with self._serial:
            return fast.read_window(cid, limit)

    def _fast_last(self, fast: FastPath, cid: str, n: int) -> list[Message]:
        with self._serial:
            return fast.read_last(cid, n)

    def _window_rows(self, conn: Connection, cid: str, non_system_limit: int) -> list[Message]:
        rows = self._rows(conn, self._sql.window, {"cid": cid, "n": non_system_limit})
        rows.sort(key=_position)
        return rows

    def _save_all(self, cid: str, messages: list[Message]) -> None:
        def write(conn: Connection) -> None:
            self._lock_or_create(conn, cid, len(messages))
            c = self.tables.conversations
            conn.execute(self._sql.delete_messages, {"cid": cid})
            conn.execute(
                sa.update(c)
                .where(c.c.conversation_id == cid)
                .values(next_position=len(messages), updated_at=now())
            )
            self._insert(conn, cid, 0, messages)

        self._write(write, "replacing the history")
        if self._fast is not None:  # the next window read need not decode what was written
            self._fast.remember(cid, 0, messages)

    def _delete(self, cid: str) -> None:
        def write(conn: Connection) -> None:
            conn.execute(self._sql.delete_messages, {"cid": cid})
            conn.execute(self._sql.delete_conversation, {"cid": cid})

        self._write(write, "deleting")

    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        fast = self._fast
        if fast is not None and fast.can_append(len(messages), trim_to):
            self._schema_check()

            def attempt() -> bool | None:
                with self._serial:
                    return fast.append(cid, messages, trim_to) or None

            to_the_end(retry(attempt, what="appending"))
            return
        if self._append_sql is not None:
            rows = [to_row(cid, i, msg) for i, msg in enumerate(messages)]
            params = self.dialect.append_parameters(cid, rows, trim_to)
            self._write_statement(self._append_sql, params, "appending")
            return

        def write(conn: Connection) -> None:
            start = self._reserve(conn, cid, len(messages))
            self._insert(conn, cid, start, messages)
            if trim_to is not None and (start + len(messages)) // trim_to != start // trim_to:
                self._trim(conn, cid, trim_to)

        self._write(write, "appending")

    def _append_and_load_window(
        self, cid: str, messages: list[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message]:
        fast = self._fast
        if fast is None or not fast.can_append(len(messages), trim_to):
            return super()._append_and_load_window(cid, messages, trim_to, non_system_limit)
        self._schema_check()

        def attempt() -> list[Message] | None:
            with self._serial:
                return fast.append_and_read_window(cid, messages, trim_to, non_system_limit)

        return to_the_end(retry(attempt, what="appending"))

    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        def write(conn: Connection) -> None:
            self._lock_or_create(conn, cid, 0)
            edit = plan(self._window_rows(conn, cid, non_system_limit))
            if edit.delete_positions:
                positions = sorted(edit.delete_positions)
                conn.execute(self._sql.delete_positions, {"cid": cid, "positions": positions})
            if edit.delete_non_system_below is not None:
                below = edit.delete_non_system_below
                conn.execute(self._sql.delete_non_system_below, {"cid": cid, "below": below})
            if edit.append:
                start = self._reserve(conn, cid, len(edit.append))
                self._insert(conn, cid, start, list(edit.append))
            else:
                self._drop_if_empty(conn, cid)

        self._write(write, "updating the window")


def _position(message: Message) -> int:
    return message.position or 0
