"""The Spring AI layout on Neo4j: chat memory in the graph Spring AI's
``Neo4jChatMemoryRepository`` reads and writes (shape: ``_native/spring_ai``), so a Spring
AI service and a Python one share conversations.

Every chatmem operation is one managed transaction that first takes the session node's
exclusive lock (a write with no net change, held to commit; ``MERGE`` is race-free through
chatmem's uniqueness constraint on ``Session.id``), then reads the conversation and writes
the change: an append creates the new messages after the last ``idx``; any other change
deletes the conversation's messages and creates the new list with ``idx`` from 1, as Spring's
``saveAll`` does. Concurrent chatmem writers thus lose nothing, and a chatmem reader (which
takes the same lock) sees a replace whole or not at all. Tool calls and tool responses
round-trip; media and metadata are refused unless named in ``lossy``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import neo4j
from chatmem.core import Message
from chatmem.core.backend import (
    AsyncBaseChatMemoryRepository,
    AsyncOwnedClientMixin,
    AsyncSchemaCheck,
    ConversationIdPage,
    InvalidArgumentError,
    WindowEdit,
    add_to_window,
    apply_window_edit,
    async_owning,
    async_retry,
    split_layout,
    spring_ai_lossy,
    spring_ai_storable,
    stamp,
    validate_messages,
    validate_positive_int,
    window_source,
)

from .._config import parse_url
from .._errors import hidden_by_rollback, server_errors, translate_errors
from .._native.spring_ai import (
    HOLDS,
    SESSION_CONSTRAINT,
    SpringAiNeo4jLabels,
    cypher,
    decode,
    encode,
    spring_ai_schema,
)
from .repository import ATTEMPTS, AsyncNeo4jChatMemoryRepository

ASYNC = True


class AsyncSpringAiNeo4jChatMemoryRepository(AsyncOwnedClientMixin, AsyncBaseChatMemoryRepository):
    """Chat memory in Spring AI's Neo4j graph, readable and writable by Spring AI's
    ``Neo4jChatMemoryRepository`` at the same time.

    Pass a ``neo4j.AsyncDriver`` (never closed by us) or use ``from_url`` (or
    ``Neo4jChatMemoryRepository.from_url(url, layout="spring-ai")``). Options: the six
    labels of ``SpringAiNeo4jLabels`` (Spring's defaults), ``database``,
    ``initialize_schema`` (``"always"``: Spring creates its indexes whenever it starts) and
    ``lossy`` (``"media"``, ``"metadata"``: what a write may drop; otherwise refused).
    """

    def __init__(
        self,
        driver: neo4j.AsyncDriver,
        *,
        database: str | None = None,
        initialize_schema: Any = "always",
        lossy: Iterable[str] = (),
        **labels: Any,
    ) -> None:
        from chatmem.core.backend import schema_mode

        if not isinstance(driver, neo4j.AsyncDriver):
            raise InvalidArgumentError(
                "driver", f"must be a neo4j.AsyncDriver, got {type(driver).__name__}"
            )
        self.lossy = spring_ai_lossy(lossy)
        self.labels = SpringAiNeo4jLabels(**labels)
        self.database = database
        self.initialize_schema = schema_mode(initialize_schema)
        self._driver = driver
        self._q = cypher(self.labels)
        self._schema_check = AsyncSchemaCheck(self._missing_schema, "the Neo4j database")
        if ASYNC:
            self._init_pending = self.initialize_schema == "always"
        else:
            if self.initialize_schema == "always":
                self.create_schema()

    @classmethod
    async def from_url(
        cls, url: str, *, driver_options: dict[str, Any] | None = None, **options: Any
    ) -> AsyncSpringAiNeo4jChatMemoryRepository:
        """Connect as ``AsyncNeo4jChatMemoryRepository.from_url`` does; Spring's indexes
        are created before this returns unless ``initialize_schema="never"``."""
        url, _ = split_layout(url, options)
        target = parse_url(url)
        auth = None
        if target.user is not None:
            auth = neo4j.basic_auth(target.user, target.password or "")
        spring_ai_lossy(options.get("lossy", ()))
        SpringAiNeo4jLabels(
            **{
                k: v
                for k, v in options.items()
                if k not in ("lossy", "database", "initialize_schema")
            }
        )
        driver = neo4j.AsyncGraphDatabase.driver(target.uri, auth=auth, **(driver_options or {}))

        async def build() -> AsyncSpringAiNeo4jChatMemoryRepository:
            repo = cls(driver, **options)
            if ASYNC:
                await repo._ensure_initialized()
            return repo

        return await async_owning(driver, driver.close, build)

    # -- schema ---------------------------------------------------------------------------
    def schema_statements(self) -> list[str]:
        """Spring's indexes and chatmem's session-id constraint."""
        return spring_ai_schema(self.labels)

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """The same for ``url`` and label ``options``, built without a connection."""
        url, _ = split_layout(url, options)
        parse_url(url)
        for key in ("lossy", "database", "initialize_schema"):
            options.pop(key, None)
        return spring_ai_schema(SpringAiNeo4jLabels(**options))

    async def create_schema(self) -> None:
        """Create them when missing (each ``IF NOT EXISTS``) and wait until online."""
        async with self._session() as session:
            with translate_errors("creating the Spring AI schema"):
                for statement in spring_ai_schema(self.labels):
                    await (await session.run(statement)).consume()
                await (await session.run("CALL db.awaitIndexes(300)")).consume()
        self._schema_check.passed()

    async def _initialize(self) -> None:
        await self.create_schema()

    async def _missing_schema(self) -> list[str]:
        async with self._session() as session:
            with translate_errors("checking the Spring AI schema"):
                result = await session.run(
                    "SHOW CONSTRAINTS YIELD name WHERE name = $name RETURN name",
                    {"name": SESSION_CONSTRAINT},
                )
                found = [r async for r in result]
        return [] if found else [f"constraint {SESSION_CONSTRAINT}"]

    # -- writes: refuse what the layout does not store, before any I/O -------------------
    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace the history in one locked transaction."""
        await super().save_all(conversation_id, self._storable(messages))

    async def append(self, conversation_id: str, messages: Sequence[Message] | Message) -> None:
        """Append after the last message, in one locked transaction."""
        await super().append(conversation_id, self._storable(messages))

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
        kept = self._storable(messages)
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
        await self._change(cid, lambda log: add_to_window(log, new, max_messages), "window add")

    def _storable(self, messages: Sequence[Message] | Message) -> list[Message]:
        return spring_ai_storable(messages, self.lossy, holds=HOLDS)

    # -- hooks ----------------------------------------------------------------------------
    async def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        async def work(tx: neo4j.AsyncManagedTransaction) -> list[str]:
            result = await tx.run(self._q["ids"], {"after": after or "", "n": limit + 1})
            return [str(r["id"]) async for r in result if r["id"] is not None]

        ids = await self._transaction(work, "listing", neo4j.READ_ACCESS)
        if len(ids) > limit:
            return ConversationIdPage(ids[:limit], ids[limit - 1])
        return ConversationIdPage(ids, None)

    async def _find(self, cid: str) -> list[Message]:
        async def work(tx: neo4j.AsyncManagedTransaction) -> list[Message]:
            await (await tx.run(self._q["lock_existing"], {"cid": cid})).consume()
            return await self._read(tx, cid)

        found: list[Message] = await self._transaction(work, "find")  # it takes the lock
        return found

    async def _save_all(self, cid: str, messages: list[Message]) -> None:
        await self._change(cid, lambda log: messages, "save_all")

    async def _delete(self, cid: str) -> None:
        async def work(tx: neo4j.AsyncManagedTransaction) -> None:
            await (await tx.run(self._q["clear"], {"cid": cid})).consume()
            await (await tx.run(self._q["drop_session"], {"cid": cid})).consume()

        await self._transaction(work, "delete")

    async def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        def grown(log: list[Message]) -> list[Message]:
            both = [*log, *messages]
            return both if trim_to is None else window_source(both, trim_to)

        await self._change(cid, grown, "append")

    async def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        await self._change(cid, lambda log: apply_window_edit(log, plan(log)), "window edit")

    # -- I/O ------------------------------------------------------------------------------
    async def _change(
        self, cid: str, change: Callable[[list[Message]], Sequence[Message]], what: str
    ) -> None:
        """Lock the session, read the conversation, write ``change(log)``: an append when
        the old log is a prefix of the new one, else a rewrite with ``idx`` from 1."""

        async def work(tx: neo4j.AsyncManagedTransaction) -> None:
            await (await tx.run(self._q["lock"], {"cid": cid})).consume()
            log = await self._read(tx, cid)
            new = list(change(log))
            if len(new) >= len(log) and all(a is b for a, b in zip(log, new, strict=False)):
                tail = new[len(log) :]
                if tail:
                    await self._create(tx, cid, tail, len(log))
                return
            await (await tx.run(self._q["clear"], {"cid": cid})).consume()
            if new:
                await self._create(tx, cid, new, 0)
            else:
                await (await tx.run(self._q["drop_session"], {"cid": cid})).consume()

        await self._transaction(work, what)

    async def _create(
        self, tx: neo4j.AsyncManagedTransaction, cid: str, messages: Sequence[Message], start: int
    ) -> None:
        params = {"cid": cid, "messages": encode(messages, start)}
        await (await tx.run(self._q["create"], params)).consume()

    async def _read(self, tx: neo4j.AsyncManagedTransaction, cid: str) -> list[Message]:
        result = await tx.run(self._q["read"], {"cid": cid})
        return decode([r async for r in result])

    async def _transaction(
        self,
        work: Callable[[neo4j.AsyncManagedTransaction], Any],
        what: str,
        mode: str = neo4j.WRITE_ACCESS,
    ) -> Any:
        await self._schema_check()

        async def run() -> tuple[Any]:  # a tuple: async_retry takes None for a lost race
            async with self._session(mode) as session:
                with server_errors():
                    if mode == neo4j.READ_ACCESS:
                        return (await session.execute_read(work),)
                    return (await session.execute_write(work),)

        with translate_errors(what):
            (value,) = await async_retry(
                run,
                attempts=ATTEMPTS,
                what=what,
                base_sleep=0.002,
                max_sleep=1.0,
                retry_on=hidden_by_rollback,
            )
        return value

    def _session(self, mode: str = neo4j.WRITE_ACCESS) -> neo4j.AsyncSession:
        return self._driver.session(
            database=self.database,
            default_access_mode=mode,
            notifications_min_severity="OFF",
        )


# the layout ``AsyncNeo4jChatMemoryRepository.from_url(url, layout="spring-ai")`` builds
AsyncNeo4jChatMemoryRepository.layouts["spring-ai"] = AsyncSpringAiNeo4jChatMemoryRepository
