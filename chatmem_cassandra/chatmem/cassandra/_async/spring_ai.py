"""The Spring AI layout on Cassandra: chat memory in the table Spring AI's
``CassandraChatMemoryRepository`` reads and writes (shape: ``_native/spring_ai``), so a Spring AI
service and a Python one share conversations.

Every write reads the newest row at the serial consistency and inserts the whole new list as
the next row, ``IF NOT EXISTS``, at a key computed from the row it read (``next_slot``): two
chatmem writers that read the same state race for the same key and one loses and retries, so
concurrent chatmem writers lose nothing and a reader sees the old list or the new one. Past
rows stay, as Spring keeps them. A delete writes an empty list, as Spring's does. What the
layout cannot hold (tool calls, tool responses, media, metadata) is refused with
``InvalidArgumentError`` unless named in ``lossy``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from chatmem.core import Message
from chatmem.core.backend import (
    AsyncBaseChatMemoryRepository,
    AsyncOwnedClientMixin,
    AsyncSchemaCheck,
    BackendUnavailableError,
    ConversationIdPage,
    InvalidArgumentError,
    WindowEdit,
    add_to_window,
    apply_window_edit,
    async_owning,
    async_retry,
    require,
    spring_ai_lossy,
    spring_ai_storable,
    stamp,
    validate_messages,
    validate_positive_int,
    window_source,
)

from .._codec import decode_cursor, encode_cursor
from .._connect import DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, cluster_for_url
from .._errors import translate_errors, unknown_outcome
from .._native._aio import connect, execute, prepare, schema_agreed, shutdown
from .._native.spring_ai import (
    MESSAGE_TYPE,
    SpringAiCassandraConfig,
    SpringMessage,
    decode,
    encode,
    next_slot,
    same,
    spring_ai_schema,
    statements,
)
from .repository import AsyncCassandraChatMemoryRepository
from .transactions import MAX_BACKOFF, _seq

ASYNC = True

RETRIES = 100
"""Tries of one write against concurrent chatmem writers."""
SCHEMA_WAIT = 60.0
"""Seconds to wait for schema agreement after creating Spring's schema."""


