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

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timezone
from functools import partial
from typing import Any, ClassVar, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

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
from .._errors import translate_errors
from .._native._sync.fast import FastPath, fast_path_for
from .._native.dialects import SqlDialect, dialect_for
from .._native.drivers import require_sql_driver
from .._plan import Statements, build_statements
from .._schema import Tables, build_tables, is_create_race, schema_sql, schema_statements
from .engine import make_engine

T = TypeVar("T")


class JdbcChatMemoryRepository(OwnedClientMixin, BaseChatMemoryRepository):
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
            _memory_lock(self.engine) if memory else nullcontext()
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
        _to_the_end(self._create_schema())
        self._schema_check.passed()

    def _create_schema(self) -> bool:
        what = "creating the chat memory schema"
        with translate_errors(what), self._serial:
            if self.dialect.embedded:
                return retry(self._create_in_transaction, what=what)
            return retry(self._create_on_server, attempts=5, what=what, retry_on=is_create_race)

    def _create_in_transaction(self) -> bool | None:
        try:
            with self._transaction() as conn:
                _on_connection(conn, self.tables.metadata.create_all, checkfirst=True)
            return True
        except DBAPIError as exc:
            if self.dialect.is_retryable(exc) or is_create_race(exc):
                return None
            raise

    def _create_on_server(self) -> bool:
        with self.engine.begin() as conn:
            _on_connection(conn, self.tables.metadata.create_all, checkfirst=True)
        return True

    def _missing_tables(self) -> list[str]:
        """The tables of this repository that the database lacks (``"never"`` mode check)."""
        return _to_the_end(self._find_missing_tables())

    def _find_missing_tables(self) -> list[str]:
        names = (self.tables.conversations.name, self.tables.messages.name)
        what = "checking the chat memory schema"
        with translate_errors(what), self._serial, self.engine.connect() as conn:
            present = _on_connection(conn, _present_tables, names)
        return [f"table {n}" for n in names if n not in present]

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
            return (_to_the_end(self._fast_last(self._fast, cid, n)))[::-1]
        params = {"cid": cid, "n": n}
        rows = self._read(lambda conn: self._rows(conn, self._sql.find_last, params), "reading")
        return rows[::-1]

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        if self._fast is not None:
            self._schema_check()
            return _to_the_end(self._fast_read(self._fast, cid, non_system_limit))
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
                .values(next_position=len(messages), updated_at=_now())
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

            _to_the_end(retry(attempt, what="appending"))
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

    # -- helpers ---------------------------------------------------------------------
    def _lock_or_create(self, conn: Connection, cid: str, next_position: int) -> int | None:
        """Lock the conversation row and return its next position, or create it with
        ``next_position`` and return None (a duplicate-key race retries the transaction)."""
        result = conn.execute(self._lock_sql, {"cid": cid})
        current = result.scalar_one_or_none()
        if current is not None:
            return int(current)
        conn.execute(
            sa.insert(self.tables.conversations).values(
                conversation_id=cid, next_position=next_position, updated_at=_now()
            )
        )
        return None

    def _reserve(self, conn: Connection, cid: str, count: int) -> int:
        """Reserve ``count`` positions under the row lock; the first one reserved."""
        if self._reserve_sql is not None:
            params = {"cid": cid, "k": count, "now": _now()}
            result = conn.execute(self._reserve_sql, params)
            return self.dialect.reserved_position(result) - count
        current = self._lock_or_create(conn, cid, count)
        if current is None:
            return 0
        c = self.tables.conversations
        conn.execute(
            sa.update(c)
            .where(c.c.conversation_id == cid)
            .values(next_position=current + count, updated_at=_now())
        )
        return current

    def _insert(self, conn: Connection, cid: str, start: int, messages: Sequence[Message]) -> None:
        rows = [to_row(cid, start + i, msg) for i, msg in enumerate(messages)]
        conn.execute(self._sql.insert_messages, rows)

    def _trim(self, conn: Connection, cid: str, keep: int) -> None:
        """Drop non-system rows older than the newest ``keep`` (they can never be shown)."""
        result = conn.execute(self._sql.trim_cut, {"cid": cid, "skip": keep - 1})
        cut = result.scalar_one_or_none()
        if cut is not None:
            conn.execute(self._sql.delete_non_system_below, {"cid": cid, "below": cut})

    def _drop_if_empty(self, conn: Connection, cid: str) -> None:
        result = conn.execute(self._sql.any_left, {"cid": cid})
        if result.first() is None:
            conn.execute(self._sql.delete_conversation, {"cid": cid})

    def _read(self, fn: Callable[[Connection], T], what: str) -> T:
        self._schema_check()
        return _to_the_end(self._run_read(fn, what))

    def _run_read(self, fn: Callable[[Connection], T], what: str) -> T:
        with translate_errors(what), self._serial, self.engine.connect() as conn:
            if self.dialect.read_isolation is not None:
                conn.execution_options(isolation_level=self.dialect.read_isolation)
            return fn(conn)

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A connection inside a write transaction, committed on success: the dialect's
        ``write_begin`` on an autocommit connection (SQLite: BEGIN IMMEDIATE), else the
        driver's own BEGIN."""
        begin = self.dialect.write_begin
        if begin is None:
            with self.engine.begin() as conn:
                yield conn
            return
        with self.engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql(begin)
            try:
                yield conn
            except BaseException:
                if not conn.invalidated:  # SQLAlchemy drops a connection a cancel cut off
                    conn.exec_driver_sql("ROLLBACK")
                raise
            conn.exec_driver_sql("COMMIT")

    def _write(self, fn: Callable[[Connection], None], what: str) -> None:
        """Run ``fn`` in a write transaction, re-run when it lost a race."""
        self._schema_check()

        def attempt() -> bool:
            with self._serial, self._transaction() as conn:
                fn(conn)
            return True

        self._retried(attempt, what)

    def _write_statement(self, stmt: Any, params: dict[str, Any], what: str) -> None:
        """Run one self-contained write statement in autocommit mode (no BEGIN or COMMIT
        round trips); re-run when it lost a race."""
        self._schema_check()

        def attempt() -> bool:
            with self._serial, self.engine.connect() as conn:
                auto = conn.execution_options(isolation_level="AUTOCOMMIT")
                auto.execute(stmt, params)
            return True

        self._retried(attempt, what)

    def _retried(self, attempt: Callable[[], bool], what: str) -> None:
        """Core's retry on the dialect's lost-race errors (duplicate key, deadlock...)."""

        def lost_race(exc: Exception) -> bool:
            return isinstance(exc, DBAPIError) and self.dialect.is_retryable(exc)

        with translate_errors(what):
            _to_the_end(retry(attempt, what=what, retry_on=lost_race))


def _to_the_end(work: T) -> T:
    """The sync twin is never cancelled mid-call: the work has already run."""
    return work


def _on_connection(conn: Connection, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
    """Run ``fn(sync_connection, ...)`` (SQLAlchemy's inspector and DDL) on ``conn``."""
    return fn(conn, *args, **kw)


def _present_tables(conn: Any, names: Sequence[str]) -> set[str]:
    inspector = sa.inspect(conn)
    return {n for n in names if inspector.has_table(n)}


_MEMORY_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()


def _memory_lock(engine: Engine) -> threading.Lock:
    """One lock per ``:memory:`` engine: its one shared connection serves one caller at a
    time."""
    key = engine
    return _MEMORY_LOCKS.setdefault(key, threading.Lock())


def _position(message: Message) -> int:
    return message.position or 0


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)
