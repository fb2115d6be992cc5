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

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from chatmem.core import Message
from chatmem.core.backend import (
    AsyncBaseChatMemoryRepository,
    AsyncOwnedClientMixin,
    AsyncSchemaCheck,
    Capability,
    ConversationIdPage,
    InvalidArgumentError,
    WindowEdit,
    async_owning,
    async_retry,
    require,
)

from .._codec import Decoder, StoredRow, decode_cursor, encode_cursor
from .._config import CassandraConfig, parse_url
from .._connect import DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, cluster_for_url
from .._errors import translate_errors
from .._native._aio import connect, shutdown
from .._native.spring_ai import layout_of
from .._native.window import Window
from .._plan import Batch, Snapshot, WritePlan, plan_append, split_receipts
from .._schema import missing_schema, schema_cql
from .schema_ops import ensure_schema
from .transactions import MAX_BACKOFF, AsyncTransactions, _Known, _seq

ASYNC = True

RETRIES = 100
"""Tries of one write against concurrent writers (core ``retry`` backs off between them)."""


class AsyncCassandraChatMemoryRepository(
    AsyncTransactions, AsyncOwnedClientMixin, AsyncBaseChatMemoryRepository
):
    """Chat memory in Cassandra: one partition per conversation, one LWT batch per write.

    Pass a ``cassandra.cluster.Session`` (never closed by us) or use ``from_url``; options are
    those of ``CassandraConfig`` (or pass ``config=``).
    """

    capabilities = frozenset({Capability.TTL})
    layouts: ClassVar[dict[str, Any]] = {}
    """The other layouts ``from_url(url, layout=...)`` builds, by name (``"spring-ai"``:
    ``AsyncSpringAiCassandraChatMemoryRepository``, registered by its module)."""

    def __init__(self, session: Any, *, config: CassandraConfig | None = None, **options: Any):
        require("cassandra", "cassandra")
        if config is not None and options:
            raise InvalidArgumentError("config", "pass either config= or options, not both")
        if session is None:
            raise InvalidArgumentError("session", "must be a cassandra.cluster.Session")
        self._start_transactions(
            session, config if config is not None else CassandraConfig(**options)
        )
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
        unreachable server fails at this call. ``layout="spring-ai"`` (or a
        ``layout=spring-ai`` URL query parameter) builds Spring AI's layout instead."""
        layout = layout_of(url, options)
        options.pop("layout", None)
        if layout != "chatmem":
            return await cls.layouts[layout].from_url(  # type: ignore[no-any-return]
                url, request_timeout=request_timeout, connect_timeout=connect_timeout, **options
            )
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
        """The CQL for ``url`` (its keyspace) and ``options``, built without a connection
        (Spring AI's DDL for ``layout="spring-ai"``)."""
        layout = layout_of(url, options)
        options.pop("layout", None)
        if layout != "chatmem":
            return cls.layouts[layout].schema_statements_for_url(url, **options)  # type: ignore[no-any-return]
        target = parse_url(url)
        if target.keyspace is not None:
            options.setdefault("keyspace", target.keyspace)
        return schema_cql(CassandraConfig(**options))

    # -- reads ----------------------------------------------------------------------------
    async def _read(self, cid: str, limit: int | None, *, exact: bool = False) -> Snapshot:
        """Statics plus the newest ``limit`` rows (all rows when None), consistently.
        ``exact``: read one row more, so ``complete`` is also right when exactly ``limit``
        rows are stored (an edit must know whether it leaves the conversation empty)."""
        if limit is None:
            return await async_retry(lambda: self._read_all(cid), what="a paged read")
        snap = Snapshot()
        ask = limit + 1 if exact else limit
        for row in await self._rows("select_last", (cid, ask), "a read", ask + 1):
            self._take(snap, _seq(row))
        snap.complete = len(snap.rows) < ask
        del snap.rows[limit:]
        self._saw(cid, snap)
        return snap

    @staticmethod
    def _known_of(snap: Snapshot) -> _Known:
        return _Known(snap.next_position, tuple(r.position for r in snap.rows))

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
        self._saw(cid, snap)
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
                cid, token, guard = _seq(row)
                if start is not None and token == start[0] and (cid.encode() <= start[1].encode()):
                    continue  # the cursor itself, or a same-token key ordered before it
                if guard is not None and guard > 0:  # negative: left without a message
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
        await self._append_seen(cid, messages, trim_to, trim_to or 1)

    async def _append_and_load_window(
        self, cid: str, messages: list[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message]:
        """The append, then the window it left from the cache when its LWT applied at the
        guard the cached window was seen at (see ``_native.window``); else the read."""
        window = await self._append_seen(cid, messages, trim_to, non_system_limit)
        rows = window.tail(non_system_limit) if window is not None else None
        if window is None or rows is None:
            return await self._load_window(cid, non_system_limit)
        return self._decoder.merge_log(rows, window.systems, window.origin)

    async def _append_seen(
        self, cid: str, messages: list[Message], trim_to: int | None, read: int
    ) -> Window | None:
        """Append (reading ``read`` rows first when nothing is remembered); the window the
        append left when the cache can prove it, else None."""
        ttl = self.config.ttl is not None
        left: list[Window | None] = [None]

        async def attempt() -> bool | None:
            known = None if ttl else self._recall(cid)
            if known is None:
                snap = await self._read(cid, trim_to if ttl else read)
                if ttl:
                    return await self._edit(cid, snap, WindowEdit(append=tuple(messages)), trim_to)
                known = self._known_of(snap)
            plan = plan_append(cid, known.next_position, known.rows, messages, trim_to)
            if not await self._apply(cid, plan, "an append"):
                return None
            left[0] = self._windows.advance(
                cid,
                known.next_position,
                next_position=plan.next_position,
                base=plan.base,
                messages=messages,
                floor=plan.floor,
            )
            return True

        await async_retry(attempt, attempts=RETRIES, what="append", max_sleep=MAX_BACKOFF)
        return left[0]

    async def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        async def attempt() -> bool | None:
            snap = await self._read(cid, non_system_limit, exact=True)
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
