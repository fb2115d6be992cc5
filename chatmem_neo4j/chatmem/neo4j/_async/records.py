"""``AsyncNeo4jMemoryRecordRepository``: long-term memory records as a graph, with the state
entries beside them (the sync twin ``Neo4jMemoryRecordRepository`` is generated from this;
the statements are in ``_record_schema``).

    (:User {user_id})-[:REMEMBERS]->(:Memory {id, agent_id, user_id, type, content,
        dedup_key, confidence, status, created_at, expires_at, reviewed_at, reviewer, reason,
        conversation_id, message_position})-[:EXTRACTED_FROM]->(:Message)
    (:MemoryState {namespace, key, value, version, updated_at})

The ``EXTRACTED_FROM`` link is made when the chat message node the memory came from exists
(same ``conversation_id`` and ``position``, under ``message_label``). Timestamps are integer
UTC microseconds. Uniqueness constraints on ``Memory.dedup_key`` (so concurrent adds of one
memory store it once: the loser's CREATE fails and it reads the winner's node),
``Memory.id``, ``User.user_id`` (a race-free MERGE) and ``MemoryState (namespace, key)``;
range indexes for listing and the expiry sweep. A review or a state write at a version first
writes to the node (``SET m.lock = true REMOVE m.lock``) so it holds the node's write lock
before it checks its condition: one winner. Labels are validated (``[A-Za-z_][A-Za-z0-9_]*``)
and back-quoted; every value is a parameter.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import neo4j
from chatmem.core import ConcurrencyError, InvalidArgumentError, InvalidIdentifierError, SchemaMode
from chatmem.core.backend import (
    DEFAULT_SCHEMA_MODE,
    async_retry,
    cypher_label,
    schema_mode,
    to_micros,
)
from chatmem.core.longterm import (
    DEFAULT_PENDING_TTL,
    EXPIRED_REASON,
    AddResult,
    AsyncBaseMemoryRecordRepository,
    Clock,
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    StateEntry,
    utc_now,
)
from neo4j import exceptions as neo4j_errors

from .._config import DEFAULT_MESSAGE_LABEL, parse_url
from .._errors import hidden_by_rollback, server_errors, translate_errors
from .._record_schema import (
    from_properties,
    queries,
    quoted,
    schema_statements,
    state_from_properties,
    to_properties,
)

ASYNC = True
DEFAULT_USER_LABEL = "User"
DEFAULT_MEMORY_LABEL = "Memory"
ADD_ATTEMPTS = 5
TRANSACTION_ATTEMPTS = 20
_ALREADY_EXISTS = {
    "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
    "Neo.ClientError.Schema.ConstraintAlreadyExists",
    "Neo.ClientError.Schema.IndexAlreadyExists",
}


class AsyncNeo4jMemoryRecordRepository(AsyncBaseMemoryRecordRepository):
    """Memory records in Neo4j 5. Pass a driver of this twin's kind (never closed by us) or
    use ``from_url``. ``initialize_schema="always"`` (the default) creates the constraints
    and indexes if missing (the blocking twin in its constructor, the non-blocking one on
    its first call; ``from_url`` before it returns); ``schema_statements()`` lists them for
    your own migrations."""

    def __init__(
        self,
        driver: neo4j.AsyncDriver,
        *,
        database: str | None = None,
        user_label: str = DEFAULT_USER_LABEL,
        memory_label: str = DEFAULT_MEMORY_LABEL,
        message_label: str = DEFAULT_MESSAGE_LABEL,
        initialize_schema: SchemaMode | bool = DEFAULT_SCHEMA_MODE,
        clock: Clock = utc_now,
        pending_ttl: timedelta = DEFAULT_PENDING_TTL,
    ) -> None:
        super().__init__(clock=clock, pending_ttl=pending_ttl)
        self.user_label = cypher_label(user_label, "user_label")
        self.memory_label = cypher_label(memory_label, "memory_label")
        self.message_label = cypher_label(message_label, "message_label")
        labels = {self.user_label, self.memory_label, self.message_label}
        if len(labels) != 3 or f"{self.memory_label}State" in labels:
            raise InvalidIdentifierError("memory_label", "user, memory and message labels differ")
        if database is not None and (not isinstance(database, str) or not database):
            raise InvalidArgumentError("database", "must be a non-empty str or None")
        self.database = database
        self.initialize_schema = schema_mode(initialize_schema)
        self._driver = driver
        self._owns_driver = False
        self._q = queries(self.user_label, self.memory_label, self.message_label)
        self._schema_on_first_use(self.initialize_schema == "always")

    @classmethod
    async def from_url(cls, url: str, **options: Any) -> AsyncNeo4jMemoryRecordRepository:
        """Connect with ``neo4j://`` or ``bolt://`` URLs; credentials in the URL become basic
        auth. ``close()`` closes this driver."""
        target = parse_url(url)
        auth = None if target.user is None else neo4j.basic_auth(target.user, target.password or "")
        driver = neo4j.AsyncGraphDatabase.driver(target.uri, auth=auth)
        try:
            repo = cls(driver, **options)
            await repo._ready()
        except BaseException:
            await driver.close()
            raise
        repo._owns_driver = True
        return repo

    async def close(self) -> None:
        """Close the driver if ``from_url`` created it."""
        if self._owns_driver:
            await self._driver.close()

    def schema_statements(self) -> list[str]:
        """The constraints and indexes ``create_schema`` creates."""
        return schema_statements(self.user_label, self.memory_label)

    async def create_schema(self) -> None:
        """Create the constraints and indexes if missing (race-safe) and wait until online."""
        with translate_errors("creating the memory record schema"):
            for statement in self.schema_statements():
                try:
                    await self._write(statement, {})
                except neo4j_errors.Neo4jError as exc:
                    if exc.code not in _ALREADY_EXISTS:  # a concurrent creator won the race
                        raise
            await self._write("CALL db.awaitIndexes(300)", {})

    async def _create_schema(self) -> None:
        await self.create_schema()

    async def drop_schema(self) -> None:
        """Delete every memory, user and state node of these labels and their constraints
        and indexes."""
        labels = (self.memory_label, self.user_label, f"{self.memory_label}State")
        with translate_errors("dropping the memory records"):
            for label in labels:
                await self._write(f"MATCH (n:{quoted(label)}) DETACH DELETE n", {})
            for statement in self.schema_statements():
                name = statement.split("`")[1]
                kind = "CONSTRAINT" if statement.startswith("CREATE CONSTRAINT") else "INDEX"
                await self._write(f"DROP {kind} `{name}` IF EXISTS", {})

    async def _write(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """One managed write transaction (the driver re-runs it on a deadlock)."""
        return await self._transaction(query, params, write=True)

    async def _read(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        return await self._transaction(query, params, write=False)

    async def _transaction(
        self, query: str, params: dict[str, Any], write: bool
    ) -> list[dict[str, Any]]:
        """The driver retries a transient failure itself, unless its rollback hid the error
        behind ``ResultFailedError``: ``server_errors`` unwraps it and ``retry`` re-runs it."""

        async def work(tx: neo4j.AsyncManagedTransaction) -> list[dict[str, Any]]:
            return [r.data() async for r in await tx.run(query, params)]

        async def run() -> list[dict[str, Any]]:
            async with self._driver.session(database=self.database) as session:
                execute = session.execute_write if write else session.execute_read
                with server_errors():
                    result: list[dict[str, Any]] = await execute(work)
                return result

        return await async_retry(
            run,
            attempts=TRANSACTION_ATTEMPTS,
            what="a Neo4j memory statement",
            base_sleep=0.002,
            max_sleep=1.0,
            retry_on=hidden_by_rollback,
        )

    # -- hooks ---------------------------------------------------------------------------
    async def _add(self, record: MemoryRecord, key: str) -> AddResult:
        await self._ready()
        params = {
            "user": record.user_id,
            "props": {k: v for k, v in to_properties(record, key).items() if v is not None},
            "cid": record.conversation_id,
            "pos": record.message_position,
        }
        for _ in range(ADD_ATTEMPTS):
            with translate_errors("storing a memory"):
                try:
                    await self._write(self._q["add"], params)
                    return AddResult(record, True)
                except neo4j_errors.ConstraintError:
                    rows = await self._read(self._q["by_key"], {"key": key})
            if rows:
                return AddResult(from_properties(rows[0]["m"]), False)
        raise ConcurrencyError("storing a memory kept conflicting with concurrent deletes")

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
        await self._ready()
        m, u = quoted(self.memory_label), quoted(self.user_label)
        match = (
            f"MATCH (m:{m})"
            if user_id is None
            else f"MATCH (:{u} {{user_id: $user}})-[:REMEMBERS]->(m:{m})"
        )
        where = []
        if agent_id is not None:
            where.append("m.agent_id = $agent")
        if memory_type is not None:
            where.append("m.type = $type")
        if status is MemoryStatus.PENDING:
            where.append("m.status = 'pending' AND m.expires_at > $now")
        elif status is MemoryStatus.REJECTED:
            where.append(
                "(m.status = 'rejected' OR (m.status = 'pending' AND m.expires_at <= $now))"
            )
        elif status is MemoryStatus.APPROVED:
            where.append("m.status = 'approved'")
        if after is not None:
            where.append("(m.created_at > $at OR (m.created_at = $at AND m.id > $rid))")
        query = (
            f"{match}{' WHERE ' + ' AND '.join(where) if where else ''}\n"
            "RETURN m {.*} AS m ORDER BY m.created_at, m.id LIMIT $limit"
        )
        params = {
            "user": user_id,
            "agent": agent_id,
            "type": None if memory_type is None else memory_type.value,
            "now": to_micros(now),
            "at": None if after is None else to_micros(after[0]),
            "rid": None if after is None else after[1],
            "limit": limit,
        }
        with translate_errors("listing memories"):
            return [from_properties(r["m"]) for r in await self._read(query, params)]

    async def _get(self, record_id: str) -> MemoryRecord | None:
        with translate_errors("reading a memory"):
            rows = await self._read(self._q["by_id"], {"id": record_id})
        return from_properties(rows[0]["m"]) if rows else None

    async def _review(
        self,
        record_id: str,
        decision: MemoryStatus,
        now: datetime,
        reviewer: str | None,
        reason: str | None,
        edit: tuple[str, str] | None,
    ) -> MemoryRecord | None:
        params = {
            "id": record_id,
            "decision": decision.value,
            "now": to_micros(now),
            "reviewer": reviewer,
            "reason": reason,
            "content": None if edit is None else edit[0],
            "original": None if edit is None else edit[1],
        }
        with translate_errors("reviewing a memory"):
            rows = await self._write(self._q["review"], params)
        return from_properties(rows[0]["m"]) if rows else None

    async def _delete(self, record_id: str) -> bool:
        with translate_errors("deleting a memory"):
            return bool(await self._write(self._q["delete"], {"id": record_id}))

    async def _expire_due(self, now: datetime) -> int:
        await self._ready()
        params = {"now": to_micros(now), "reason": EXPIRED_REASON}
        with translate_errors("expiring memories"):
            rows = await self._write(self._q["expire"], params)
        return int(rows[0]["n"]) if rows else 0

    async def _read_state(self, namespace: str, key: str) -> StateEntry | None:
        await self._ready()
        with translate_errors("reading state"):
            rows = await self._read(self._q["state_read"], {"ns": namespace, "key": key})
        return state_from_properties(rows[0]["s"]) if rows else None

    async def _write_state(
        self, namespace: str, key: str, value: str, expected: int | None, now: datetime
    ) -> StateEntry | None:
        await self._ready()
        params = {"ns": namespace, "key": key, "value": value, "now": to_micros(now)}
        with translate_errors("writing state"):
            if expected is None:
                try:
                    rows = await self._write(self._q["state_create"], params)
                except neo4j_errors.ConstraintError:
                    return None  # present already
            else:
                rows = await self._write(self._q["state_replace"], {**params, "expected": expected})
        if not rows:
            return None
        version = int(rows[0]["v"])
        return StateEntry(
            namespace=namespace, key=key, value=value, version=version, updated_at=now
        )

    async def _delete_state(self, namespace: str, key: str, expected: int | None) -> bool:
        await self._ready()
        params = {"ns": namespace, "key": key, "expected": expected}
        with translate_errors("deleting state"):
            return bool(await self._write(self._q["state_delete"], params))

    async def _list_state(self, namespace: str, after: str | None, limit: int) -> list[StateEntry]:
        await self._ready()
        params = {"ns": namespace, "after": after, "limit": limit}
        with translate_errors("listing state"):
            rows = await self._read(self._q["state_list"], params)
        return [state_from_properties(r["s"]) for r in rows]
