"""Peer contenders: the chat histories users would otherwise pick, on the same servers.

A peer's turn is what an application does with it: add the user message, add the assistant
reply, read what it would feed the model. Peers run as configured by default, so most read the
whole history (msgs read per turn say so), except where the default reads less than the
bench's window: langchain-neo4j's ``window`` counts exchanges and defaults to 3 (7 messages),
so it gets ``WINDOW // 2`` exchanges, which its query reads as 21 messages, and does at least
the work chatmem does. Each peer is built lazily; a package that is
missing or a store that cannot work against the servers here becomes a ``NotRun`` with the
reason, which the results file keeps (never silently dropped). Installed by the ``bench``
nox session only, not by any extra.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks._workload import WINDOW
from chatmem.core import Message
from chatmem.testing.harness import ServerInfo, unique_suffix


@dataclass(frozen=True)
class NotRun:
    """A peer that could not be measured, and why."""

    name: str
    reason: str


class LangChainPeer:
    """A LangChain ``BaseChatMessageHistory`` made per conversation by ``factory(cid)``."""

    kind = "peer"

    def __init__(self, name: str, factory: Callable[[str], Any]) -> None:
        self.name = name
        self.factory = factory
        self.histories: dict[str, Any] = {}

    def _history(self, cid: str) -> Any:
        if cid not in self.histories:
            self.histories[cid] = self.factory(cid)
        return self.histories[cid]

    @staticmethod
    def _convert(m: Message) -> Any:
        from langchain_core.messages import AIMessage, HumanMessage

        cls = HumanMessage if m.message_type.value == "user" else AIMessage
        return cls(content=m.text, additional_kwargs=dict(m.metadata))

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        history = self._history(cid)
        history.clear()
        converted = [self._convert(m) for m in messages]
        for i in range(0, len(converted), 1000):
            history.add_messages(converted[i : i + 1000])

    def turn(self, cid: str, user: Message, reply: Message) -> Sequence[Any]:
        history = self._history(cid)
        history.add_messages([self._convert(user)])
        history.add_messages([self._convert(reply)])
        return history.messages  # type: ignore[no-any-return]

    def read_size(self, returned: Sequence[Any]) -> int:
        from langchain_core.messages import message_to_dict

        dump = json.dumps
        return sum(
            len(dump(message_to_dict(m), ensure_ascii=False, separators=(",", ":")).encode())
            for m in returned
        )

    def close(self) -> None:
        for history in self.histories.values():
            with contextlib.suppress(Exception):  # cleanup of a throwaway namespace
                history.clear()


class LlamaIndexPeer:
    """A LlamaIndex ``BaseChatStore``; the conversation id is its key."""

    kind = "peer"

    def __init__(self, name: str, store: Any) -> None:
        self.name = name
        self.store = store
        self.keys: list[str] = []

    @staticmethod
    def _convert(m: Message) -> Any:
        from llama_index.core.llms import ChatMessage, MessageRole

        role = MessageRole.USER if m.message_type.value == "user" else MessageRole.ASSISTANT
        return ChatMessage(role=role, content=m.text, additional_kwargs=dict(m.metadata))

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.keys.append(cid)
        self.store.set_messages(cid, [self._convert(m) for m in messages])

    def turn(self, cid: str, user: Message, reply: Message) -> Sequence[Any]:
        self.store.add_message(cid, self._convert(user))
        self.store.add_message(cid, self._convert(reply))
        return self.store.get_messages(cid)  # type: ignore[no-any-return]

    def read_size(self, returned: Sequence[Any]) -> int:
        return sum(len(m.model_dump_json().encode()) for m in returned)

    def close(self) -> None:
        for key in self.keys:
            with contextlib.suppress(Exception):  # cleanup of a throwaway namespace
                self.store.delete_messages(key)


# -- the peers of each backend ----------------------------------------------------------
def _sql_url(server: ServerInfo, driver: str) -> str:
    import sqlalchemy as sa

    assert server.url is not None
    return sa.make_url(server.url).set(drivername=driver).render_as_string(hide_password=False)


def _lc_community_sql(server: ServerInfo, driver: str) -> LangChainPeer:
    import sqlalchemy as sa
    from langchain_community.chat_message_histories import SQLChatMessageHistory

    engine = sa.create_engine(_sql_url(server, driver))
    table = f"lc_{unique_suffix()}"
    return LangChainPeer(
        "langchain-community SQLChatMessageHistory",
        lambda cid: SQLChatMessageHistory(cid, connection=engine, table_name=table),
    )


def _li_sqlite(server: ServerInfo) -> LlamaIndexPeer:
    from llama_index.storage.chat_store.sqlite import SQLiteChatStore

    assert server.url is not None
    path = server.url.removeprefix("sqlite:///")
    store = SQLiteChatStore.from_params(path, table_name=f"li_{unique_suffix()}")
    return LlamaIndexPeer("llama-index SQLiteChatStore", store)


def _lc_postgres(server: ServerInfo) -> LangChainPeer:
    import psycopg
    from langchain_postgres import PostgresChatMessageHistory

    conn = psycopg.connect(_sql_url(server, "postgresql"), autocommit=True)
    table = f"lcpg_{unique_suffix()}"
    PostgresChatMessageHistory.create_tables(conn, table)
    ids: dict[str, str] = {}  # it wants UUID session ids

    def make(cid: str) -> Any:
        sid = ids.setdefault(cid, str(uuid.uuid5(uuid.NAMESPACE_URL, cid)))
        return PostgresChatMessageHistory(table, sid, sync_connection=conn)

    return LangChainPeer("langchain-postgres PostgresChatMessageHistory", make)


def _li_postgres(server: ServerInfo) -> LlamaIndexPeer:
    from llama_index.storage.chat_store.postgres import PostgresChatStore

    store = PostgresChatStore.from_params(
        connection_string=_sql_url(server, "postgresql+psycopg"),
        async_connection_string=_sql_url(server, "postgresql+asyncpg"),
        table_name=f"li_{unique_suffix()}",
    )
    return LlamaIndexPeer("llama-index PostgresChatStore", store)


def _lc_community_redis(server: ServerInfo) -> LangChainPeer:
    from langchain_community.chat_message_histories import RedisChatMessageHistory

    prefix = f"lcc_{unique_suffix()}:"
    return LangChainPeer(
        "langchain-community RedisChatMessageHistory",
        lambda cid: RedisChatMessageHistory(cid, url=server.url or "", key_prefix=prefix),
    )


def _lc_redis(server: ServerInfo) -> LangChainPeer:
    from langchain_redis import RedisChatMessageHistory

    prefix = f"lcr_{unique_suffix()}:"
    return LangChainPeer(
        "langchain-redis RedisChatMessageHistory",
        lambda cid: RedisChatMessageHistory(
            cid, redis_url=server.url or "", key_prefix=prefix, index_name=f"{prefix}idx"
        ),
    )


def _li_redis(server: ServerInfo) -> LlamaIndexPeer:
    from llama_index.storage.chat_store.redis import RedisChatStore

    return LlamaIndexPeer("llama-index RedisChatStore", RedisChatStore(redis_url=server.url))


def _lc_community_mongo(server: ServerInfo) -> LangChainPeer:
    from langchain_community.chat_message_histories import MongoDBChatMessageHistory

    coll = f"lcc_{unique_suffix()}"
    return LangChainPeer(
        "langchain-community MongoDBChatMessageHistory",
        lambda cid: MongoDBChatMessageHistory(
            server.url or "", cid, database_name="bench", collection_name=coll
        ),
    )


def _lc_mongo(server: ServerInfo) -> LangChainPeer:
    from langchain_mongodb import MongoDBChatMessageHistory

    coll = f"lcm_{unique_suffix()}"
    return LangChainPeer(
        "langchain-mongodb MongoDBChatMessageHistory",
        lambda cid: MongoDBChatMessageHistory(
            server.url or "", cid, database_name="bench", collection_name=coll
        ),
    )


def _li_mongo(server: ServerInfo) -> LlamaIndexPeer:
    from llama_index.storage.chat_store.mongo import MongoChatStore

    store = MongoChatStore(
        mongo_uri=server.url or "", db_name="bench", collection_name=f"li_{unique_suffix()}"
    )
    return LlamaIndexPeer("llama-index MongoChatStore", store)


def _lc_community_cassandra(server: ServerInfo) -> LangChainPeer:
    from langchain_community.chat_message_histories import CassandraChatMessageHistory

    session, keyspace = server.extra["session"], server.extra["keyspace"]
    table = f"lc_{unique_suffix()}"
    return LangChainPeer(
        "langchain-community CassandraChatMessageHistory",
        lambda cid: CassandraChatMessageHistory(
            cid, session=session, keyspace=keyspace, table_name=table
        ),
    )


def _lc_neo4j(server: ServerInfo) -> LangChainPeer:
    from langchain_neo4j import Neo4jChatMessageHistory

    label = f"LcSession_{unique_suffix()}"
    return LangChainPeer(
        "langchain-neo4j Neo4jChatMessageHistory",
        lambda cid: Neo4jChatMessageHistory(
            cid,
            url=server.url,
            username="neo4j",
            password="neo4j",
            node_label=label,
            window=WINDOW // 2,  # exchanges of two messages: the bench's window
        ),
    )


def _lc_community_neo4j(server: ServerInfo) -> LangChainPeer:
    from langchain_community.chat_message_histories import Neo4jChatMessageHistory

    label = f"LccSession_{unique_suffix()}"
    return LangChainPeer(
        "langchain-community Neo4jChatMessageHistory",
        lambda cid: Neo4jChatMessageHistory(
            cid, url=server.url, username="neo4j", password="neo4j", node_label=label
        ),
    )


PEERS: dict[str, list[tuple[str, Callable[[ServerInfo], Any]]]] = {
    "memory": [],
    "sqlite": [
        (
            "langchain-community SQLChatMessageHistory",
            lambda s: _lc_community_sql(s, "sqlite"),
        ),
        ("llama-index SQLiteChatStore", _li_sqlite),
    ],
    "postgres": [
        (
            "langchain-community SQLChatMessageHistory",
            lambda s: _lc_community_sql(s, "postgresql+psycopg"),
        ),
        ("langchain-postgres PostgresChatMessageHistory", _lc_postgres),
        ("llama-index PostgresChatStore", _li_postgres),
    ],
    "mariadb": [
        (
            "langchain-community SQLChatMessageHistory",
            lambda s: _lc_community_sql(s, "mysql+pymysql"),
        ),
    ],
    "redis": [
        ("langchain-community RedisChatMessageHistory", _lc_community_redis),
        ("langchain-redis RedisChatMessageHistory", _lc_redis),
        ("llama-index RedisChatStore", _li_redis),
    ],
    "mongo": [
        ("langchain-community MongoDBChatMessageHistory", _lc_community_mongo),
        ("langchain-mongodb MongoDBChatMessageHistory", _lc_mongo),
        ("llama-index MongoChatStore", _li_mongo),
    ],
    "cassandra": [
        ("langchain-community CassandraChatMessageHistory", _lc_community_cassandra),
    ],
    "neo4j": [
        ("langchain-community Neo4jChatMessageHistory", _lc_community_neo4j),
        ("langchain-neo4j Neo4jChatMessageHistory", _lc_neo4j),
    ],
}


# Why a known failure happens, added to the recorded reason (checked against the installed code).
KNOWN = {
    (
        "langchain-redis RedisChatMessageHistory",
        "'dict' object has no attribute 'index'",
    ): "langchain-redis parses FT.INFO's index_definition as a list, redis-py 8 returns a dict,"
    " so every history after the first on an existing index raises in its constructor",
    (
        "langchain-community MongoDBChatMessageHistory",
        "cannot import name 'MongoDBChatMessageHistory'",
    ): "langchain-community 0.4 no longer ships it; langchain-mongodb's is the one measured",
    (
        "langchain-community Neo4jChatMessageHistory",
        "cannot import name 'Neo4jChatMessageHistory'",
    ): "langchain-community 0.4 no longer ships it; langchain-neo4j's is the one measured",
    (
        "llama-index MongoChatStore",
        "No package metadata was found for llama-index",
    ): "the store reads the version of the llama-index meta-package, which the bench session"
    " installs; it is missing when only llama-index-core is",
}


def explain(name: str, reason: str) -> str:
    """``reason`` plus the known cause, when there is one (once: the run and the report
    both explain)."""
    for (peer, text), why in KNOWN.items():
        if peer == name and text in reason and why not in reason:
            return f"{reason} ({why})"
    return reason


def build_peers(backend: str, server: ServerInfo) -> tuple[list[Any], list[NotRun]]:
    """The peers of ``backend`` that could be built here, and those that could not."""
    built: list[Any] = []
    failed: list[NotRun] = []
    for name, build in PEERS.get(backend, []):
        try:
            built.append(build(server))
        except Exception as exc:  # a missing package or a store that refuses this server
            failed.append(NotRun(name, f"{type(exc).__name__}: {exc}".strip()[:300]))
    return built, failed
