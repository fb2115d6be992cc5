"""``AsyncRedisChatMemoryRepository``: history reads and writes, on redis-py's
``redis.asyncio`` client. Storage shape in ``_schema``, Lua in ``_plan``; the clients and a
cluster's slot walks in ``clients``, the search index in ``schema_ops``, the advanced queries in
``search``.

Every write is one Lua script call (one round trip, atomic): append with a server-assigned
position and optional trim, replace, delete. Every read is one plain ZRANGE of the
conversation's log (see ``_schema``). The window edit that adds a system message reads under
WATCH and writes in MULTI/EXEC, retried on conflict.
"""

from __future__ import annotations

from chatmem.core.backend import require

require("redis", "redis")

from collections.abc import Callable, Sequence  # noqa: E402
from datetime import timedelta  # noqa: E402
from typing import Any  # noqa: E402

from chatmem.core import Message, MessageType, SchemaMode  # noqa: E402
from chatmem.core.backend import (  # noqa: E402
    AsyncOwnedClientMixin,
    AsyncSchemaCheck,
    Capability,
    ConversationIdPage,
    InvalidArgumentError,
    WindowEdit,
    async_owning,
    async_retry,
    remembered,
)
from redis.exceptions import WatchError  # noqa: E402

from .. import _plan  # noqa: E402
from .._codec import EntryCache, as_text, in_order, write_triples  # noqa: E402
from .._config import (  # noqa: E402
    DEFAULT_INDEX_NAME,
    DEFAULT_INITIALIZE_SCHEMA,
    DEFAULT_KEY_PREFIX,
    MetadataField,
    RedisConfig,
)
from .._errors import translate_errors  # noqa: E402
from .._native.cluster import CLUSTER_SCHEMES  # noqa: E402
from .._schema import ConversationKeys, Layout  # noqa: E402
from . import scripts  # noqa: E402
from .clients import Client, client_from_url, cluster_ids_page, is_cluster  # noqa: E402
from .schema_ops import AsyncSearchIndexes, schema_statements  # noqa: E402
from .search import AsyncSearchMixin  # noqa: E402

ASYNC = True

_SYSTEM_BUDGET = 1
"""System messages a read expects at least (one prompt), or as many as it last saw: one
``ZRANGE`` reads them all."""

_NO_TRIM = b"0"


