# Generated from chatmem_jdbc/chatmem/jdbc/_async/records.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``JdbcMemoryRecordRepository``: long-term memory records and state entries in SQL
through SQLAlchemy 2 (the sync twin ``JdbcMemoryRecordRepository`` is generated from this).

I/O only: validation, the clock, expiry and transitions live in
``chatmem.core.longterm`` (the base class and ``_rules``), statements in ``_record_schema``.
Adding is an INSERT guarded by the unique dedup key (the loser of a race reads the winner's
row); a review is one conditional UPDATE (one winner); the expiry sweep is one UPDATE. A
state entry is created by an INSERT its primary key guards and replaced or deleted by one
statement conditioned on its version.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from chatmem.core.backend import OwnedClientMixin, SchemaError, SchemaMode, retry
from chatmem.core.longterm import (
    DEFAULT_PENDING_TTL,
    AddResult,
    BaseMemoryRecordRepository,
    Clock,
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    StateEntry,
    utc_now,
)

from .._config import JdbcConfig
from .._errors import translate_errors
from .._native.dialects import SqlDialect, dialect_for
from .._record_schema import (
    DEFAULT_MEMORY_TABLE_NAME,
    MemoryTables,
    build_memory_statements,
    build_memory_tables,
    build_state_statements,
    find_statement,
    from_row,
    memory_schema_sql,
    memory_schema_statements,
    naive_utc,
    state_from_row,
    state_page_statement,
    state_row,
    to_row,
)
from .._schema import is_create_race
from .engine import make_engine, on_connection

ADD_ATTEMPTS = 5
NEW_COLUMNS = ("original_content",)
"""Record columns newer than the table's first release, added by ``create_schema``."""


@contextmanager
def _translate(what: str) -> Iterator[None]:
    """``translate_errors``, with the record tables' own remedy in a SchemaError."""
    try:
        with translate_errors(what):
            yield
    except SchemaError as exc:
        raise SchemaError(
            f"{what}: the memory record tables are missing; create them with "
            "initialize_schema='always' or apply `chatmem memories schema` DDL "
            f"({exc.__cause__})"
        ) from exc.__cause__


def add_new_columns(conn: Any, table: sa.Table) -> None:
    """Add to an older record table the columns added since (``original_content``), on the
    given (blocking) connection."""
    present = {c["name"] for c in sa.inspect(conn).get_columns(table.name)}
    quote = conn.dialect.identifier_preparer
    for name in NEW_COLUMNS:
        if name not in present:
            column = table.c[name]
            kind = column.type.compile(dialect=conn.dialect)
            conn.execute(
                sa.text(f"ALTER TABLE {quote.format_table(table)} ADD {quote.quote(name)} {kind}")
            )


def _lost_to_key(exc: Exception) -> bool:
    """A translated error whose cause is a unique-key violation (an equal row exists)."""
    return isinstance(exc.__cause__, IntegrityError)


