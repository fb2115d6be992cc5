"""``AsyncCassandraMemoryRecordRepository``: long-term memory records and state entries in
Cassandra (I/O only; the sync twin ``CassandraMemoryRecordRepository`` is generated from this,
on the blocking driver calls of ``_native._blocking``).

Tables and statements in ``_record_schema``; the statement runner and the state entries in
``record_state``. Dedup is a lightweight transaction on the
dedup table (one claimant per normalised content); a review or an expiry is a lightweight
transaction on the record (one winner); the listing tables follow in a logged batch.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from chatmem.core import ConcurrencyError, InvalidArgumentError, SchemaMode
from chatmem.core.backend import (
    DEFAULT_SCHEMA_MODE,
    AsyncOwnedClientMixin,
    async_owning,
    cql_identifier,
    require,
    schema_mode,
    to_micros,
)
from chatmem.core.longterm import (
    DEFAULT_PENDING_TTL,
    EXPIRED_REASON,
    RECORD_FIELDS,
    AddResult,
    Clock,
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    dedup_key,
    effective,
    record_from_fields,
    record_to_fields,
    utc_now,
)

from .._config import DEFAULT_KEYSPACE, DEFAULT_REPLICATION, Replication
from .._connect import DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, cluster_for_url
from .._errors import translate_errors
from .._native._aio import connect, execute, shutdown
from .._record_schema import DEFAULT_MEMORY_TABLE_NAME, memory_cql, memory_schema_cql
from .record_state import AsyncCassandraRecordStatements, values_of
from .schema_ops import run_ddl

ASYNC = True
ADD_ATTEMPTS = 5
CLAIM_WAIT = 5.0
"""Seconds an add waits for a concurrent claimant to write its record before taking over."""
SWEEP_CHUNK = 500
_PENDING = MemoryStatus.PENDING
_PARTITIONS: dict[MemoryStatus | None, tuple[MemoryStatus, ...]] = {
    None: tuple(MemoryStatus),
    MemoryStatus.PENDING: (MemoryStatus.PENDING,),
    MemoryStatus.APPROVED: (MemoryStatus.APPROVED,),
    # an expired pending record reads as rejected: it is still in the pending partition
    MemoryStatus.REJECTED: (MemoryStatus.REJECTED, MemoryStatus.PENDING),
}


def to_values(record: MemoryRecord, key: str) -> list[Any]:
    """A record as the insert's bound values (``COLUMNS`` order: the shared fields' order)."""
    return list(record_to_fields(record, key).values())


def from_values(row: Any) -> MemoryRecord:
    """A record from a row of ``COLUMNS``."""
    return record_from_fields(dict(zip(RECORD_FIELDS, values_of(row), strict=True)))


class AsyncCassandraMemoryRecordRepository(AsyncOwnedClientMixin, AsyncCassandraRecordStatements):
    """Memory records in Cassandra tables ``<table_name>`` (default ``ai_memory_record``),
    ``_dedup``, ``_by_user`` and ``_by_status``, and state entries in ``_state``, in
    ``keyspace`` (default ``chatmem``).

    Pass a ``cassandra.cluster.Session`` (never closed by us) or use ``from_url``.
    ``initialize_schema="always"`` (the default) creates the keyspace (with ``replication``)
    and the tables when missing (the blocking twin in its constructor, the non-blocking one
    on its first call; ``from_url`` before it returns); ``"never"`` leaves that to
    ``schema_cql()``."""

    def __init__(
        self,
        session: Any,
        *,
        keyspace: str = DEFAULT_KEYSPACE,
        table_name: str = DEFAULT_MEMORY_TABLE_NAME,
        initialize_schema: SchemaMode | bool = DEFAULT_SCHEMA_MODE,
        replication: Replication = DEFAULT_REPLICATION,
        clock: Clock = utc_now,
        pending_ttl: timedelta = DEFAULT_PENDING_TTL,
    ) -> None:
        require("cassandra", "cassandra")
        super().__init__(clock=clock, pending_ttl=pending_ttl)
        if session is None:
            raise InvalidArgumentError("session", "must be a cassandra.cluster.Session")
        self.keyspace = cql_identifier(keyspace, "keyspace")
        self.table_name = cql_identifier(table_name, "table_name")
        if len(self.table_name) > 48 - len("_by_status"):
            raise InvalidArgumentError("table_name", "is longer than 38 characters")
        self.replication = replication
        self.initialize_schema = schema_mode(initialize_schema)
        self._session = session
        self._cql = memory_cql(self.keyspace, self.table_name)
        self._prepared: dict[str, Any] = {}
        self._schema_on_first_use(self.initialize_schema == "always")

    @classmethod
    async def from_url(
        cls,
        url: str,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        **options: Any,
    ) -> AsyncCassandraMemoryRecordRepository:
        """``cassandra://[user:pw@]host[:port][,host...][/keyspace][?local_dc=dc]``; the
        store owns the cluster it connects and ``close()`` shuts it down. The timeouts are
        the chat repository's (seconds per statement and per connection attempt)."""
        cluster = cluster_for_url(
            url, options, request_timeout=request_timeout, connect_timeout=connect_timeout
        )

        async def build() -> AsyncCassandraMemoryRecordRepository:
            with translate_errors("connect"):
                session = await connect(cluster)
            repo = cls(session, **options)
            await repo._ready()
            return repo

        return await async_owning(cluster, functools.partial(shutdown, cluster), build)

    def schema_cql(self) -> list[str]:
        """The DDL ``create_schema`` runs, for teams that apply schema changes themselves."""
        return memory_schema_cql(self.keyspace, self.table_name, self.replication)

    async def create_schema(self) -> None:
        """Create the keyspace and tables when missing (``IF NOT EXISTS`` and name-derived
        table ids make racing creators agree), waiting for schema agreement after each; a
        coordinator that has not applied the keyspace yet is retried (see ``run_ddl``)."""
        keyspace, *tables = self.schema_cql()
        with translate_errors("creating the memory record schema"):
            await run_ddl(self._session, keyspace, f"keyspace {self.keyspace}")
            for cql in tables:
                what = f"a memory record table in {self.keyspace}"
                await run_ddl(self._session, cql, what, f"keyspace {self.keyspace}")

    async def _create_schema(self) -> None:
        await self.create_schema()

    async def drop_schema(self) -> None:
        """Drop the five tables (the keyspace stays)."""
        with translate_errors("dropping the memory record tables"):
            for suffix in ("", "_dedup", "_by_user", "_by_status", "_state"):
                name = f'"{self.keyspace}"."{self.table_name}{suffix}"'
                await execute(self._session, f"DROP TABLE IF EXISTS {name}", timeout=60)

    # -- listing rows --------------------------------------------------------------------
    def _index_rows(
        self, record: MemoryRecord, status: MemoryStatus
    ) -> list[tuple[str, list[Any]]]:
        at = to_micros(record.created_at)
        expires = None if record.expires_at is None else to_micros(record.expires_at)
        values = [status.value, at, record.id, record.user_id, expires]
        return [("user_insert", values), ("status_insert", values)]

    def _unindex_rows(
        self, record: MemoryRecord, status: MemoryStatus
    ) -> list[tuple[str, list[Any]]]:
        at = to_micros(record.created_at)
        return [
            ("user_delete", [record.user_id, status.value, at, record.id]),
            ("status_delete", [status.value, at, record.id]),
        ]

    async def _write(self, record: MemoryRecord, key: str) -> None:
        parts = [("insert", to_values(record, key)), *self._index_rows(record, record.status)]
        await self._batch(parts, "storing a memory")

    # -- hooks ---------------------------------------------------------------------------
    async def _add(self, record: MemoryRecord, key: str) -> AddResult:
        for _ in range(ADD_ATTEMPTS):
            claim = await self._run("claim", [key, record.id], "storing a memory")
            if claim.was_applied:
                await self._write(record, key)
                return AddResult(record, True)
            holder = values_of(claim.one())[-1]
            deadline = time.monotonic() + CLAIM_WAIT
            while holder is not None:
                stored = await self._get(holder)
                if stored is not None:
                    return AddResult(stored, False)
                if time.monotonic() > deadline:
                    # The claimant never wrote its record (it died): take the claim over.
                    over = await self._run(
                        "take_over", [record.id, key, holder], "storing a memory"
                    )
                    if over.was_applied:
                        await self._write(record, key)
                        return AddResult(record, True)
                    break
                await asyncio.sleep(0.05)
                row = (await self._run("claimed", [key], "storing a memory")).one()
                holder = None if row is None else values_of(row)[0]
        raise ConcurrencyError("storing a memory kept conflicting with concurrent writers")

    async def _find(
        self,
        agent_id: str | None,
        user_id: str | None,
        status: MemoryStatus | None,
        memory_type: MemoryType | None,
        limit: int,
        after: tuple[datetime, str] | None,
        now: datetime,
    ) -> list[MemoryRecord]:
        cursor = None if after is None else (to_micros(after[0]), after[1])
        out: list[MemoryRecord] = []
        while len(out) < limit:
            keys: list[tuple[int, str, MemoryStatus]] = []
            edge: tuple[int, str] | None = None  # past this, some partition was cut short
            for part in _PARTITIONS[status]:
                rows = await self._keys(user_id, part, cursor, limit)
                keys += [(r[0], r[1], part) for r in rows]
                if len(rows) == limit:
                    last = (rows[-1][0], rows[-1][1])
                    edge = last if edge is None else min(edge, last)
            keys = sorted(k for k in keys if edge is None or (k[0], k[1]) <= edge)
            stored = await self._many([k[1] for k in keys])
            for _created, rid, part in keys:
                record = stored.get(rid)
                if record is None or record.status is not part:
                    continue  # deleted, or its listing rows are still being moved
                now_as = effective(record, now)
                if (
                    (status is None or now_as.status is status)
                    and (agent_id is None or record.agent_id == agent_id)
                    and (memory_type is None or record.memory_type is memory_type)
                ):
                    out.append(record)
            if edge is None:
                break
            cursor = edge
        return out[:limit]

    async def _keys(
        self, user_id: str | None, status: MemoryStatus, cursor: tuple[int, str] | None, n: int
    ) -> list[Sequence[Any]]:
        if user_id is not None:
            name, params = "user", [user_id, status.value]
        else:
            name, params = "status", [status.value]
        if cursor is None:
            result = await self._run(f"{name}_first", [*params, n], "listing memories")
        else:
            result = await self._run(f"{name}_page", [*params, *cursor, n], "listing memories")
        return [values_of(r) for r in result.current_rows]

    async def _many(self, ids: list[str]) -> dict[str, MemoryRecord]:
        if not ids:
            return {}
        unique = list(dict.fromkeys(ids))
        out: dict[str, MemoryRecord] = {}
        for i in range(0, len(unique), 100):  # bounded IN lists keep coordinators light
            rows = await self._run("by_ids", [unique[i : i + 100]], "listing memories")
            out.update((r.id, r) for r in (from_values(row) for row in rows.current_rows))
        return out

    async def _get(self, record_id: str) -> MemoryRecord | None:
        row = (await self._run("by_id", [record_id], "reading a memory")).one()
        return None if row is None else from_values(row)

    async def _review(
        self,
        record_id: str,
        decision: MemoryStatus,
        now: datetime,
        reviewer: str | None,
        reason: str | None,
        edit: tuple[str, str] | None,
    ) -> MemoryRecord | None:
        at = to_micros(now)
        name, params = "review", [decision.value, at, reviewer, reason]
        if edit is not None:
            name, params = "review_edit", [*params, *edit]
        if not (await self._run(name, [*params, record_id, at], "reviewing a memory")).was_applied:
            return None
        record = await self._get(record_id)
        if record is not None:
            moves = self._unindex_rows(record, _PENDING) + self._index_rows(record, decision)
            await self._batch(moves, "reviewing a memory")
        return record

    async def _delete(self, record_id: str) -> bool:
        record = await self._get(record_id)
        if (
            record is None
            or not (await self._run("delete", [record_id], "deleting a memory")).was_applied
        ):
            return False
        await self._batch(self._unindex_rows(record, record.status), "deleting a memory")
        proposed = record.content if record.original_content is None else record.original_content
        key = dedup_key(record.agent_id, record.user_id, proposed)
        await self._run("release", [key, record_id], "deleting a memory")
        return True

    async def _expire_due(self, now: datetime) -> int:
        at, count = to_micros(now), 0
        cursor: tuple[int, str] | None = None
        while True:
            rows = await self._keys(None, _PENDING, cursor, SWEEP_CHUNK)
            for _created, rid, _user, expires in rows:
                if expires is None or expires > at:
                    continue
                done = await self._run(
                    "expire", [expires, EXPIRED_REASON, rid, expires], "expiring"
                )
                if done.was_applied:
                    record = await self._get(rid)
                    if record is not None:
                        moves = self._unindex_rows(record, _PENDING)
                        moves += self._index_rows(record, MemoryStatus.REJECTED)
                        await self._batch(moves, "expiring memories")
                    count += 1
            if len(rows) < SWEEP_CHUNK:
                return count
            cursor = (rows[-1][0], rows[-1][1])
