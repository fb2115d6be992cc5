"""``JdbcMemoryRecordRepository``: long-term memory records in SQL through SQLAlchemy 2.

I/O only: validation, the clock, expiry and transitions live in
``chatmem.core.longterm`` (the base class and ``_rules``), statements in ``_record_schema``.
Each hook is a straight line of ``execute`` calls, so the async twin is this file with
``async``/``await``. Adding is an INSERT guarded by the unique dedup key (the loser of a race
reads the winner's row); a review is one conditional UPDATE (one winner); the expiry sweep is
one UPDATE.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

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
    utc_now,
)

from ._config import JdbcConfig
from ._errors import translate_errors
from ._native.dialects import SqlDialect, dialect_for
from ._record_schema import (
    DEFAULT_MEMORY_TABLE_NAME,
    MemoryTables,
    build_memory_statements,
    build_memory_tables,
    find_statement,
    from_row,
    memory_schema_sql,
    memory_schema_statements,
    naive_utc,
    to_row,
)
from ._schema import create_tables
from ._sync.engine import make_engine

ADD_ATTEMPTS = 5


@contextmanager
def _translate(what: str) -> Iterator[None]:
    """``translate_errors``, with the record table's own remedy in a SchemaError."""
    try:
        with translate_errors(what):
            yield
    except SchemaError as exc:
        raise SchemaError(
            f"{what}: the memory record table is missing; create it with "
            "initialize_schema='always' or apply `chatmem memories schema` DDL "
            f"({exc.__cause__})"
        ) from exc.__cause__


class JdbcMemoryRecordRepository(OwnedClientMixin, BaseMemoryRecordRepository):
    """Memory records in SQLite, PostgreSQL, MySQL/MariaDB, SQL Server or Oracle.

    Pass a SQLAlchemy ``Engine`` (never disposed by us) or a URL (an engine made from it is
    the repository's own: ``close()`` disposes it). ``initialize_schema``
    works as for the chat tables: ``embedded`` (create on SQLite only), ``always``,
    ``never`` (apply ``schema_sql()`` / ``chatmem memories schema`` yourself)."""

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
            engine = make_engine(engine)
            self._own(engine, engine.dispose)
        self.engine = engine
        try:
            self.dialect: SqlDialect = dialect_for(self.engine.dialect.name)
            self.tables: MemoryTables = build_memory_tables(self.config.table_name, self.dialect)
            self._sql = build_memory_statements(self.tables.records)
            mode = self.config.initialize_schema
            if mode == "always" or (mode == "embedded" and self.dialect.embedded):
                self.create_schema()
        except BaseException:
            self.close()  # an engine made here is disposed, a caller's is left alone
            raise

    @classmethod
    def from_url(cls, url: str, **options: Any) -> JdbcMemoryRecordRepository:
        """A record store on an engine of its own for ``url`` (``close()`` disposes it);
        ``options`` are the constructor's keywords."""
        return cls(url, **options)

    @classmethod
    def schema_sql_for(cls, url: str, *, table_name: str = DEFAULT_MEMORY_TABLE_NAME) -> str:
        """The record table's DDL for ``url``'s database as one script (``chatmem memories
        schema``); connects to nothing and needs no driver."""
        return memory_schema_sql(url, table_name=table_name)

    def schema_sql(self) -> list[str]:
        """The DDL for this repository's database, for your own migrations."""
        return memory_schema_statements(self.tables, self.engine.dialect, if_not_exists=False)

    def create_schema(self) -> None:
        """Create the table and indexes if missing; safe when processes race to do it."""
        what = "creating the memory record schema"
        with _translate(what):
            create_tables(self.tables.metadata, self.engine, what)

    # -- hooks -------------------------------------------------------------------------
    def _add(self, record: MemoryRecord, key: str) -> AddResult:
        row = to_row(record, key)

        def attempt() -> AddResult | None:
            try:
                with _translate("storing a memory"), self.engine.begin() as conn:
                    conn.execute(self._sql.insert, row)
                return AddResult(record, True)
            except Exception as exc:
                if not isinstance(exc.__cause__, IntegrityError):
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
        with _translate("listing memories"), self.engine.connect() as conn:
            return [from_row(r) for r in conn.execute(stmt).mappings().all()]

    def _get(self, record_id: str) -> MemoryRecord | None:
        return self._one(self._sql.by_id, {"rid": record_id}, "reading a memory")

    def _review(
        self,
        record_id: str,
        decision: MemoryStatus,
        now: datetime,
        reviewer: str | None,
        reason: str | None,
    ) -> MemoryRecord | None:
        params = {
            "rid": record_id,
            "decision": decision.value,
            "now": naive_utc(now),
            "reviewer": reviewer,
            "reason": reason,
        }
        with _translate("reviewing a memory"), self.engine.begin() as conn:
            if conn.execute(self._sql.review, params).rowcount != 1:
                return None
            row = conn.execute(self._sql.by_id, {"rid": record_id}).mappings().one()
            return from_row(row)

    def _delete(self, record_id: str) -> bool:
        with _translate("deleting a memory"), self.engine.begin() as conn:
            return bool(conn.execute(self._sql.delete, {"rid": record_id}).rowcount)

    def _expire_due(self, now: datetime) -> int:
        with _translate("expiring memories"), self.engine.begin() as conn:
            return int(conn.execute(self._sql.expire, {"now": naive_utc(now)}).rowcount)

    def _one(self, stmt: Any, params: dict[str, Any], what: str) -> MemoryRecord | None:
        with _translate(what), self.engine.connect() as conn:
            row = conn.execute(stmt, params).mappings().one_or_none()
            return None if row is None else from_row(row)
