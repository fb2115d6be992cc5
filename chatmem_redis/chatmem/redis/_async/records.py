"""``AsyncRedisMemoryRecordRepository``: long-term memory records as RedisJSON documents
indexed by RediSearch, and the state entries beside them (the sync twin
``RedisMemoryRecordRepository`` is generated from this).

Keys under ``key_prefix`` (default ``memory-record:``)::

    <prefix>r:<id>              JSON  one record, indexed by RediSearch
    <prefix>k:<dedup key>       STR   the id of the record holding that normalised content
    <prefix>s:<namespace>|<key> HASH  one state entry (value, version, updated_at)
    <prefix>n:<namespace>       ZSET  the namespace's state keys, for listing in key order

A record document holds the record's fields with timestamps as UTC microseconds, plus
``agent_key``/``user_key`` (the lowercase hex of the id's UTF-8) as exact TAG values, so
ids of any case, punctuation or whitespace match exactly. Listing by user, type and status
is one ``FT.SEARCH``. Dedup, reviews and state writes are Lua scripts (atomic: one winner).
Expiry never uses key TTLs: reads treat a pending record past its deadline as rejected, and
``expire_due`` persists that with a conditional script per record.
"""

from __future__ import annotations

from chatmem.core.backend import require

require("redis", "redis")

import json  # noqa: E402
from datetime import datetime, timedelta  # noqa: E402
from typing import Any  # noqa: E402

# both twins' clients have one API; scripts/unasync.py swaps the module (its NAMES table)
import redis.asyncio  # noqa: E402
from chatmem.core import ConcurrencyError, InvalidArgumentError, SchemaMode  # noqa: E402
from chatmem.core.backend import (  # noqa: E402
    DEFAULT_SCHEMA_MODE,
    AsyncOwnedClientMixin,
    async_owning,
    redis_key_prefix,
    schema_mode,
    to_micros,
)
from chatmem.core.backend import index_name as validate_index_name  # noqa: E402
from chatmem.core.longterm import (  # noqa: E402
    DEFAULT_PENDING_TTL,
    EXPIRED_REASON,
    AddResult,
    AsyncBaseMemoryRecordRepository,
    Clock,
    MemoryRecord,
    MemoryStatus,
    MemoryType,
    StateEntry,
    dedup_key,
    utc_now,
)
from redis.exceptions import ResponseError  # noqa: E402

from .._errors import translate_errors  # noqa: E402
from .._native.query import format_number, tag_query  # noqa: E402
from .._record_schema import (  # noqa: E402
    ADD,
    DELETE,
    DELETE_STATE,
    EXPIRE,
    LIST_STATE,
    REVIEW,
    SEARCH,
    WRITE_STATE,
    as_text,
    from_document,
    from_json_path,
    glob_escape,
    hex_id,
    index_create_args,
    state_entry,
    status_query,
    to_document,
)

ASYNC = True
DEFAULT_MEMORY_INDEX_NAME = "memory-record-idx"
DEFAULT_MEMORY_KEY_PREFIX = "memory-record:"
ADD_ATTEMPTS = 5
TIE_LIMIT = 10_000
"""Records sharing one creation microsecond read at once when a page ends on them."""


