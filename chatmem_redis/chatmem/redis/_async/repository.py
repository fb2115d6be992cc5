"""``AsyncRedisChatMemoryRepository``: I/O only. Storage shape in ``_schema``, scripts in
``_scripts``, queries in ``_search``; on redis-py's ``redis.asyncio`` client.

Every write is one Lua script call (one round trip, atomic): append with a server-assigned
position and optional trim, replace, delete. Every read is one plain ZRANGE of the
conversation's log (see ``_schema``). The window edit that adds a system message reads under
WATCH and writes in MULTI/EXEC, retried on conflict.
"""

from __future__ import annotations

from chatmem.core.backend import require

require("redis", "redis")

from collections.abc import Callable, Sequence  # noqa: E402
from datetime import datetime, timedelta  # noqa: E402
from typing import Any  # noqa: E402

# both twins' clients have one API; scripts/unasync.py swaps the module (its NAMES table)
import redis.asyncio  # noqa: E402
import redis.asyncio.cluster  # noqa: E402
from chatmem.core import Message, MessageType, SchemaMode  # noqa: E402
from chatmem.core.backend import (  # noqa: E402
    AsyncBaseChatMemoryRepository,
    AsyncOwnedClientMixin,
    AsyncSchemaCheck,
    Capability,
    ConversationIdPage,
    InvalidArgumentError,
    SchemaError,
    WindowEdit,
    async_owning,
    async_retry,
    remembered,
    validate_positive_int,
)
from redis.exceptions import NoScriptError, WatchError  # noqa: E402

from .. import _scripts  # noqa: E402
from .._cluster import (  # noqa: E402
    CLUSTER_SCHEMES,
    SLOTS,
    decode_cursor,
    encode_cursor,
    slot_tags,
    split_cluster_url,
)
from .._codec import EntryCache, document_body, in_order, log_entry  # noqa: E402
from .._config import (  # noqa: E402
    DEFAULT_ASYNC_MAX_CONNECTIONS,
    DEFAULT_INDEX_NAME,
    DEFAULT_INITIALIZE_SCHEMA,
    DEFAULT_KEY_PREFIX,
    DEFAULT_SEARCH_LIMIT,
    MetadataField,
    RedisConfig,
    client_options,
)
from .._errors import MISSING_INDEX, translate_errors  # noqa: E402
from .._schema import (  # noqa: E402
    ConversationKeys,
    Layout,
    conversation_tag,
    index_attributes,
    index_create_args,
)
from .._search import (  # noqa: E402
    MessageWithConversation,
    Search,
    by_content,
    by_metadata,
    by_time_range,
    by_type,
    in_conversation,
    parse_reply,
    search_args,
)

ASYNC = True


class _Script:
    """A Lua script run by EVALSHA, loaded on NOSCRIPT (works on clients and pipelines)."""

    def __init__(self, source: str) -> None:
        import hashlib

        self.source = source
        self.sha = hashlib.sha1(source.encode("utf-8")).hexdigest()  # Redis names scripts by SHA-1

    async def __call__(self, client: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return await client.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:
            await client.script_load(self.source)
            return await client.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)


_APPEND = _Script(_scripts.APPEND)
_SAVE_ALL = _Script(_scripts.SAVE_ALL)
_DELETE = _Script(_scripts.DELETE)
_IDS_PAGE = _Script(_scripts.IDS_PAGE)
_SEARCH = _Script(_scripts.SEARCH)
_SEARCH_MESSAGES = _Script(_scripts.SEARCH_MESSAGES)
_FLUSH = _Script(_scripts.FLUSH)

_FLUSH_BATCH = 1000
"""Pending index documents one ``FLUSH`` writes at most (a few ms of the server's time)."""


_SYSTEM_BUDGET = 1
"""System messages a read expects at most (one prompt): one ``ZRANGE`` reads them all."""


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _command_text(*args: str) -> str:
    """A command as redis-cli reads it (arguments with spaces or quotes are quoted)."""
    import shlex

    return " ".join(shlex.quote(a) for a in args)


def _single_node_client(url: str) -> redis.asyncio.Redis:
    """The client ``from_url`` makes for one server."""
    if ASYNC:
        # A bounded pool: an unbounded one opens a connection per task when many start
        # at once, and the loop then runs every handshake in one go (100 tasks stalled it
        # for half a second); here tasks past the bound wait, on the loop, for a free one.
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url, max_connections=DEFAULT_ASYNC_MAX_CONNECTIONS, **client_options()
        )
        client = redis.asyncio.Redis(connection_pool=pool)
        client.auto_close_connection_pool = True  # aclose() disconnects the pool too
        return client
    return redis.Redis.from_url(url, **client_options())


