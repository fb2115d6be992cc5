# Generated from chatmem_redis/chatmem/redis/_async_repository.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``RedisChatMemoryRepository``: I/O only. Storage shape in ``_schema``, scripts in
``_scripts``, queries in ``_search``. Written once, as async code on the asyncio client;
the sync twin, on the blocking client, is generated from it by ``scripts/unasync.py``.

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

# the blocking client has the same API as the asyncio one (the sync twin drops the awaits)
import redis  # noqa: E402
from chatmem.core import Message, MessageType, SchemaMode  # noqa: E402
from chatmem.core.backend import (  # noqa: E402
    BaseChatMemoryRepository,
    Capability,
    ConversationIdPage,
    InvalidArgumentError,
    OwnedClientMixin,
    SchemaCheck,
    SchemaError,
    WindowEdit,
    owning,
    retry,
    validate_positive_int,
)
from redis.exceptions import NoScriptError, WatchError  # noqa: E402

from . import _scripts  # noqa: E402
from ._codec import EntryCache, document_body, in_order, log_entry  # noqa: E402
from ._config import (  # noqa: E402
    DEFAULT_INDEX_NAME,
    DEFAULT_INITIALIZE_SCHEMA,
    DEFAULT_KEY_PREFIX,
    DEFAULT_SEARCH_LIMIT,
    MetadataField,
    RedisConfig,
    client_options,
)
from ._errors import MISSING_INDEX, translate_errors  # noqa: E402
from ._schema import (  # noqa: E402
    ConversationKeys,
    Layout,
    conversation_tag,
    index_attributes,
    index_create_args,
)
from ._search import (  # noqa: E402
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


class _Script:
    """A Lua script run by EVALSHA, loaded on NOSCRIPT (works on clients and pipelines)."""

    def __init__(self, source: str) -> None:
        import hashlib

        self.source = source
        self.sha = hashlib.sha1(source.encode("utf-8")).hexdigest()  # Redis names scripts by SHA-1

    def __call__(self, client: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return client.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:
            client.script_load(self.source)
            return client.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)


_APPEND = _Script(_scripts.APPEND)
_SAVE_ALL = _Script(_scripts.SAVE_ALL)
_DELETE = _Script(_scripts.DELETE)
_IDS_PAGE = _Script(_scripts.IDS_PAGE)
_SEARCH = _Script(_scripts.SEARCH)
_SEARCH_MESSAGES = _Script(_scripts.SEARCH_MESSAGES)
_MIGRATE = _Script(_scripts.MIGRATE)


_SYSTEM_BUDGET = 1
"""System messages a read expects at most (one prompt): one ``ZRANGE`` reads them all."""


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _command_text(*args: str) -> str:
    """A command as redis-cli reads it (arguments with spaces or quotes are quoted)."""
    import shlex

    return " ".join(shlex.quote(a) for a in args)


class RedisChatMemoryRepository(OwnedClientMixin, BaseChatMemoryRepository):
    """Chat memory in Redis with RedisJSON documents indexed by RediSearch.

    Pass a ``redis.Redis`` client (never closed here) or use ``from_url``. Options are
    those of ``RedisConfig``. With ``initialize_schema="always"`` (the default) the search index
    is created if missing: by ``from_url`` before it returns; on a given client, by the
    constructor of the sync twin and by the first call of the async one (whose constructor
    cannot do I/O). History reads and writes never need the index, only the advanced queries.
    """

    capabilities = frozenset({Capability.TTL, Capability.SEARCH})

    def __init__(
        self,
        client: redis.Redis,
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
        self._layout = Layout(key_prefix)
        self._fields = self.config.metadata_fields
        self._decoded = EntryCache()
        self._schema_check = SchemaCheck(self._missing_index, "Redis")
        if self.config.initialize_schema == "always":
            self.create_schema()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisChatMemoryRepository:
        """A repository on a client made from ``url`` (closed by ``close``); the search index
        is created (``initialize_schema="always"``) before it returns."""
        client = redis.Redis.from_url(url, **client_options())

        def build() -> RedisChatMemoryRepository:
            repo = cls(client, **options)
            return repo

        repo = owning(client, client.close, build)
        repo._schema_check.url_hint = url  # for the "never" mode's SchemaError message
        return repo

    def _initialize(self) -> None:
        self.create_schema()

    @property
    def client(self) -> redis.Redis:
        return self._client

    # -- schema ---------------------------------------------------------------------
    def schema_statements(self) -> list[str]:
        """The ``FT.CREATE`` command ``create_schema`` runs, as redis-cli text."""
        return [_command_text("FT.CREATE", *index_create_args(self.config))]

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """The ``FT.CREATE`` command for ``options``, built without a connection."""
        if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
            raise InvalidArgumentError("url", f"{url!r} is not a redis:// URL")
        fields = tuple(options.pop("metadata_fields", ()))
        config = RedisConfig(metadata_fields=fields, **options)
        return [_command_text("FT.CREATE", *index_create_args(config))]

    def _missing_index(self) -> list[str]:
        with translate_errors("checking the search index"):
            found = self._index_info() is not None
        return [] if found else [f"search index {self.config.index_name}"]

    def create_schema(self) -> None:
        """Create the search index if missing (race-safe); check an existing one has every
        attribute this configuration queries."""
        self._create_index()
        self._schema_check.passed()

    def _create_index(self) -> None:
        # FT.INFO first: an existing index costs one round trip and no FT.CREATE.
        with translate_errors("creating the search index"):
            info = self._index_info()
            if info is None:
                try:
                    client: Any = self._client
                    client.execute_command("FT.CREATE", *index_create_args(self.config))
                    return
                except redis.ResponseError as exc:
                    if "already exists" not in str(exc).lower():
                        raise
                info = self._index_info()  # a concurrent creator won: check its index
            if info is None:
                raise SchemaError(f"index {self.config.index_name!r} vanished while created")
        attributes = set()
        for i in range(0, len(info) - 1, 2):
            if _text(info[i]) == "attributes":
                for attr in info[i + 1]:
                    pairs = [_text(x) if isinstance(x, (bytes, str)) else x for x in attr]
                    attributes.add(pairs[pairs.index("attribute") + 1])
        missing = index_attributes(self.config) - attributes
        if missing:
            raise SchemaError(
                f"index {self.config.index_name!r} exists without {sorted(missing)}; "
                "drop it (FT.DROPINDEX) or use another index_name"
            )

    def _index_info(self) -> Any:
        """``FT.INFO`` of this repository's index, or None when it does not exist."""
        try:
            return _SEARCH(self._client, [], ["INFO", self.config.index_name])
        except redis.ResponseError as exc:
            if any(m in str(exc).lower() for m in MISSING_INDEX):
                return None
            raise

    # -- hooks ----------------------------------------------------------------------
    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        layout = self._layout
        with translate_errors("listing conversations"):
            reply = _IDS_PAGE(
                self._client, [layout.ids], [after or "", limit, layout.conversation_prefix]
            )
        ids = [_text(x) for x in reply[1:]]
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
        so a tail of ``others + budget`` holds them all when there are at most ``budget``;
        when there are more, the read is made again with a larger budget (rare: a window
        keeps the system messages of one add). No log at all may be a conversation still in
        the two-set layout: ``MIGRATE`` moves it (atomically) and the read is made again."""
        budget = _SYSTEM_BUDGET
        migrated = False
        while True:
            want = -1 if others < 0 else others + budget
            entries = client.zrange(keys.log, 0 if want < 0 else -want, -1)
            if not entries and not migrated:
                migrated = True
                if int(_MIGRATE(client, keys.migrate_keys, [keys.doc_prefix])):
                    continue
            messages = self._decoded.parse_entries(entries)
            systems = sum(1 for m in messages if m.message_type is MessageType.SYSTEM)
            if want < 0 or len(entries) < want or systems <= budget:
                return in_order(messages, systems, others)
            budget = 2 * systems

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
        return [keys.doc_prefix, cid, self.config.ttl_ms]

    def _save_all(self, cid: str, messages: list[Message]) -> None:
        keys = self._layout.conversation(cid)
        args = self._head(keys, cid) + self._pairs(cid, messages)
        with translate_errors("saving a conversation"):
            _SAVE_ALL(self._client, keys.script_keys, args)

    def _delete(self, cid: str) -> None:
        keys = self._layout.conversation(cid)
        with translate_errors("deleting a conversation"):
            _DELETE(self._client, keys.script_keys, self._head(keys, cid))

    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        keys = self._layout.conversation(cid)
        triples = self._pairs(cid, messages)
        args = [*self._head(keys, cid), trim_to or 0, *triples]
        with translate_errors("appending to a conversation"):
            first = _APPEND(self._client, keys.script_keys, args)
        self._decoded.remember(int(first), triples[2::3], messages)

    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        keys = self._layout.conversation(cid)

        def attempt() -> bool | None:
            client: Any = self._client
            # the pipeline holds one connection from WATCH to EXEC; reset() returns it
            # (unwatched) to the pool however the attempt ends, cancellation included
            with translate_errors("editing a conversation window"):
                pipe = client.pipeline()
                try:
                    pipe.watch(keys.seq, keys.log)
                    # watching, the pipeline runs commands at once (a migration it runs
                    # touches the watched log: EXEC then fails and the retry reads it)
                    edit = plan(self._tail(pipe, keys, non_system_limit))
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
                    pipe.eval(_scripts.EDIT, len(keys.script_keys), *keys.script_keys, *args)
                    pipe.execute()
                    return True
                except WatchError:
                    return None
                finally:
                    pipe.reset()

        retry(attempt, what="window edit")

    # -- advanced queries (AdvancedRedisChatMemoryRepository) ---------------------------
    def _search(
        self, search: Search | None, conversation_id: str | None, limit: object
    ) -> list[MessageWithConversation]:
        n = validate_positive_int(limit, "limit")
        cid = None if conversation_id is None else self._cid(conversation_id)
        if search is None:
            return []
        search = in_conversation(search, cid)
        if self._init_pending:  # the queries are not base methods: run the deferred set-up
            self._ensure_initialized()
        self._schema_check()
        layout = self._layout
        args = [
            layout.doc_prefix,
            layout.conversation_prefix,
            *search_args(self.config.index_name, search.query, n),
        ]
        with translate_errors("searching messages"):
            reply = _SEARCH_MESSAGES(self._client, [], args)
        return parse_reply(reply, search.check)

    def find_by_type(
        self,
        message_type: MessageType | str,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages of one kind, oldest first."""
        return self._search(by_type(message_type), conversation_id, limit)

    def find_by_content(
        self, text: str, *, conversation_id: str | None = None, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> list[MessageWithConversation]:
        """Messages whose content (text; a tool message's response data) holds every word
        of ``text``; punctuation only separates words."""
        return self._search(by_content(text), conversation_id, limit)

    def find_by_time_range(
        self,
        start: datetime | None,
        end: datetime | None,
        *,
        conversation_id: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageWithConversation]:
        """Messages created in ``[start, end]`` (inclusive; None leaves that end open)."""
        return self._search(by_time_range(start, end), conversation_id, limit)

    def find_by_metadata(
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
        return self._search(by_metadata(field, value), conversation_id, limit)

    def execute_query(
        self, query: str, *, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> list[MessageWithConversation]:
        """A RediSearch query (DIALECT 2) over this repository's index; read-only."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgumentError("query", "must be a non-empty str")
        return self._search(Search(query), None, limit)
