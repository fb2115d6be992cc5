# Generated from chatmem_neo4j/chatmem/neo4j/_async/repository.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``Neo4jChatMemoryRepository``: I/O only; the graph shape and Cypher live in ``_schema``.

Each twin is on the neo4j driver's own API of its kind (blocking, or non-blocking), no other
package.

Every operation except the window edit is one auto-commit statement (one round trip), and
every statement that touches a conversation first takes the write lock of its session node
(see ``_schema``): writers serialise inside the server, nothing is lost, and readers see a
replace whole or not at all. The window edit (an add that carries a system message) reads
and writes in one managed transaction that holds the same lock from its first statement.
The non-blocking twin also queues the writers of one conversation inside one repository
object before they reach the server (its ``_one_writer`` says why). A window append whose
positions cross a multiple of ``TRIM_EVERY * window`` is followed by one trim statement.
Statements the server rejected before commit (deadlock, lock timeout, not a leader) are
re-run; a lost connection is reported, never blindly re-run.

Needs Neo4j 5.7 or later (sessions turn server notifications off so that plans on labels
not yet created do not log warnings); tested on 5.26 LTS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import neo4j
from chatmem.core import Message
from chatmem.core.backend import (
    BaseChatMemoryRepository,
    Capability,
    ConversationIdPage,
    DecodeCache,
    InvalidArgumentError,
    OwnedClientMixin,
    SchemaCheck,
    WindowEdit,
    owning,
    retry,
    split_layout,
)

from .._codec import message_params, messages_from_rows, shape_of
from .._config import Neo4jConfig, parse_url
from .._errors import hidden_by_rollback, rejected_before_commit, server_errors, translate_errors
from .._schema import TRIM_EVERY, TRIM_LIMIT, Schema
from .schema_ops import create_schema, schema_state

ATTEMPTS = 100
"""How often a statement the server rejected before commit (deadlock...) is re-run: 16
writers appending to one conversation deadlock often (each upgrades its lock on the session
node), and 30 tries ran out on 2 busy cores; pauses are jittered and capped at 1 s."""

T = TypeVar("T")