class AsyncSpringAiCassandraChatMemoryRepository(
    AsyncOwnedClientMixin, AsyncBaseChatMemoryRepository
):
    """Chat memory in Spring AI's ``springframework.ai_chat_memory`` table, readable and
    writable by Spring AI's ``CassandraChatMemoryRepository`` at the same time.

    Pass a ``cassandra.cluster.Session`` (never closed by us) or use ``from_url`` (or
    ``CassandraChatMemoryRepository.from_url(url, layout="spring-ai")``). Options are those
    of ``SpringAiCassandraConfig`` plus ``lossy``: what a write may silently drop
    (``"tool_calls"``, ``"tool_responses"``: the message is not stored, as Spring's
    ``saveAll`` drops it; ``"media"``, ``"metadata"``); anything else that would be lost
    raises ``InvalidArgumentError`` before any I/O.
    """

    def __init__(self, session: Any, *, lossy: Iterable[str] = (), **options: Any) -> None:
        require("cassandra", "cassandra")
        if session is None:
            raise InvalidArgumentError("session", "must be a cassandra.cluster.Session")
        self.lossy = spring_ai_lossy(lossy)
        self.config = SpringAiCassandraConfig(**options)
        self._session = session
        self._cql = statements(self.config)
        self._prepared: dict[str, Any] = {}
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
    ) -> AsyncSpringAiCassandraChatMemoryRepository:
        """``cassandra://host[:port][/keyspace][?local_dc=dc&layout=spring-ai]``; the
        repository owns the cluster it connects. Spring's schema is created here unless
        ``initialize_schema="never"``."""
        options.pop("layout", None)
        spring_ai_lossy(options.get("lossy", ()))
        SpringAiCassandraConfig(**{k: v for k, v in options.items() if k != "lossy"})
        cluster = cluster_for_url(
            url, options, request_timeout=request_timeout, connect_timeout=connect_timeout
        )

        async def build() -> AsyncSpringAiCassandraChatMemoryRepository:
            with translate_errors("connect"):
                session = await connect(cluster)
            repo = cls(session, **options)
            repo._schema_check.url_hint = url
            if ASYNC:
                await repo._ensure_initialized()
            return repo

        return await async_owning(cluster, lambda: shutdown(cluster), build)

    # -- schema ---------------------------------------------------------------------------
    def schema_statements(self) -> list[str]:
        """Spring AI's DDL for this keyspace and table."""
        return spring_ai_schema(self.config)

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """Spring AI's DDL for ``url`` and ``options``, built without a connection."""
        from .._config import parse_url

        options.pop("layout", None)
        options.pop("lossy", None)
        keyspace = parse_url(url).keyspace
        if keyspace is not None:
            options.setdefault("keyspace", keyspace)
        return spring_ai_schema(SpringAiCassandraConfig(**options))

    async def create_schema(self) -> None:
        """Create Spring's keyspace, type and table when missing (each ``IF NOT EXISTS``)."""
        result = None
        for cql in spring_ai_schema(self.config):
            with translate_errors("creating the Spring AI schema"):
                result = await execute(self._session, cql, timeout=SCHEMA_WAIT)
        await schema_agreed(self._session, result, SCHEMA_WAIT)
        self._schema_check.passed()

    async def _initialize(self) -> None:
        await self.create_schema()

    async def _missing_schema(self) -> list[str]:
        """What the driver's metadata lacks: the "never" mode's probe."""
        c = self.config
        keyspace = self._session.cluster.metadata.keyspaces.get(c.keyspace)
        if keyspace is None:
            return [f"keyspace {c.keyspace}"]
        missing = [] if MESSAGE_TYPE in keyspace.user_types else [f"type {MESSAGE_TYPE}"]
        if c.table_name not in keyspace.tables:
            missing.append(f"table {c.table}")
        return missing

    # -- writes: refuse what Spring's table cannot hold, before any I/O -------------------
    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace the history with one new row."""
        await super().save_all(conversation_id, spring_ai_storable(messages, self.lossy))

    async def append(self, conversation_id: str, messages: Sequence[Message] | Message) -> None:
        """Append after every stored message (one new row holding the whole list)."""
        await super().append(conversation_id, spring_ai_storable(messages, self.lossy))

    async def window_add(
        self,
        conversation_id: str,
        messages: Sequence[Message] | Message,
        max_messages: int,
        *,
        keep_history: bool = False,
    ) -> None:
        """Add under the window rule and store exactly the window, as Spring's
        ``MessageWindowChatMemory`` does; ``keep_history`` keeps every message instead."""
        kept = spring_ai_storable(messages, self.lossy)
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
        await self._rewrite(
            cid, lambda raw: encode(add_to_window(decode(raw), new, max_messages)), "window add"
        )

    # -- hooks ----------------------------------------------------------------------------
    async def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        """Spring's ids in token order, without conversations whose newest row is empty
        (deleted: Spring's own listing still shows them)."""
        start = decode_cursor(after) if after is not None else None
        found: list[tuple[int, str]] = []
        while len(found) <= limit:
            ask = limit + 2 - len(found)
            if start is None:
                rows = await self._rows("ids_first", (ask,), "listing conversations")
            else:
                rows = await self._rows("ids_from", (start[0], ask), "listing conversations")
            for row in rows:
                cid, token = _seq(row)
                if start is not None and token == start[0] and cid.encode() <= start[1].encode():
                    continue  # the cursor itself, or a same-token key ordered before it
                if (await self._latest(cid))[1]:
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
        return decode((await self._latest(cid))[1])

    async def _save_all(self, cid: str, messages: list[Message]) -> None:
        written = encode(messages)
        await self._rewrite(cid, lambda raw: written, "save_all")

    async def _delete(self, cid: str) -> None:
        await self._rewrite(cid, lambda raw: [], "delete")

    async def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        def grown(raw: list[Any]) -> list[Any]:
            if trim_to is None:
                return [*raw, *encode(messages)]
            return encode(window_source([*decode(raw), *messages], trim_to))

        await self._rewrite(cid, grown, "append")

    async def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        def edited(raw: list[Any]) -> list[Any]:
            log = decode(raw)
            return encode(apply_window_edit(log, plan(log)))

        await self._rewrite(cid, edited, "window edit")

    # -- I/O ------------------------------------------------------------------------------
    async def _rewrite(
        self, cid: str, change: Callable[[list[Any]], Sequence[SpringMessage]], what: str
    ) -> None:
        """Insert ``change(newest list)`` as the next row, retried until no other chatmem
        writer took that key first. A change that leaves the list as it is writes nothing."""

        async def attempt() -> bool | None:
            latest, raw = await self._latest(cid, serial=True)
            new = list(change(list(raw)))
            if new == list(raw) and (latest is not None or not new):
                return True
            slot = next_slot(latest)
            return await self._insert(cid, slot, new, what)

        await async_retry(attempt, attempts=RETRIES, what=what, max_sleep=MAX_BACKOFF)

    async def _insert(self, cid: str, slot: Any, new: list[Any], what: str) -> bool | None:
        """One ``IF NOT EXISTS`` insert: True when it applied, None when another writer took
        the key; an unknown outcome is settled by reading the key at the serial consistency."""
        try:
            result = await self._run("insert", (cid, slot, new), what)
        except BackendUnavailableError as error:
            if not unknown_outcome(error.__cause__):
                raise
            found = await self._rows("at", (cid, slot), what, serial=True)
            if not found:
                return None
            return True if same(_seq(found[0])[0], new) else None
        return True if result.was_applied else None

    async def _latest(self, cid: str, *, serial: bool = False) -> tuple[Any, list[Any]]:
        """The newest row's key and list (``(None, [])`` when there is none)."""
        rows = await self._rows("latest", (cid,), "a read", serial=serial)
        if not rows:
            return None, []
        ts, raw = _seq(rows[0])
        return ts, list(raw or ())

    async def _rows(
        self, name: str, params: Sequence[Any], what: str, *, serial: bool = False
    ) -> list[Any]:
        result = await self._run(name, params, what, serial=serial)
        rows = list(result.current_rows)
        while result.has_more_pages:
            with translate_errors(what):
                await result.fetch_next_page()
            rows.extend(result.current_rows)
        return rows

    async def _run(
        self, name: str, params: Sequence[Any], what: str, *, serial: bool = False
    ) -> Any:
        from cassandra import ConsistencyLevel

        await self._schema_check()
        prepared = self._prepared.get(name)
        if prepared is None:
            with translate_errors(f"preparing {name}"):
                prepared = await prepare(self._session, self._cql[name])
            prepared.consistency_level = getattr(ConsistencyLevel, self.config.consistency)
            prepared.serial_consistency_level = getattr(
                ConsistencyLevel, self.config.serial_consistency
            )
            self._prepared[name] = prepared
        bound = prepared.bind(params)
        if serial:
            bound.consistency_level = getattr(ConsistencyLevel, self.config.serial_consistency)
        with translate_errors(what):
            return await execute(self._session, bound)


# the layout ``AsyncCassandraChatMemoryRepository.from_url(url, layout="spring-ai")`` builds
AsyncCassandraChatMemoryRepository.layouts["spring-ai"] = AsyncSpringAiCassandraChatMemoryRepository