class AsyncRedisMemoryRecordRepository(AsyncOwnedClientMixin, AsyncBaseMemoryRecordRepository):
    """Memory records in Redis (RedisJSON + RediSearch, e.g. Redis 8 or Redis Stack).

    Pass a client of this twin's kind (never closed here) or use ``from_url``. With
    ``initialize_schema="always"`` (the default) the search index is created if missing: by
    the blocking twin's constructor, by the first call of the non-blocking one (``from_url``
    before it returns)."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        *,
        index_name: str = DEFAULT_MEMORY_INDEX_NAME,
        key_prefix: str = DEFAULT_MEMORY_KEY_PREFIX,
        initialize_schema: SchemaMode | bool = DEFAULT_SCHEMA_MODE,
        clock: Clock = utc_now,
        pending_ttl: timedelta = DEFAULT_PENDING_TTL,
    ) -> None:
        super().__init__(clock=clock, pending_ttl=pending_ttl)
        if not isinstance(client, redis.asyncio.Redis):
            raise InvalidArgumentError("client", f"must be a Redis client, got {type(client)}")
        self.index_name = validate_index_name(index_name)
        self.key_prefix = redis_key_prefix(key_prefix)
        self.initialize_schema = schema_mode(initialize_schema)
        self.client = client
        self._commands: Any = client  # redis-py leaves execute_command untyped
        self._add_script = client.register_script(ADD)
        self._review_script = client.register_script(REVIEW)
        self._expire_script = client.register_script(EXPIRE)
        self._delete_script = client.register_script(DELETE)
        self._search_script = client.register_script(SEARCH)
        self._write_state_script = client.register_script(WRITE_STATE)
        self._delete_state_script = client.register_script(DELETE_STATE)
        self._list_state_script = client.register_script(LIST_STATE)
        self._schema_on_first_use(self.initialize_schema == "always")

    @classmethod
    async def from_url(cls, url: str, **options: Any) -> AsyncRedisMemoryRecordRepository:
        """A store on a client made from ``url`` (closed by ``close``)."""
        if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
            raise InvalidArgumentError("url", "must be a redis://, rediss:// or unix:// URL")
        client = redis.asyncio.Redis.from_url(url)

        async def build() -> AsyncRedisMemoryRecordRepository:
            repo = cls(client, **options)
            await repo._ready()
            return repo

        return await async_owning(client, client.aclose, build)

    async def create_index(self) -> None:
        """Create the search index if missing; safe when processes race to do it."""
        with translate_errors("creating the memory record index"):
            try:
                await self._commands.execute_command(
                    "FT.CREATE", *index_create_args(self.index_name, self.key_prefix)
                )
            except ResponseError as exc:
                if "already exists" not in str(exc).lower():
                    raise

    async def _create_schema(self) -> None:
        await self.create_index()

    async def drop_schema(self) -> None:
        """Drop the index and delete every record, dedup key and state entry under
        ``key_prefix``."""
        with translate_errors("dropping the memory records"):
            try:
                await self._commands.execute_command("FT.DROPINDEX", self.index_name)
            except ResponseError as exc:
                if "unknown index" not in str(exc).lower() and "no such" not in str(exc).lower():
                    raise
            keys = [
                k async for k in self.client.scan_iter(match=glob_escape(self.key_prefix) + "*")
            ]
            for i in range(0, len(keys), 500):
                await self.client.delete(*keys[i : i + 500])

    def _record_key(self, record_id: str) -> str:
        return f"{self.key_prefix}r:{record_id}"

    def _dedup_key(self, key: str) -> str:
        return f"{self.key_prefix}k:{key}"

    def _state_keys(self, namespace: str, key: str) -> list[str]:
        return [f"{self.key_prefix}s:{namespace}|{key}", f"{self.key_prefix}n:{namespace}"]

    # -- hooks -------------------------------------------------------------------------
    async def _add(self, record: MemoryRecord, key: str) -> AddResult:
        await self._ready()
        doc = json.dumps(to_document(record, key), ensure_ascii=False)
        keys = [self._dedup_key(key), self._record_key(record.id)]
        for _ in range(ADD_ATTEMPTS):
            with translate_errors("storing a memory"):
                existing = await self._add_script(keys=keys, args=[record.id, doc])
            if existing is None:
                return AddResult(record, True)
            stored = await self._get(as_text(existing))
            if stored is not None:
                return AddResult(stored, False)
        raise ConcurrencyError("storing a memory kept conflicting with concurrent deletes")

    async def _search(self, query: str, limit: int) -> list[MemoryRecord]:
        args = [
            self.index_name, query, "RETURN", "1", "$", "SORTBY", "created_at", "ASC",
            "LIMIT", "0", str(limit), "DIALECT", "2",
        ]  # fmt: skip
        with translate_errors("listing memories"):
            reply = await self._search_script(keys=[], args=args)
        out = []
        for i in range(1, len(reply) - 1, 2):
            fields = reply[i + 1]
            for j in range(0, len(fields) - 1, 2):
                if as_text(fields[j]) == "$":
                    out.append(from_document(json.loads(as_text(fields[j + 1]))))
        return out

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
        clauses = []
        if agent_id is not None:
            clauses.append(tag_query("agent_key", hex_id(agent_id)))
        if user_id is not None:
            clauses.append(tag_query("user_key", hex_id(user_id)))
        if memory_type is not None:
            clauses.append(tag_query("type", memory_type.value))
        wanted = status_query(status, now)
        if wanted is not None:
            clauses.append(wanted)
        base = " ".join(clauses)
        rows: list[MemoryRecord] = []
        low = "-inf"
        if after is not None:
            # The cursor's own microsecond apart (its ties with a greater id follow it), the
            # rest strictly after it: an inclusive bound would spend the page's limit on
            # records at or before the cursor and end the listing early.
            at = format_number(to_micros(after[0]))
            rows += await self._search(f"{base} @created_at:[{at} {at}]", TIE_LIMIT)
            low = f"({at}"
        later = await self._search(f"{base} @created_at:[{low} +inf]", limit)
        rows += later
        if len(later) == limit:
            # The page may end inside a run of records created in one microsecond: SORTBY
            # orders ties arbitrarily, so read the whole run and order it by id here.
            edge = format_number(to_micros(later[-1].created_at))
            rows += await self._search(f"{base} @created_at:[{edge} {edge}]", TIE_LIMIT)
        unique = {r.id: r for r in rows}.values()
        ordered = sorted(
            (r for r in unique if after is None or (r.created_at, r.id) > after),
            key=lambda r: (r.created_at, r.id),
        )
        return ordered[:limit]

    async def _get(self, record_id: str) -> MemoryRecord | None:
        with translate_errors("reading a memory"):
            raw = await self._commands.execute_command("JSON.GET", self._record_key(record_id), "$")
        return from_json_path(raw)

    async def _review(
        self,
        record_id: str,
        decision: MemoryStatus,
        now: datetime,
        reviewer: str | None,
        reason: str | None,
        edit: tuple[str, str] | None,
    ) -> MemoryRecord | None:
        args: list[str | int] = [
            json.dumps(decision.value),
            to_micros(now),
            json.dumps(reviewer),
            json.dumps(reason),
            *([] if edit is None else [json.dumps(edit[0]), json.dumps(edit[1])]),
        ]
        with translate_errors("reviewing a memory"):
            raw = await self._review_script(keys=[self._record_key(record_id)], args=args)
        return from_json_path(raw)

    async def _delete(self, record_id: str) -> bool:
        record = await self._get(record_id)
        if record is None:
            return False
        proposed = record.content if record.original_content is None else record.original_content
        key = self._dedup_key(dedup_key(record.agent_id, record.user_id, proposed))
        with translate_errors("deleting a memory"):
            done = await self._delete_script(
                keys=[self._record_key(record_id), key], args=[record_id]
            )
        return bool(done)

    async def _expire_due(self, now: datetime) -> int:
        await self._ready()
        at = format_number(to_micros(now))
        query = f"{tag_query('status', MemoryStatus.PENDING.value)} @expires_at:[-inf {at}]"
        reason = json.dumps(EXPIRED_REASON)
        count = 0
        while True:
            args = [self.index_name, query, "NOCONTENT", "LIMIT", "0", "500", "DIALECT", "2"]
            with translate_errors("expiring memories"):
                reply = await self._search_script(keys=[], args=args)
                keys = [as_text(k) for k in reply[1:]]
                for k in keys:
                    count += int(await self._expire_script(keys=[k], args=[to_micros(now), reason]))
            if len(keys) < 500:
                return count

    async def _read_state(self, namespace: str, key: str) -> StateEntry | None:
        entry = self._state_keys(namespace, key)[0]
        with translate_errors("reading state"):
            value, version, updated = await self.client.hmget(
                entry, ["value", "version", "updated_at"]
            )
        if version is None:
            return None
        return state_entry(namespace, key, value, version, updated)

    async def _write_state(
        self, namespace: str, key: str, value: str, expected: int | None, now: datetime
    ) -> StateEntry | None:
        args: list[str | int] = [
            key,
            value,
            "" if expected is None else str(expected),
            to_micros(now),
        ]
        with translate_errors("writing state"):
            version = await self._write_state_script(
                keys=self._state_keys(namespace, key), args=args
            )
        if version is None:
            return None
        return StateEntry(
            namespace=namespace, key=key, value=value, version=int(version), updated_at=now
        )

    async def _delete_state(self, namespace: str, key: str, expected: int | None) -> bool:
        args = [key, "" if expected is None else str(expected)]
        with translate_errors("deleting state"):
            done = await self._delete_state_script(keys=self._state_keys(namespace, key), args=args)
        return bool(done)

    async def _list_state(self, namespace: str, after: str | None, limit: int) -> list[StateEntry]:
        start = "-" if after is None else "(" + after
        prefix = self._state_keys(namespace, "")[0]
        with translate_errors("listing state"):
            flat = await self._list_state_script(
                keys=[self._state_keys(namespace, "")[1]], args=[start, limit, prefix]
            )
        return [
            state_entry(namespace, as_text(flat[i]), *flat[i + 1 : i + 4])
            for i in range(0, len(flat), 4)
        ]
