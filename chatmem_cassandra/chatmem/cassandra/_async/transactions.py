"""Running statements on Cassandra for the chat repository: prepared once, retried while a
coordinator lags behind a schema change, and conditional batches whose unknown outcome is
settled by reading (see ``_plan.Claims``); plus the guards remembered per conversation.

A mixin of the chat repository (this twin's ``CassandraChatMemoryRepository``), which sets
the attributes declared here (``_start_transactions``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chatmem.core.backend import (
    AsyncSchemaCheck,
    BackendError,
    BackendUnavailableError,
    SchemaError,
)

from .. import _schema
from .._config import CassandraConfig
from .._errors import schema_lagging, translate_errors, unknown_outcome
from .._native._aio import execute, prepare
from .._native.policies import LWT_RETRY_POLICY
from .._native.window import Window, WindowCache
from .._plan import Claims, Part, Snapshot
from .._schema import Statements, missing_schema, statements
from .schema_ops import reloaded_missing

MAX_BACKOFF = 0.5
"""Longest jittered pause between tries (seconds): a lightweight transaction takes several
round trips, so 16 writers on one conversation need pauses longer than core's 50 ms default
to spread out instead of colliding again (measured: 100 tries ran out at 50 ms)."""

GONE_AFTER = 3.0
"""Seconds a table must keep answering "does not exist" before the driver's metadata is
asked whether it is gone: right after a cold start on 3 nodes the metadata, even reloaded,
can lack a table that one node has not applied yet (CI: a writer got "table does not exist"
when it was asked at once); a dropped table keeps its answer, so it fails after this."""
SETTLE_ATTEMPTS = 10
"""Tries of the reads that settle a write of unknown outcome (they race the same writers)."""
KNOWN_CONVERSATIONS = 4096
"""How many conversations' guards the repository remembers (least recently used go first)."""


@dataclass(frozen=True)
class _Known:
    """What the last read or successful write of this process saw of a conversation."""

    next_position: int | None
    rows: tuple[int, ...] = ()  # newest row positions, newest first (a prefix of the truth)


def _seq(row: Any) -> Sequence[Any]:
    """Row values in column order, whatever row factory the caller's session uses."""
    if isinstance(row, tuple):  # tuple and named-tuple factories (the driver's default)
        return row
    return list(row.values()) if isinstance(row, Mapping) else row