class JdbcMemoryRecordRepository(OwnedClientMixin, BaseMemoryRecordRepository):
    """Memory records in SQLite, PostgreSQL, MySQL/MariaDB (the sync twin also SQL Server and
    Oracle).

    Pass a SQLAlchemy engine of this twin's kind (never disposed by us) or a URL (an engine
    made from it is the repository's own: ``close()`` disposes it). ``initialize_schema``
    works as for the chat tables: ``embedded`` (create on SQLite only), ``always``,
    ``never`` (apply ``schema_sql()`` / ``chatmem memories schema`` yourself). The tables are
    created by the blocking twin's constructor, by the first call of the non-blocking one
    (``from_url`` before it returns)."""

    def __init__(
        self,
        engine: Engine | str,
        *,
        table_name: str = DEFAULT_MEMORY_TABLE_NAME,
        initialize_schema: SchemaMode = JdbcConfig.initialize_schema,
        clock: Clock = utc_now,
        pending_ttl: timedelta = DEFAULT_PENDING_TTL,
    ) -> None:
        super().__init__(clock=clock, pending_ttl=pending_ttl)
        self.config = JdbcConfig(table_name=table_name, initialize_schema=initialize_schema)
        if isinstance(engine, str):
            owned = make_engine(engine)
            self._own(owned, owned.dispose)
            engine = owned
        self.engine = engine
        try:
            self.dialect: SqlDialect = dialect_for(self.engine.dialect.name)
            self.tables: MemoryTables = build_memory_tables(self.config.table_name, self.dialect)
            self._sql = build_memory_statements(self.tables.records)
            self._state_sql = build_state_statements(self.tables.state)
            mode = self.config.initialize_schema
            self._schema_on_first_use(
                mode == "always" or (mode == "embedded" and self.dialect.embedded)
            )
        except BaseException:
            self.close()  # an engine made here is disposed, a caller's is left alone
            raise

    @classmethod
    def from_url(cls, url: str, **options: Any) -> JdbcMemoryRecordRepository:
        """A record store on an engine of its own for ``url`` (``close()`` disposes it),
        its tables created per ``initialize_schema`` before it returns; ``options`` are the
        constructor's keywords."""
        repo = cls(url, **options)
        try:
            repo._ready()
        except BaseException:
            repo.close()
            raise
        return repo

    @classmethod
    def schema_sql_for(cls, url: str, *, table_name: str = DEFAULT_MEMORY_TABLE_NAME) -> str:
        """The record and state tables' DDL for ``url``'s database as one script (``chatmem
        memories schema``); connects to nothing and needs no driver."""
        return memory_schema_sql(url, table_name=table_name)

    def schema_sql(self) -> list[str]:
        """The DDL for this repository's database, for your own migrations."""
        return memory_schema_statements(self.tables, self.engine.dialect, if_not_exists=False)

    def create_schema(self) -> None:
        """Create the tables and indexes if missing, and add the columns newer than an
        existing record table; safe when processes race to do it."""
        what = "creating the memory record schema"

        def attempt() -> bool:
            with self.engine.begin() as conn:
                on_connection(conn, self.tables.metadata.create_all, checkfirst=True)
                on_connection(conn, add_new_columns, self.tables.records)
            return True

        with _translate(what):
            retry(attempt, attempts=5, what=what, retry_on=is_create_race)

    def _create_schema(self) -> None:
        self.create_schema()

    # -- hooks -------------------------------------------------------------------------
    def _add(self, record: MemoryRecord, key: str) -> AddResult:
        self._ready()
        row = to_row(record, key)

        def attempt() -> AddResult | None:
            try:
                with _translate("storing a memory"), self.engine.begin() as conn:
                    conn.execute(self._sql.insert, row)
                return AddResult(record, True)
            except Exception as exc:
                if not _lost_to_key(exc):
                    raise
            # Lost to an equal memory (maybe concurrently written): return the stored one;
            # None when it was deleted meanwhile (insert again).
            existing = self._one(self._sql.by_key, {"key": key}, "reading a memory")
            return None if existing is None else AddResult(existing, False)

        return retry(attempt, attempts=ADD_ATTEMPTS, what="storing a memory")

    def _find(
        self,
        agent_id: str | None,
        user_id: str | None,
        status: MemoryStatus | None,
        memory_type: MemoryType | None,
        limit: int,
        after: tuple[datetime, str] | None,
        now: datetime,
    ) -> list[MemoryRecord]:
        self._ready()
        stmt = find_statement(
            self.tables.records,
            agent_id=agent_id,
            user_id=user_id,
            status=status,
            memory_type=memory_type,
            limit=limit,
            after=after,
            now=now,
            sqlite=self.dialect.name == "sqlite",
        )
        return [from_row(r) for r in self._rows(stmt, {}, "listing memories")]

    def _get(self, record_id: str) -> MemoryRecord | None:
        self._ready()
        return self._one(self._sql.by_id, {"rid": record_id}, "reading a memory")

    def _review(
        self,
        record_id: str,
        decision: MemoryStatus,
        now: datetime,
        reviewer: str | None,
        reason: str | None,
        edit: tuple[str, str] | None,
    ) -> MemoryRecord | None:
        self._ready()
        params = {
            "rid": record_id,
            "decision": decision.value,
            "now": naive_utc(now),
            "reviewer": reviewer,
            "reason": reason,
        }
        stmt = self._sql.review
        if edit is not None:
            stmt = self._sql.review_edit
            params.update(new_content=edit[0], proposed=edit[1])
        with _translate("reviewing a memory"), self.engine.begin() as conn:
            if (conn.execute(stmt, params)).rowcount != 1:
                return None
            row = (conn.execute(self._sql.by_id, {"rid": record_id})).mappings().one()
            return from_row(row)

    def _delete(self, record_id: str) -> bool:
        self._ready()
        return self._write(self._sql.delete, {"rid": record_id}, "deleting a memory") > 0

    def _expire_due(self, now: datetime) -> int:
        self._ready()
        return self._write(self._sql.expire, {"now": naive_utc(now)}, "expiring memories")

    def _read_state(self, namespace: str, key: str) -> StateEntry | None:
        self._ready()
        rows = self._rows(self._state_sql.read, {"ns": namespace, "k": key}, "reading state")
        return state_from_row(rows[0]) if rows else None

    def _write_state(
        self, namespace: str, key: str, value: str, expected: int | None, now: datetime
    ) -> StateEntry | None:
        self._ready()
        version = 1 if expected is None else expected + 1
        entry = StateEntry(
            namespace=namespace, key=key, value=value, version=version, updated_at=now
        )
        if expected is not None:
            params = {
                "ns": namespace,
                "k": key,
                "expected": expected,
                "new_value": value,
                "now": naive_utc(now),
            }
            done = self._write(self._state_sql.replace, params, "writing state")
            return entry if done == 1 else None
        try:
            with _translate("writing state"), self.engine.begin() as conn:
                conn.execute(self.tables.state.insert(), state_row(entry))
        except Exception as exc:
            if _lost_to_key(exc):
                return None  # present already
            raise
        return entry

    def _delete_state(self, namespace: str, key: str, expected: int | None) -> bool:
        self._ready()
        params: dict[str, Any] = {"ns": namespace, "k": key}
        if expected is None:
            stmt = self._state_sql.delete
        else:
            stmt, params["expected"] = self._state_sql.delete_at, expected
        return self._write(stmt, params, "deleting state") > 0

    def _list_state(self, namespace: str, after: str | None, limit: int) -> list[StateEntry]:
        self._ready()
        stmt = state_page_statement(self.tables.state, namespace, after, limit)
        return [state_from_row(r) for r in self._rows(stmt, {}, "listing state")]

    # -- I/O steps ---------------------------------------------------------------------
    def _rows(self, stmt: Any, params: dict[str, Any], what: str) -> list[Any]:
        with _translate(what), self.engine.connect() as conn:
            return list((conn.execute(stmt, params)).mappings().all())

    def _one(self, stmt: Any, params: dict[str, Any], what: str) -> MemoryRecord | None:
        rows = self._rows(stmt, params, what)
        return from_row(rows[0]) if rows else None

    def _write(self, stmt: Any, params: dict[str, Any], what: str) -> int:
        """Run one write statement in its own transaction; the rows it matched."""
        with _translate(what), self.engine.begin() as conn:
            return int((conn.execute(stmt, params)).rowcount)