class Neo4jChatMemoryRepository(OwnedClientMixin, BaseChatMemoryRepository):
    """Chat memory as a graph: a session node per conversation, message nodes with an
    explicit position, and metadata, tool call, tool response and media nodes.

    Pass your ``neo4j.Driver`` (never closed by us) and keyword options (see
    ``Neo4jConfig``), or use ``from_url("neo4j://user:pass@host:7687", database=...)``.
    With ``initialize_schema="always"`` the schema is created by ``from_url`` before it
    returns; on a given driver, by the constructor of the blocking twin and by the first call
    of the non-blocking one (whose constructor does no I/O).
    """

    capabilities: ClassVar[frozenset[str]] = frozenset({Capability.LABELS})
    layouts: ClassVar[dict[str, Any]] = {}
    """The other layouts ``from_url(url, layout=...)`` builds, by name (``"spring-ai"``:
    ``SpringAiNeo4jChatMemoryRepository``, registered by its module)."""

    def __init__(self, driver: neo4j.Driver, **options: Any) -> None:
        if not isinstance(driver, neo4j.Driver):
            raise InvalidArgumentError(
                "driver", f"must be a neo4j.Driver, got {type(driver).__name__}"
            )
        self.config = Neo4jConfig.from_options(options)
        self._driver = driver
        self._bookmarks = neo4j.GraphDatabase.bookmark_manager()
        schema = self.schema = Schema.of(self.config)
        self._find_q = schema.find()
        self._find_last_q = schema.find_last()
        self._load_window_q = schema.load_window()
        self._lock_window_q = schema.load_window(create=True)
        self._ids_q = schema.find_ids_page()
        self._delete_q = schema.delete()
        self._trim_q = schema.trim()
        self._decoded = DecodeCache()  # window reads return mostly the last turn's rows
        self._schema_check = SchemaCheck(self._missing_schema, "the Neo4j database")
        if self.config.initialize_schema == "always":
            self.create_schema()

    @classmethod
    def from_url(
        cls, url: str, *, driver_options: dict[str, Any] | None = None, **options: Any
    ) -> Neo4jChatMemoryRepository:
        """Connect with ``neo4j://``, ``bolt://`` (``+s``/``+ssc``) URLs; credentials in the
        URL (percent-encoded) become basic auth. ``driver_options`` go to
        ``neo4j.GraphDatabase.driver`` (e.g. ``connection_timeout``,
        ``max_transaction_retry_time``). The schema is created (``"always"``) before this
        returns; ``close()`` closes this driver. ``layout="spring-ai"`` (or a
        ``layout=spring-ai`` URL query parameter) builds Spring AI's layout instead."""
        url, layout = split_layout(url, options)
        if layout != "chatmem":
            return cls.layouts[layout].from_url(  # type: ignore[no-any-return]
                url, driver_options=driver_options, **options
            )
        target = parse_url(url)
        auth = None
        if target.user is not None:
            auth = neo4j.basic_auth(target.user, target.password or "")
        Neo4jConfig.from_options(options)  # reject bad options before connecting
        if driver_options is not None and not isinstance(driver_options, dict):
            raise InvalidArgumentError("driver_options", "must be a dict of driver settings")
        driver = neo4j.GraphDatabase.driver(target.uri, auth=auth, **(driver_options or {}))

        def build() -> Neo4jChatMemoryRepository:
            return cls(driver, **options)

        repo = owning(driver, driver.close, build)
        repo._schema_check.url_hint = url  # for the "never" mode's SchemaError message
        return repo

    # -- schema -------------------------------------------------------------------------
    def schema_statements(self) -> list[str]:
        """The DDL ``create_schema`` runs, for teams that manage schema themselves."""
        return self.schema.ddl()

    @classmethod
    def schema_statements_for_url(cls, url: str, **options: Any) -> list[str]:
        """The DDL for ``url`` and label ``options``, built without a connection (Spring AI's
        for ``layout="spring-ai"``)."""
        url, layout = split_layout(url, options)
        if layout != "chatmem":
            return cls.layouts[layout].schema_statements_for_url(url, **options)  # type: ignore[no-any-return]
        parse_url(url)
        return Schema.of(Neo4jConfig.from_options(options)).ddl()

    def create_schema(self) -> None:
        """Create the constraint and index if missing and wait until they are online (see
        ``schema_ops``); when both are online already, one round trip and no DDL."""
        create_schema(self._session, self.schema, self._retry)
        self._schema_check.passed()

    def _initialize(self) -> None:
        self.create_schema()

    def _missing_schema(self) -> list[str]:
        """What the ``"never"`` mode's first-use check reports missing."""
        state = schema_state(self._session, self.schema)
        return [f"{kind} {name}" for kind, name, on in state if on is None]

    # -- hooks ----------------------------------------------------------------------------
    def _find_ids_page(self, limit: int, after: str | None) -> ConversationIdPage:
        params = {"after": after or "", "limit": limit + 1}
        rows = self._run(self._ids_q, params, "listing", neo4j.READ_ACCESS)
        # A session deleted while the listing ran can show up without its id: skip it.
        ids = [str(r["id"]) for r in rows if r["id"] is not None]
        if len(ids) > limit:
            return ConversationIdPage(ids[:limit], ids[limit - 1])
        return ConversationIdPage(ids, None)

    def _find(self, cid: str) -> list[Message]:
        return self._messages(self._find_q, {"cid": cid}, "find")

    def _find_last(self, cid: str, n: int) -> list[Message]:
        return self._messages(self._find_last_q, {"cid": cid, "n": n}, "find_last")

    def _load_window(self, cid: str, non_system_limit: int) -> list[Message]:
        params = {"cid": cid, "n": non_system_limit}
        return self._messages(self._load_window_q, params, "window read")

    def _save_all(self, cid: str, messages: list[Message]) -> None:
        batch = [message_params(m) for m in messages]
        params = {"cid": cid, "messages": batch}
        self._run(self.schema.save_all(shape_of(batch)), params, "save_all", writer=cid)

    def _delete(self, cid: str) -> None:
        self._run(self._delete_q, {"cid": cid}, "delete", writer=cid)

    def _append(self, cid: str, messages: list[Message], trim_to: int | None) -> None:
        batch = [message_params(m) for m in messages]
        statement = self.schema.append(shape_of(batch))
        params: dict[str, Any] = {"cid": cid, "messages": batch}
        records = self._run(statement, params, "append", writer=cid)
        self._trim_if_due(cid, records[0]["next_position"], len(batch), trim_to)

    def _trim_if_due(self, cid: str, end: int, added: int, trim_to: int | None) -> None:
        """Trim once an append crossed a multiple of ``TRIM_EVERY * trim_to`` positions."""
        if trim_to is None:
            return
        every = TRIM_EVERY * trim_to
        if end // every > (end - added) // every:
            params = {"cid": cid, "trim_to": trim_to, "trim_limit": TRIM_LIMIT * trim_to}
            self._run(self._trim_q, params, "trim", writer=cid)

    def _append_and_load_window(
        self, cid: str, messages: list[Message], trim_to: int | None, non_system_limit: int
    ) -> list[Message]:
        """One statement: the append, then the window read (a trim that falls due is a
        second statement; it removes only messages older than the window)."""
        batch = [message_params(m) for m in messages]
        statement = self.schema.append_and_load_window(shape_of(batch))
        params: dict[str, Any] = {"cid": cid, "messages": batch, "n": non_system_limit}
        records = self._run(statement, params, "append", writer=cid)
        self._trim_if_due(cid, records[0]["next_position"], len(batch), trim_to)
        return messages_from_rows(records[0]["rows"], self._decoded)

    def _edit_window(
        self, cid: str, non_system_limit: int, plan: Callable[[list[Message]], WindowEdit]
    ) -> None:
        def work(tx: neo4j.ManagedTransaction) -> None:
            result = tx.run(self._lock_window_q, {"cid": cid, "n": non_system_limit})
            record = result.single()
            edit = plan(messages_from_rows(record["rows"], self._decoded) if record else [])
            below = edit.delete_non_system_below
            if not (edit.append or edit.delete_positions or below is not None):
                return
            batch = [message_params(m) for m in edit.append]
            result = tx.run(
                self.schema.edit_window(shape_of(batch)),
                {
                    "cid": cid,
                    "delete_positions": sorted(edit.delete_positions),
                    "below": below,
                    "messages": batch,
                },
            )
            result.consume()

        def edit() -> bool:  # a deadlock hidden by the driver's rollback: retried too
            with self._session(neo4j.WRITE_ACCESS) as session, server_errors():
                session.execute_write(work)
            return True

        self._schema_check()
        with translate_errors("window edit"):
            self._retry(edit, hidden_by_rollback)

    # -- I/O helpers -----------------------------------------------------------------------
    def _session(self, mode: str) -> neo4j.Session:
        return self._driver.session(
            database=self.config.database,
            default_access_mode=mode,
            bookmark_manager=self._bookmarks,
            notifications_min_severity="OFF",  # plans are known; no per-query warnings
        )

    def _retry(
        self,
        fn: Callable[[], T],
        retry_on: Callable[[Exception], bool] = rejected_before_commit,
    ) -> T:
        """Re-run ``fn`` while ``retry_on`` says the server rejected it before commit
        (deadlock, lock timeout); jittered, so deadlocked writers do not retry in lockstep
        and deadlock again (16 writers on one conversation ran out of tries with a fixed
        0.2 s cap)."""
        return retry(
            fn,
            attempts=ATTEMPTS,
            what="a Neo4j statement",
            base_sleep=0.002,
            max_sleep=1.0,
            retry_on=retry_on,
        )

    def _run(
        self,
        query: str,
        params: dict[str, Any],
        what: str,
        mode: str = neo4j.WRITE_ACCESS,
        writer: str | None = None,
    ) -> list[neo4j.Record]:
        """One auto-commit statement (one round trip). Conversation reads are writes too:
        they lock their session node (see ``_schema``). ``writer`` names the conversation a
        write changes (only the non-blocking twin uses it: it queues its writers, see the
        module docstring)."""
        self._schema_check()

        def run() -> list[neo4j.Record]:
            with self._session(mode) as session:
                return [record for record in session.run(query, params)]

        with translate_errors(what):
            return self._retry(run)

    def _messages(self, query: str, params: dict[str, Any], what: str) -> list[Message]:
        records = self._run(query, params, what)  # one record, or none for an unknown id
        return messages_from_rows(records[0]["rows"], self._decoded) if records else []