class AsyncTransactions:
    """Statement execution and the remembered guards (see the module docstring)."""

    config: CassandraConfig
    _schema_check: AsyncSchemaCheck

    def _start_transactions(self, session: Any, config: CassandraConfig) -> None:
        self.config = config
        self._session = session
        self._cql: Statements = statements(config)
        self._prepared: dict[str, Any] = {}
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self._windows = WindowCache()
        self._lock = threading.Lock()
        self._prepare_lock = asyncio.Lock()

    async def _ps(self, name: str) -> Any:
        await self._schema_check()
        prepared = self._prepared.get(name)
        if prepared is not None:
            return prepared
        async with self._prepare_lock:  # many first callers prepare each statement once
            prepared = self._prepared.get(name)
            if prepared is None:
                from cassandra import ConsistencyLevel

                cql = getattr(self._cql, name)
                fresh = await self._while_lagging(
                    lambda: prepare(self._session, cql), f"preparing {name}"
                )
                fresh.consistency_level = getattr(ConsistencyLevel, self.config.consistency)
                fresh.serial_consistency_level = getattr(
                    ConsistencyLevel, self.config.serial_consistency
                )
                self._prepared[name] = prepared = fresh
        return prepared

    async def _while_lagging(self, call: Callable[[], Any], what: str) -> Any:
        """Run ``call`` (a prepare or an execute), again while the coordinator answers that
        our keyspace or table does not exist but it is there: a node that has not applied it
        yet (created a moment ago, by us or another client; seen on 3 nodes for prepares,
        reads and the appends' conditional batches). That answer comes before anything runs,
        so a retry never applies a write twice. Gone from the driver's metadata too (dropped),
        it fails after ``GONE_AFTER``; still there, after ``SCHEMA_LAG_WAIT``, naming both."""
        since = time.monotonic()
        pause = 0.05
        while True:
            try:
                with translate_errors(what):
                    return await call()
            except (SchemaError, BackendError) as error:
                cause = error.__cause__ or error
                # every host refusing (NoHostAvailable of "Unknown CF" answers) ran nothing
                # either; a write whose outcome is unknown is _cas's to settle, never resent
                if not schema_lagging(cause) or unknown_outcome(cause):
                    raise
                if await self._table_gone(since):
                    if self._metadata_lacks_table():
                        raise
                    c = self.config
                    raise SchemaError(
                        f"{what}: a coordinator still answered that {c.keyspace}."
                        f"{c.table_name} does not exist after {_schema.SCHEMA_LAG_WAIT:.0f}s "
                        f"of retries, though the driver's metadata shows it: {cause}"
                    ) from cause
            await asyncio.sleep(pause)
            pause = min(MAX_BACKOFF, pause * 2)

    def _metadata_lacks_table(self) -> bool:
        """Whether the driver's metadata lacks our keyspace or table (or shows another shape)."""
        try:
            return bool(missing_schema(self._session, self.config))
        except SchemaError:
            return True

    async def _run(
        self,
        name: str,
        params: Sequence[Any],
        what: str,
        fetch_size: int | None = None,
        serial: bool = False,
    ) -> Any:
        """Run a prepared statement; the result's first page (``_rows`` reads the others).
        ``serial``: read at the serial consistency (finishes any transaction in flight)."""
        prepared = await self._ps(name)
        bound = prepared.bind(params)
        if fetch_size is not None:
            bound.fetch_size = fetch_size
        if serial:
            from cassandra import ConsistencyLevel

            bound.consistency_level = getattr(ConsistencyLevel, self.config.serial_consistency)
        return await self._execute(bound, what)

    async def _execute(self, statement: Any, what: str) -> Any:
        """Execute a statement or batch (see ``_while_lagging``)."""
        return await self._while_lagging(lambda: execute(self._session, statement), what)

    async def _table_gone(self, since: float) -> bool:
        """After "table does not exist" answers since ``since``: whether to stop retrying,
        because it is gone (dropped, or of another shape) rather than not applied yet by one
        node, or because ``SCHEMA_LAG_WAIT`` has passed. Never before ``GONE_AFTER``; the
        driver's metadata can lack a table that exists (refreshed from a node that lags, seen
        on 3 nodes) or show it without columns (torn load), so a metadata that disagrees is
        reloaded once, after agreement."""
        waited = time.monotonic() - since
        if waited >= _schema.SCHEMA_LAG_WAIT:
            return True
        if waited < GONE_AFTER:
            return False
        with contextlib.suppress(SchemaError):
            if not missing_schema(self._session, self.config):
                return False
        try:
            return bool(await reloaded_missing(self._session, self.config))
        except SchemaError:
            return True

    async def _rows(
        self,
        name: str,
        params: Sequence[Any],
        what: str,
        fetch_size: int | None = None,
        serial: bool = False,
    ) -> list[Any]:
        """Every row of a bounded statement (``LIMIT``), page after page."""
        result = await self._run(name, params, what, fetch_size, serial)
        rows = list(result.current_rows)
        while result.has_more_pages:
            with translate_errors(what):
                await result.fetch_next_page()
            rows.extend(result.current_rows)
        return rows

    async def _cas(
        self, cid: str, parts: Sequence[Part], what: str, claims: Claims | None = None
    ) -> bool:
        """Run a conditional single-partition batch; on a lost race remember the new guard.
        When its outcome is unknown (see ``_settle``) it is settled by reading: False (try
        again) when it did not apply or may be repeated; still an error when it cannot be
        told."""
        from cassandra import ConsistencyLevel
        from cassandra.query import BatchStatement, BatchType

        batch = BatchStatement(
            batch_type=BatchType.UNLOGGED,
            # never resent after a lost coordinator: it may have applied (see _policies)
            retry_policy=LWT_RETRY_POLICY,
            consistency_level=getattr(ConsistencyLevel, self.config.consistency),
            serial_consistency_level=getattr(ConsistencyLevel, self.config.serial_consistency),
        )
        for name, params in parts:
            batch.add(await self._ps(name), params)
        try:
            result = await self._execute(batch, what)
        except BackendUnavailableError as error:
            if not unknown_outcome(error.__cause__):
                raise
            settled = await self._settle(cid, claims if claims is not None else Claims())
            if settled is None:
                raise
            self._remember(cid, None)  # read afresh before the next try
            return settled
        applied = bool(result.was_applied)
        if not applied:
            current = dict(zip(result.column_names or (), _seq(result.one()) or (), strict=False))
            self._remember(cid, _Known(current.get(self.config.next_position_column)))
        return applied

    async def _settle(self, cid: str, claims: Claims) -> bool | None:
        """After a write whose outcome is unknown (a CAS timeout, Paxos v1's
        ``CAS_WRITE_UNKNOWN``, a coordinator lost mid-request): a read at the serial
        consistency finishes or voids any transaction still in flight on the partition,
        then ``claims`` tell whether ours is stored (see ``Claims.verdict``). None when the
        reads fail too (the caller raises the original error)."""
        if not claims.rows and not claims.systems:
            return False  # repeatable: try again
        positions = [*claims.rows, *claims.systems]
        for attempt in range(SETTLE_ATTEMPTS):
            try:
                statics = await self._rows(
                    "select_statics", (cid,), "settling a write", serial=True
                )
                found = (
                    await self._rows(
                        "select_range", (cid, min(positions), max(positions)), "settling a write"
                    )
                    if claims.rows
                    else []
                )
                break
            except BackendUnavailableError:
                if attempt == SETTLE_ATTEMPTS - 1:
                    return None
                await asyncio.sleep(min(MAX_BACKOFF, 0.05 * (attempt + 1)))
        systems = dict(_seq(statics[0])[2] or {}) if statics else {}
        rows = {r[0]: (r[1], r[2], r[3]) for r in map(_seq, found)}
        return claims.verdict(systems, rows)

    # -- known guards ---------------------------------------------------------------------
    def _saw(self, cid: str, snap: Snapshot) -> None:
        """Remember what a consistent read saw: its guard and row positions, and (without a
        TTL: rows could expire unseen) its window (see ``_native.window``)."""
        self._remember(cid, _Known(snap.next_position, tuple(r.position for r in snap.rows)))
        if self.config.ttl is None:
            window = Window(
                snap.next_position, snap.origin, dict(snap.systems), tuple(snap.rows), snap.complete
            )
            self._windows.put(cid, window)

    def _remember(self, cid: str, known: _Known | None) -> None:
        with self._lock:
            if known is None:
                self._known.pop(cid, None)
                self._windows.forget(cid)  # in doubt (a delete, an unknown outcome): read
                return
            self._known[cid] = known
            self._known.move_to_end(cid)
            while len(self._known) > KNOWN_CONVERSATIONS:
                self._known.popitem(last=False)

    def _recall(self, cid: str) -> _Known | None:
        with self._lock:
            return self._known.get(cid)
