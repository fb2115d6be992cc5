"""The Cassandra chat memory repository: chat memory in Apache Cassandra (I/O only).

Storage shape: see ``_schema``. Every write is one single-partition conditional batch
(``IF next_position = ?``): Cassandra applies it atomically and in isolation, so readers see
the old history or the new one, and concurrent writers to one conversation are serialised by
Paxos; a loser re-reads and retries (core ``retry``). The repository remembers the guard and
the newest row positions it last saw per conversation, so a steady append is one round trip
and trims the rows the window no longer needs in that same batch.

Every statement goes through the driver bridge this twin imports (``_aio``: the driver's
futures without a thread per call; ``_blocking``: the driver's own blocking calls); ``_aio``
names the one-off set-up calls that run in a thread.
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

from chatmem.core import Message
from chatmem.core.backend import (
    AsyncBaseChatMemoryRepository,
    AsyncOwnedClientMixin,
    AsyncSchemaCheck,
    BackendError,
    BackendUnavailableError,
    Capability,
    ConversationIdPage,
    InvalidArgumentError,
    SchemaError,
    WindowEdit,
    async_owning,
    async_retry,
    require,
)

from .. import _schema
from .._codec import Decoder, StoredRow, decode_cursor, encode_cursor
from .._config import CassandraConfig, parse_url
from .._connect import DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, cluster_for_url
from .._errors import schema_lagging, translate_errors, unknown_outcome
from .._native._aio import connect, execute, prepare, shutdown
from .._native.policies import LWT_RETRY_POLICY
from .._plan import Batch, Claims, Part, Snapshot, WritePlan, plan_append, split_receipts
from .._schema import Statements, missing_schema, schema_cql, statements
from .schema_ops import ensure_schema, reloaded_missing

ASYNC = True

RETRIES = 100
"""Tries of one write against concurrent writers (core ``retry`` backs off between them)."""
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


class AsyncCassandraChatMemoryRepository(AsyncOwnedClientMixin, AsyncBaseChatMemoryRepository):
    """Chat memory in Cassandra: one partition per conversation, one LWT batch per write.

    Pass a ``cassandra.cluster.Session`` (never closed by us) or use ``from_url``; options are
    those of ``CassandraConfig`` (or pass ``config=``).
    """

    capabilities = frozenset({Capability.TTL})

    def __init__(self, session: Any, *, config: CassandraConfig | None = None, **options: Any):
        require("cassandra", "cassandra")
        if config is not None and options:
            raise InvalidArgumentError("config", "pass either config= or options, not both")
        if session is None:
            raise InvalidArgumentError("session", "must be a cassandra.cluster.Session")
        self.config = config if config is not None else CassandraConfig(**options)
        self._session = session
        self._cql: Statements = statements(self.config)
        self._prepared: dict[str, Any] = {}
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self._lock = threading.Lock()
        self._prepare_lock = asyncio.Lock()
        self._decoder = Decoder()
        self._schema_check = AsyncSchemaCheck(self._missing_schema, "the Cassandra cluster")
        if ASYNC:  # no I/O in a constructor: the first call creates the schema
            self._init_pending = self.config.initialize_schema == "always"
        else:
            if self.config.initialize_schema == "always":
                self.create_schema()

    @classmethod
    async def from_url(
        cls,
        url: str,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        **options: Any,
    ) -> AsyncCassandraChatMemoryRepository:
        """``cassandra://[user:pw@]host[:port][,host...][/keyspace][?local_dc=dc]``; the
        repository owns the cluster it connects and ``close()`` shuts it down.
        ``request_timeout`` bounds each statement and ``connect_timeout`` each connection
        attempt (seconds): a stalled server then fails with BackendUnavailableError.

        The schema is created here (``initialize_schema="always"``), so a bad option or an
        unreachable server fails at this call."""
        # the driver's Cluster.connect and shutdown block by design: the bridge runs them
        # once per repository (in a worker thread for the non-blocking twin, see _aio)
        cluster = cluster_for_url(
            url, options, request_timeout=request_timeout, connect_timeout=connect_timeout
        )

        async def build() -> AsyncCassandraChatMemoryRepository:
            with translate_errors("connect"):
                session = await connect(cluster)
            repo = cls(session, **options)
            repo._schema_check.url_hint = url  # for the "never" mode's SchemaError message
            if ASYNC:
                await repo._ensure_initialized()
            return repo

        return await async_owning(cluster, lambda: shutdown(cluster), build)

    async def create_schema(self) -> None:
        """Create the keyspace and table when missing (race-safe), then check the table."""
        await ensure_schema(self._session, self.config)
        self._schema_check.passed()

    async def _initialize(self) -> None:
        await self.create_schema()

    async def _missing_schema(self) -> list[str]:
        """What the driver's metadata lacks (no round trip): the "never" mode's probe."""
        return missing_schema(self._session, self.config)

    def schema_statements(self) -> list[str]:
        """The CQL ``create_schema`` runs, for teams that apply schema changes themselves."""
        return schema_cql(self.config)

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """The CQL for ``url`` (its keyspace) and ``options``, built without a connection."""
        target = parse_url(url)
        if target.keyspace is not None:
            options.setdefault("keyspace", target.keyspace)
        return schema_cql(CassandraConfig(**options))

    # -- statement execution ------------------------------------------------------------
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
    def _remember(self, cid: str, known: _Known | None) -> None:
        with self._lock:
            if known is None:
                self._known.pop(cid, None)
                return
            self._known[cid] = known
            self._known.move_to_end(cid)
            while len(self._known) > KNOWN_CONVERSATIONS:
                self._known.popitem(last=False)

    def _recall(self, cid: str) -> _Known | None:
        with self._lock:
            return self._known.get(cid)

    # -- reads ----------------------------------------------------------------------------
    async def _read(self, cid: str, limit: int | None) -> Snapshot:
        """Statics plus the newest ``limit`` rows (all rows when None), consistently."""
        if limit is None:
            return await async_retry(lambda: self._read_all(cid), what="a paged read")
        snap = Snapshot()
        for row in await self._rows("select_last", (cid, limit), "a read", limit + 1):
            self._take(snap, _seq(row))
        snap.complete = len(snap.rows) < limit
        self._remember(cid, _Known(snap.next_position, tuple(r.position for r in snap.rows)))
        return snap

    async def _read_all(self, cid: str) -> Snapshot | None:
        result = await self._run("select_log", (cid,), "a read", self.config.fetch_size)
        snap = Snapshot()
        first = True
        while True:  # page by page; every page must show the same guard
            for row in result.current_rows:
                values = _seq(row)
                if not first and values[0] != snap.next_position:
                    return None  # a write landed between pages: read again
                first = False
                self._take(snap, values)
            if not result.has_more_pages:
                break
            with translate_errors("a read"):
                await result.fetch_next_page()
        self._remember(cid, _Known(snap.next_position, tuple(r.position for r in snap.rows)))
        return snap

    @staticmethod
    def _take(snap: Snapshot, values: Sequence[Any]) -> None:
        snap.next_position, snap.origin = values[0], values[1]
        snap.systems, snap.receipts = split_receipts(values[2] or {})
        if values[3] is not None:
            snap.rows.append(StoredRow(values[3], values[4], values[5], values[6]))

    async def _guard(self, cid: str) -> int | None:
        rows = await self._rows("select_guard", (cid,), "a read")
        return _seq(rows[0])[0] if rows else None

    # -- hooks ----------------------------------------------------------------------------
    async def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        start = decode_cursor(after) if after is not None else None
        found: list[tuple[int, str]] = []
        while len(found) <= limit:
            ask = limit + 2 - len(found)
            if start is None:
                rows = await self._rows("list_first", (ask,), "listing conversations")
            else:
                rows = await self._rows("list_from", (start[0], ask), "listing conversations")
            for row in rows:
                cid, token = _seq(row)
                if start is not None and token == start[0] and (cid.encode() <= start[1].encode()):
                    continue  # the cursor itself, or a same-token key ordered before it
                found.append((token, cid))
            if len(rows) < ask:
                break
            last = _seq(rows[-1])
            start = (last[1], last[0])
        page = found[:limit]
        more = len(found) > limit
        return ConversationIdPage(
            [cid for _, cid in page], encode_cursor(page[-1]) if more else None
        )

    async def _find(self, cid: str) -> list[Message]:
        snap = await self._read(cid, None)
        return snap.messages(self._decoder)

    async def _find_last(self, cid: str, n: int) -> list[Message]:
        snap = await self._read(cid, n)
        return snap.messages(self._decoder)[-n:]

    async def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        snap = await self._read(cid, non_system_limit)
        return snap.messages(self._decoder)

    async def _delete(self, cid: str) -> None:
        async def attempt() -> bool | None:
            known = self._recall(cid)
            guard = known.next_position if known is not None else None
            if guard is None:
                guard = await self._guard(cid)  # a remembered "absent" may be stale: ask
                if guard is None:
                    return True
            parts = [("cas_clear", (cid, guard)), ("delete_partition", (cid,))]
            if not await self._cas(cid, parts, "a delete"):
                return None
            self._remember(cid, None)
            return True

        await async_retry(attempt, attempts=RETRIES, what="delete", max_sleep=MAX_BACKOFF)

    async def _save_all(self, cid: str, messages: list[Message]) -> None:
        ttl = self.config.ttl_seconds

        async def attempt() -> bool | None:
            known = self._recall(cid)
            guard = known.next_position if known is not None else await self._guard(cid)
            return await self._apply(cid, WritePlan.replace(cid, guard, messages, ttl).batch())

        await async_retry(attempt, attempts=RETRIES, what="save_all", max_sleep=MAX_BACKOFF)

    async def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        ttl = self.config.ttl is not None

        async def attempt() -> bool | None:
            known = None if ttl else self._recall(cid)
            if known is None:
                snap = await self._read(cid, trim_to if ttl else (trim_to or 1))
                if ttl:
                    return await self._edit(cid, snap, WindowEdit(append=tuple(messages)), trim_to)
                known = _Known(snap.next_position, tuple(r.position for r in snap.rows))
            plan = plan_append(cid, known.next_position, known.rows, messages, trim_to)
            return await self._apply(cid, plan, "an append")

        await async_retry(attempt, attempts=RETRIES, what="append", max_sleep=MAX_BACKOFF)

    async def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        async def attempt() -> bool | None:
            snap = await self._read(cid, non_system_limit)
            return await self._edit(cid, snap, plan(snap.messages(self._decoder)), non_system_limit)

        await async_retry(attempt, attempts=RETRIES, what="window edit", max_sleep=MAX_BACKOFF)

    # -- writing ----------------------------------------------------------------------------
    async def _edit(
        self, cid: str, snap: Snapshot, edit: WindowEdit, keep: int | None
    ) -> bool | None:
        """Apply ``edit`` to the state ``snap`` read; None when another write won."""
        plan = WritePlan.edit(cid, snap, edit, keep, self.config.ttl_seconds)
        return True if plan is None else await self._apply(cid, plan.batch())

    async def _apply(self, cid: str, batch: Batch, what: str = "a write") -> bool | None:
        """Run one planned batch; remember what it leaves known, or None when it lost."""
        if not await self._cas(cid, batch.parts, what, batch.claims):
            return None
        self._remember(cid, _Known(batch.next_position, batch.kept))
        return True
