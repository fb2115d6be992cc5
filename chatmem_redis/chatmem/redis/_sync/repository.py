# Generated from chatmem_redis/chatmem/redis/_async/repository.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``RedisChatMemoryRepository``: history reads and writes, on redis-py's
``redis`` client. Storage shape in ``_schema``, Lua in ``_plan``; the clients and a
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
    Capability,
    ConversationIdPage,
    InvalidArgumentError,
    OwnedClientMixin,
    SchemaCheck,
    WindowEdit,
    owning,
    remembered,
    retry,
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
from .schema_ops import SearchIndexes, schema_statements  # noqa: E402
from .search import SearchMixin  # noqa: E402

_SYSTEM_BUDGET = 1
"""System messages a read expects at least (one prompt), or as many as it last saw: one
``ZRANGE`` reads them all."""

_NO_TRIM = b"0"


class RedisChatMemoryRepository(OwnedClientMixin, SearchMixin):
    """Chat memory in Redis with RedisJSON documents indexed by RediSearch.

    Pass a ``redis.Redis`` or ``redis.cluster.RedisCluster`` client (never
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
        self._indexes = SearchIndexes(client, self.config, cluster=self._cluster)
        self._fields = self.config.metadata_fields
        self._decoded = EntryCache()
        self._ttl_ms = str(self.config.ttl_ms).encode()
        self._schema_check = SchemaCheck(self._indexes.missing, "Redis")
        if self.config.initialize_schema == "always":
            self.create_schema()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisChatMemoryRepository:
        """A repository on a client made from ``url`` (closed by ``close``); the search index
        is created (``initialize_schema="always"``) before it returns."""
        client = client_from_url(url)

        def build() -> RedisChatMemoryRepository:
            repo = cls(client, **options)
            return repo

        repo = owning(client, client.close, build)
        repo._schema_check.url_hint = url  # for the "never" mode's SchemaError message
        return repo

    def _initialize(self) -> None:
        self.create_schema()

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

    def create_schema(self) -> None:
        """Create the search index if missing (race-safe); check an existing one has every
        attribute this configuration queries. On a cluster: one index per master."""
        self._indexes.create_all()
        self._schema_check.passed()

    # -- hooks ----------------------------------------------------------------------
    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        layout = self._layout
        with translate_errors("listing conversations"):
            if self._cluster:
                return cluster_ids_page(self._client, layout, limit, after)
            reply = scripts.IDS_PAGE(
                self._client, [layout.ids], [after or "", limit, layout.conversation_prefix]
            )
        ids = [as_text(x) for x in reply[1:]]
        return ConversationIdPage(ids, ids[-1] if int(reply[0]) and ids else None)

    def find_conversation_ids(self) -> list[str]:
        """Every conversation id, or the first ``max_conversation_ids`` when that is set."""
        cap = self.config.max_conversation_ids
        if cap is None:
            return super().find_conversation_ids()
        ids: list[str] = []
        after: str | None = None
        while len(ids) < cap:  # pages of at most what is still wanted
            page = self.find_conversation_ids_page(limit=min(cap - len(ids), 1000), after=after)
            ids += page.ids
            if page.next_after is None:
                break
            after = page.next_after
        return ids[:cap]

    def _tail(self, client: Any, keys: ConversationKeys, others: int) -> list[Message]:
        """Every system message and the newest ``others`` other ones (-1: all), oldest
        first: one ``ZRANGE`` of the log's tail, atomic by itself. System messages sort last,
        so a tail of ``others + budget`` holds them all when there are at most ``budget``
        (the count this process last saw, at least ``_SYSTEM_BUDGET``); when there are more
        (another writer added some), the read is made again with a larger budget."""
        budget = max(keys.systems, _SYSTEM_BUDGET)
        while True:
            want = -1 if others < 0 else others + budget
            entries = client.execute_command("ZRANGE", keys.wire_log, 0 if want < 0 else -want, -1)
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

    def _find(self, cid: str) -> list[Message]:
        cap = self.config.max_messages_per_conversation
        if cap is not None:
            return self._find_last(cid, cap)
        with translate_errors("reading a conversation"):
            return self._tail(self._client, self._layout.conversation(cid), -1)

    def _find_last(self, cid: str, n: int) -> list[Message]:
        keys = self._layout.conversation(cid)
        with translate_errors("reading a conversation"):
            return (self._tail(self._client, keys, n))[-n:]

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        keys = self._layout.conversation(cid)
        with translate_errors("reading a conversation"):
            return self._tail(self._client, keys, non_system_limit)

    def _triples(self, keys: ConversationKeys, messages: Sequence[Message]) -> list[bytes]:
        return write_triples(keys.doc_head, messages, self._fields)

    def _head(self, keys: ConversationKeys) -> list[Any]:
        """The write scripts' first arguments (see ``_plan``)."""
        return [keys.wire_doc_prefix, keys.wire_cid, self._ttl_ms, keys.wire_defer]

    def _save_all(self, cid: str, messages: list[Message]) -> None:
        keys = self._layout.conversation(cid)
        triples = self._triples(keys, messages)
        with translate_errors("saving a conversation"):
            first = scripts.SAVE_ALL(self._client, keys.wire_keys, self._head(keys) + triples)
        keys.systems = sum(1 for m in messages if m.message_type is MessageType.SYSTEM)
        # what a window read returns next (the newest and the system messages); not a whole
        # import, which would only push the cache's other entries out
        entries, first = triples[2::3], int(first)
        for i in remembered(messages):
            self._decoded.remember_at(first + i, entries[i], messages[i])

    def _delete(self, cid: str) -> None:
        keys = self._layout.conversation(cid)
        with translate_errors("deleting a conversation"):
            scripts.DELETE(self._client, keys.wire_keys, self._head(keys))
        keys.systems = 0

    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        keys = self._layout.conversation(cid)
        triples = self._triples(keys, messages)
        args = [*self._head(keys), trim_to or _NO_TRIM, *triples]
        with translate_errors("appending to a conversation"):
            first = scripts.APPEND(self._client, keys.wire_keys, args)
        self._decoded.remember(int(first), triples[2::3], messages)

    def _append_and_load_window(
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
            first, entries = scripts.APPEND_AND_TAIL(self._client, keys.wire_keys, args)
            self._decoded.remember(int(first), triples[2::3], messages)
            window = self._window(keys, entries, want, budget, non_system_limit)
            if window is not None:
                return window
            return self._tail(self._client, keys, non_system_limit)

    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        keys = self._layout.conversation(cid)

        def attempt() -> bool | None:
            client: Any = self._client
            # the pipeline holds one connection from WATCH to EXEC; reset() returns it
            # (unwatched) to the pool however the attempt ends, cancellation included
            with translate_errors("editing a conversation window"):
                pipe = client.pipeline(transaction=True)
                try:
                    pipe.watch(keys.seq, keys.log)
                    # watching, the pipeline runs commands at once
                    edit = plan(self._tail(pipe, keys, non_system_limit))
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
                    pipe.execute()
                    return True
                except WatchError:
                    return None
                finally:
                    pipe.reset()

        retry(attempt, what="window edit")