class AsyncRedisChatMemoryRepository(AsyncOwnedClientMixin, AsyncBaseChatMemoryRepository):
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
        client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster,
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
        self._cluster = isinstance(client, redis.asyncio.cluster.RedisCluster)
        self._layout = Layout(key_prefix, cluster=self._cluster)
        self._fields = self.config.metadata_fields
        self._decoded = EntryCache()
        self._schema_check = AsyncSchemaCheck(self._missing_index, "Redis")
        if self.config.initialize_schema == "always":
            if ASYNC:
                self._init_pending = True  # the first call runs _initialize
            else:
                self.create_schema()

    @classmethod
    async def from_url(cls, url: str, **options: Any) -> AsyncRedisChatMemoryRepository:
        """A repository on a client made from ``url`` (closed by ``close``); the search index
        is created (``initialize_schema="always"``) before it returns."""
        client: Any
        if url.startswith(CLUSTER_SCHEMES):  # redis+cluster://host:port,host:port
            first, nodes = split_cluster_url(url)
            node: Any = redis.asyncio.cluster.ClusterNode  # the sync one is untyped
            client = redis.asyncio.cluster.RedisCluster.from_url(
                first, startup_nodes=[node(h, p) for h, p in nodes], **client_options()
            )
        else:
            client = _single_node_client(url)

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
    def client(self) -> redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster:
        return self._client

    # -- schema ---------------------------------------------------------------------
    def schema_statements(self) -> list[str]:
        """The ``FT.CREATE`` command ``create_schema`` runs, as redis-cli text."""
        return [_command_text("FT.CREATE", *index_create_args(self.config))]

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """The ``FT.CREATE`` command for ``options``, built without a connection."""
        schemes = ("redis://", "rediss://", "unix://", *CLUSTER_SCHEMES)
        if not isinstance(url, str) or not url.startswith(schemes):
            raise InvalidArgumentError("url", f"{url!r} is not a redis:// URL")
        fields = tuple(options.pop("metadata_fields", ()))
        config = RedisConfig(metadata_fields=fields, **options)
        return [_command_text("FT.CREATE", *index_create_args(config))]

    async def _missing_index(self) -> list[str]:
        with translate_errors("checking the search index"):
            names = await self._index_names()
            return [f"search index {n}" for n in names if await self._index_info(n) is None]

    async def create_schema(self) -> None:
        """Create the search index if missing (race-safe); check an existing one has every
        attribute this configuration queries. On a cluster: one index per master."""
        with translate_errors("creating the search index"):
            names = await self._index_names()
        for name in names:
            await self._create_index(name)
        self._schema_check.passed()

    async def _index_names(self) -> list[str]:
        """The index of each master: on one node, ``index_name``; on a cluster, where the
        search module here has no coordinator (an index name is a key of one slot, and an
        index covers the keys of its own node only), ``<index_name>{t}`` per master, ``t``
        the tag of that master's lowest slot, so the name routes to that master."""
        if not self._cluster:
            return [self.config.index_name]
        client: Any = self._client
        if ASYNC:
            await client.initialize()  # the asyncio client reads the topology lazily
        lowest: dict[str, int] = {}
        slots = client.nodes_manager.slots_cache
        for slot in range(SLOTS):
            nodes = slots.get(slot)
            if not nodes:
                raise SchemaError(f"cluster slot {slot} is served by no master")
            lowest.setdefault(nodes[0].name, slot)
        tags = slot_tags()
        return [f"{self.config.index_name}{{{tags[s]}}}" for s in sorted(lowest.values())]

    def _route(self, name: str) -> list[str]:
        """``KEYS`` of a script on index ``name``: the name itself on a cluster (it routes
        the call to the master holding that index), none on one node."""
        return [name] if self._cluster else []

    async def _create_index(self, name: str) -> None:
        # FT.INFO first: an existing index costs one round trip and no FT.CREATE.
        with translate_errors("creating the search index"):
            info = await self._index_info(name)
            if info is None:
                try:
                    client: Any = self._client
                    args = index_create_args(self.config)
                    args[0] = name
                    if self._cluster:
                        node = client.get_node_from_key(name)
                        await client.execute_command("FT.CREATE", *args, target_nodes=node)
                    else:
                        await client.execute_command("FT.CREATE", *args)
                    return
                except redis.ResponseError as exc:
                    if "already exists" not in str(exc).lower():
                        raise
                info = await self._index_info(name)  # a concurrent creator won: check it
            if info is None:
                raise SchemaError(f"index {name!r} vanished while created")
        attributes = set()
        for i in range(0, len(info) - 1, 2):
            if _text(info[i]) == "attributes":
                for attr in info[i + 1]:
                    pairs = [_text(x) if isinstance(x, (bytes, str)) else x for x in attr]
                    attributes.add(pairs[pairs.index("attribute") + 1])
        missing = index_attributes(self.config) - attributes
        if missing:
            raise SchemaError(
                f"index {name!r} exists without {sorted(missing)}; "
                "drop it (FT.DROPINDEX) or use another index_name"
            )

    async def _index_info(self, name: str) -> Any:
        """``FT.INFO`` of index ``name``, or None when it does not exist."""
        try:
            return await _SEARCH(self._client, self._route(name), ["INFO", name])
        except redis.ResponseError as exc:
            if any(m in str(exc).lower() for m in MISSING_INDEX):
                return None
            raise

    # -- hooks ----------------------------------------------------------------------
    async def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        if self._cluster:
            return await self._cluster_ids_page(limit, after)
        layout = self._layout
        with translate_errors("listing conversations"):
            reply = await _IDS_PAGE(
                self._client, [layout.ids], [after or "", limit, layout.conversation_prefix]
            )
        ids = [_text(x) for x in reply[1:]]
        return ConversationIdPage(ids, ids[-1] if int(reply[0]) and ids else None)

    async def _cluster_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        """A page of the cluster's per-slot id indexes, walked slot by slot, each in id
        order: ``ZRANGE BYLEX`` of a span of slots in one pipeline (the span doubles while
        slots are empty, so an empty store costs a few dozen round trips), then one
        ``EXISTS`` per candidate (an expired conversation's id is pruned, as on one node)."""
        slot, last = decode_cursor(after)
        layout, client = self._layout, self._client
        found: list[tuple[int, str]] = []
        width = 64
        with translate_errors("listing conversations"):
            while slot < SLOTS and len(found) <= limit:
                need = limit + 1 - len(found)
                span = range(slot, min(slot + width, SLOTS))
                pipe = client.pipeline(transaction=False)
                for s in span:
                    low = "(" + last if s == slot and last else "-"
                    pipe.zrange(layout.slot_ids(s), low, "+", bylex=True, offset=0, num=need)
                batches = [[_text(x) for x in b] for b in await pipe.execute()]
                live = await self._live([cid for b in batches for cid in b])
                next_slot, next_last = span[-1] + 1, ""
                for s, batch in zip(span, batches, strict=True):
                    found += [(s, cid) for cid in batch if live[cid]]
                    if len(found) > limit:
                        break
                    if len(batch) == need:  # this slot may hold more: go on from its last
                        next_slot, next_last = s, batch[-1]
                        break
                slot, last = next_slot, next_last
                width = min(width * 2, 4096) if not found else 64
        ids = [cid for _, cid in found[:limit]]
        more = len(found) > limit
        return ConversationIdPage(ids, encode_cursor(*found[limit - 1]) if more else None)

    async def _live(self, ids: list[str]) -> dict[str, bool]:
        """Which of these conversations exist (their ``seq`` key); the others' ids are
        removed from their slot's index, as the single-node listing script does."""
        if not ids:
            return {}
        pipe = self._client.pipeline(transaction=False)
        keys = [self._layout.conversation(cid) for cid in ids]
        for k in keys:
            pipe.exists(k.seq)
        live = {cid: bool(n) for cid, n in zip(ids, await pipe.execute(), strict=True)}
        dead = [(cid, k) for cid, k in zip(ids, keys, strict=True) if not live[cid]]
        if dead:
            pipe = self._client.pipeline(transaction=False)
            for cid, k in dead:
                pipe.zrem(k.ids, cid)
            await pipe.execute()
        return live

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
        so a tail of ``others + budget`` holds them all when there are at most ``budget``;
        when there are more, the read is made again with a larger budget (rare: a window
        keeps the system messages of one add)."""
        budget = _SYSTEM_BUDGET
        while True:
            want = -1 if others < 0 else others + budget
            entries = await client.zrange(keys.log, 0 if want < 0 else -want, -1)
            messages = self._decoded.parse_entries(entries)
            systems = sum(1 for m in messages if m.message_type is MessageType.SYSTEM)
            if want < 0 or len(entries) < want or systems <= budget:
                return in_order(messages, systems, others)
            budget = 2 * systems

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

    def _pairs(self, cid: str, messages: Sequence[Message]) -> list[str]:
        """The ``(kind, document body, log entry)`` triples the write scripts take."""
        tag = conversation_tag(cid)
        fields = self._fields
        out: list[str] = []
        for m in messages:
            out += (
                "S" if m.message_type is MessageType.SYSTEM else "M",
                document_body(cid, tag, m, fields),
                log_entry(m),
            )
        return out

    def _head(self, keys: ConversationKeys, cid: str) -> list[Any]:
        # on one node the documents wait for the next search (see _scripts); a cluster,
        # whose searches run on every master, writes them at once
        return [keys.doc_prefix, cid, self.config.ttl_ms, "" if self._cluster else keys.tag]

    async def _save_all(self, cid: str, messages: list[Message]) -> None:
        keys = self._layout.conversation(cid)
        triples = self._pairs(cid, messages)
        args = self._head(keys, cid) + triples
        with translate_errors("saving a conversation"):
            first = await _SAVE_ALL(self._client, keys.script_keys, args)
        # what a window read returns next (the newest and the system messages); not a whole
        # import, which would only push the cache's other entries out
        entries, first = triples[2::3], int(first)
        for i in remembered(messages):
            self._decoded.remember_at(first + i, entries[i], messages[i])

    async def _delete(self, cid: str) -> None:
        keys = self._layout.conversation(cid)
        with translate_errors("deleting a conversation"):
            await _DELETE(self._client, keys.script_keys, self._head(keys, cid))

    async def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        keys = self._layout.conversation(cid)
        triples = self._pairs(cid, messages)
        args = [*self._head(keys, cid), trim_to or 0, *triples]
        with translate_errors("appending to a conversation"):
            first = await _APPEND(self._client, keys.script_keys, args)
        self._decoded.remember(int(first), triples[2::3], messages)

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
                        *self._head(keys, cid),
                        "" if below is None else below,
                        len(positions),
                        *positions,
                        *self._pairs(cid, edit.append),
                    ]
                    pipe.multi()
                    # EVAL, not EVALSHA: a NOSCRIPT inside EXEC could not be retried.
                    # (execute_command: a cluster pipeline refuses its eval() helper)
                    pipe.execute_command(
                        "EVAL", _scripts.EDIT, len(keys.script_keys), *keys.script_keys, *args
                    )
                    await pipe.execute()
                    return True
                except WatchError:
                    return None
                finally:
                    await pipe.reset()

        await async_retry(attempt, what="window edit")

    # -- advanced queries (AdvancedRedisChatMemoryRepository) ---------------------------
    async def index_pending(self) -> None:
        """Write the search documents that earlier writes left pending (each search does
        this first; call it before querying the index with other tools, e.g. redis-cli)."""
        with translate_errors("indexing pending messages"):
            await self._index_pending()

    async def _index_pending(self) -> None:
        if self._cluster:  # a cluster writes its documents at once
            return
        layout = self._layout
        args = [layout.conversation_prefix, layout.doc_prefix, _FLUSH_BATCH]
        while int(await _FLUSH(self._client, [layout.pending], args)):
            pass  # batch by batch: other clients' commands run in between

    async def _search(
        self, search: Search | None, conversation_id: str | None, limit: object
    ) -> list[MessageWithConversation]:
        n = validate_positive_int(limit, "limit")
        cid = None if conversation_id is None else self._cid(conversation_id)
        if search is None:
            return []
        search = in_conversation(search, cid)
        if self._init_pending:  # the queries are not base methods: run the deferred set-up
            await self._ensure_initialized()
        await self._schema_check()
        layout = self._layout
        reply: list[Any] = []
        with translate_errors("searching messages"):
            await self._index_pending()
            # on a cluster: every master's index, each oldest first, merged by parse_reply
            for name in await self._index_names():
                args = [
                    layout.doc_prefix,
                    layout.conversation_prefix,
                    *search_args(name, search.query, n),
                ]
                reply += await _SEARCH_MESSAGES(self._client, self._route(name), args)
        return parse_reply(reply, search.check)[:n]

    async def find_by_type(
        self,
        message_type: MessageType | str,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages of one kind, oldest first."""
        return await self._search(by_type(message_type), conversation_id, limit)

    async def find_by_content(
        self, text: str, *, conversation_id: str | None = None, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> list[MessageWithConversation]:
        """Messages whose content (text; a tool message's response data) holds every word
        of ``text``; punctuation only separates words."""
        return await self._search(by_content(text), conversation_id, limit)

    async def find_by_time_range(
        self,
        start: datetime | None,
        end: datetime | None,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages created in ``[start, end]`` (inclusive; None leaves that end open)."""
        return await self._search(by_time_range(start, end), conversation_id, limit)

    async def find_by_metadata(
        self,
        key: str,
        value: object,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages whose indexed metadata ``key`` matches ``value``: exact for tag fields,
        equal for numeric fields, every word for text fields."""
        field = self.config.metadata_field(key)
        return await self._search(by_metadata(field, value), conversation_id, limit)

    async def execute_query(
        self, query: str, *, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> list[MessageWithConversation]:
        """A RediSearch query (DIALECT 2) over this repository's index; read-only."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgumentError("query", "must be a non-empty str")
        return await self._search(Search(query), None, limit)