class AsyncRedisChatMemoryRepository(AsyncOwnedClientMixin, AsyncSearchMixin):
    """Chat memory in Redis with RedisJSON documents indexed by RediSearch.

    Pass a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster`` client (never
    closed here) or use ``from_url`` (``redis://``, or ``redis+cluster://h:p,h:p``). Options are
    those of ``RedisConfig``. With ``initialize_schema="always"`` (the default) the search index
    is created if missing: by ``from_url`` before it returns; on a given client, by the
    constructor of the blocking twin and by the first call of the non-blocking one (whose
    constructor does no I/O). History reads and writes never need the index, only the
    advanced queries.
    """

    capabilities = frozenset({Capability.TTL, Capability.SEARCH})

    def __init__(
        self,
        client: Client,
        *,
        index_name: str = DEFAULT_INDEX_NAME,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        ttl: timedelta | None = None,
        initialize_schema: SchemaMode | bool = DEFAULT_INITIALIZE_SCHEMA,
        max_conversation_ids: int | None = None,
        max_messages_per_conversation: int | None = None,
        metadata_fields: Sequence[MetadataField] = (),
    ) -> None:
        self.config = RedisConfig(
            index_name=index_name,
            key_prefix=key_prefix,
            ttl=ttl,
            initialize_schema=initialize_schema,  # type: ignore[arg-type]  # bools normalised
            max_conversation_ids=max_conversation_ids,
            max_messages_per_conversation=max_messages_per_conversation,
            metadata_fields=tuple(metadata_fields),
        )
        self._client = client
        self._cluster = is_cluster(client)
        self._layout = Layout(key_prefix, cluster=self._cluster)
        self._indexes = AsyncSearchIndexes(client, self.config, cluster=self._cluster)
        self._fields = self.config.metadata_fields
        self._decoded = EntryCache()
        self._ttl_ms = str(self.config.ttl_ms).encode()
        self._schema_check = AsyncSchemaCheck(self._indexes.missing, "Redis")
        if self.config.initialize_schema == "always":
            if ASYNC:
                self._init_pending = True  # the first call runs _initialize
            else:
                self.create_schema()

    @classmethod
    async def from_url(cls, url: str, **options: Any) -> AsyncRedisChatMemoryRepository:
        """A repository on a client made from ``url`` (closed by ``close``); the search index
        is created (``initialize_schema="always"``) before it returns."""
        client = client_from_url(url)

        async def build() -> AsyncRedisChatMemoryRepository:
            repo = cls(client, **options)
            if ASYNC:
                await repo._ensure_initialized()  # creates the index while pending
            return repo

        repo = await async_owning(client, client.aclose, build)
        repo._schema_check.url_hint = url  # for the "never" mode's SchemaError message
        return repo

    async def _initialize(self) -> None:
        await self.create_schema()

    @property
    def client(self) -> Client:
        return self._client

    # -- schema ---------------------------------------------------------------------
    def schema_statements(self) -> list[str]:
        """The ``FT.CREATE`` command ``create_schema`` runs, as redis-cli text."""
        return schema_statements(self.config)

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """The ``FT.CREATE`` command for ``options``, built without a connection."""
        schemes = ("redis://", "rediss://", "unix://", *CLUSTER_SCHEMES)
        if not isinstance(url, str) or not url.startswith(schemes):
            raise InvalidArgumentError("url", f"{url!r} is not a redis:// URL")
        fields = tuple(options.pop("metadata_fields", ()))
        return schema_statements(RedisConfig(metadata_fields=fields, **options))

    async def create_schema(self) -> None:
        """Create the search index if missing (race-safe); check an existing one has every
        attribute this configuration queries. On a cluster: one index per master."""
        await self._indexes.create_all()
        self._schema_check.passed()

    # -- hooks ----------------------------------------------------------------------
    async def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        layout = self._layout
        with translate_errors("listing conversations"):
            if self._cluster:
                return await cluster_ids_page(self._client, layout, limit, after)
            reply = await scripts.IDS_PAGE(
                self._client, [layout.ids], [after or "", limit, layout.conversation_prefix]
            )
        ids = [as_text(x) for x in reply[1:]]
        return ConversationIdPage(ids, ids[-1] if int(reply[0]) and ids else None)

    async def find_conversation_ids(self) -> list[str]:
        """Every conversation id, or the first ``max_conversation_ids`` when that is set."""
        cap = self.config.max_conversation_ids
        if cap is None:
            return await super().find_conversation_ids()
        ids: list[str] = []
        after: str | None = None
        while len(ids) < cap:  # pages of at most what is still wanted
            page = await self.find_conversation_ids_page(
                limit=min(cap - len(ids), 1000), after=after
            )
            ids += page.ids
            if page.next_after is None:
                break
            after = page.next_after
        return ids[:cap]

    async def _tail(self, client: Any, keys: ConversationKeys, others: int) -> list[Message]:
        """Every system message and the newest ``others`` other ones (-1: all), oldest
        first: one ``ZRANGE`` of the log's tail, atomic by itself. System messages sort last,
        so a tail of ``others + budget`` holds them all when there are at most ``budget``
        (the count this process last saw, at least ``_SYSTEM_BUDGET``); when there are more
        (another writer added some), the read is made again with a larger budget."""
        budget = max(keys.systems, _SYSTEM_BUDGET)
        while True:
            want = -1 if others < 0 else others + budget
            entries = await client.execute_command(
                "ZRANGE", keys.wire_log, 0 if want < 0 else -want, -1
            )
            window = self._window(keys, entries, want, budget, others)
            if window is not None:
                return window
            budget = 2 * keys.systems

    def _window(
        self, keys: ConversationKeys, entries: list[bytes], want: int, budget: int, others: int
    ) -> list[Message] | None:
        """A log tail of ``want`` entries (-1: all) read with a system ``budget`` as
        ``_tail`` returns it, or None when it may miss system messages; notes their count."""
        messages = self._decoded.parse_entries(entries)
        systems = sum(1 for m in messages if m.message_type is MessageType.SYSTEM)
        keys.systems = systems
        if want < 0 or len(entries) < want or systems <= budget:
            return in_order(messages, systems, others)
        return None

    async def _find(self, cid: str) -> list[Message]:
        cap = self.config.max_messages_per_conversation
        if cap is not None:
            return await self._find_last(cid, cap)
        with translate_errors("reading a conversation"):
            return await self._tail(self._client, self._layout.conversation(cid), -1)

    async def _find_last(self, cid: str, n: int) -> list[Message]:
        keys = self._layout.conversation(cid)
        with translate_errors("reading a conversation"):
            return (await self._tail(self._client, keys, n))[-n:]

    async def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        keys = self._layout.conversation(cid)
        with translate_errors("reading a conversation"):
            return await self._tail(self._client, keys, non_system_limit)

    def _triples(self, keys: ConversationKeys, messages: Sequence[Message]) -> list[bytes]:
        return write_triples(keys.doc_head, messages, self._fields)

    def _head(self, keys: ConversationKeys) -> list[Any]:
        """The write scripts' first arguments (see ``_plan``)."""
        return [keys.wire_doc_prefix, keys.wire_cid, self._ttl_ms, keys.wire_defer]

    async def _save_all(self, cid: str, messages: list[Message]) -> None:
        keys = self._layout.conversation(cid)
        triples = self._triples(keys, messages)
        with translate_errors("saving a conversation"):
            first = await scripts.SAVE_ALL(self._client, keys.wire_keys, self._head(keys) + triples)
        keys.systems = sum(1 for m in messages if m.message_type is MessageType.SYSTEM)
        # what a window read returns next (the newest and the system messages); not a whole
        # import, which would only push the cache's other entries out
        entries, first = triples[2::3], int(first)
        for i in remembered(messages):
            self._decoded.remember_at(first + i, entries[i], messages[i])

    async def _delete(self, cid: str) -> None:
        keys = self._layout.conversation(cid)
        with translate_errors("deleting a conversation"):
            await scripts.DELETE(self._client, keys.wire_keys, self._head(keys))
        keys.systems = 0

    async def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        keys = self._layout.conversation(cid)
        triples = self._triples(keys, messages)
        args = [*self._head(keys), trim_to or _NO_TRIM, *triples]
        with translate_errors("appending to a conversation"):
            first = await scripts.APPEND(self._client, keys.wire_keys, args)
        self._decoded.remember(int(first), triples[2::3], messages)

    async def _append_and_load_window(
        self, cid: str, messages: list[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message]:
        """The append script returning the log's tail as ``_tail``'s first read takes it:
        one round trip (a second read only when the tail held more system messages than
        its budget, as in ``_tail``)."""
        keys = self._layout.conversation(cid)
        triples = self._triples(keys, messages)
        added = sum(1 for m in messages if m.message_type is MessageType.SYSTEM)
        budget = max(keys.systems + added, _SYSTEM_BUDGET)
        want = non_system_limit + budget
        args = [*self._head(keys), trim_to or _NO_TRIM, want, *triples]
        with translate_errors("appending to a conversation"):
            first, entries = await scripts.APPEND_AND_TAIL(self._client, keys.wire_keys, args)
            self._decoded.remember(int(first), triples[2::3], messages)
            window = self._window(keys, entries, want, budget, non_system_limit)
            if window is not None:
                return window
            return await self._tail(self._client, keys, non_system_limit)

    async def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        keys = self._layout.conversation(cid)

        async def attempt() -> bool | None:
            client: Any = self._client
            # the pipeline holds one connection from WATCH to EXEC; reset() returns it
            # (unwatched) to the pool however the attempt ends, cancellation included
            with translate_errors("editing a conversation window"):
                pipe = client.pipeline(transaction=True)
                try:
                    await pipe.watch(keys.seq, keys.log)
                    # watching, the pipeline runs commands at once
                    edit = plan(await self._tail(pipe, keys, non_system_limit))
                    below = edit.delete_non_system_below
                    positions = sorted(edit.delete_positions)
                    args = [
                        *self._head(keys),
                        "" if below is None else below,
                        len(positions),
                        *positions,
                        *self._triples(keys, edit.append),
                    ]
                    pipe.multi()
                    # EVAL, not EVALSHA: a NOSCRIPT inside EXEC could not be retried.
                    # (execute_command: a cluster pipeline refuses its eval() helper)
                    pipe.execute_command(
                        "EVAL", _plan.EDIT, len(keys.wire_keys), *keys.wire_keys, *args
                    )
                    await pipe.execute()
                    return True
                except WatchError:
                    return None
                finally:
                    await pipe.reset()

        await async_retry(attempt, what="window edit")
