"""Record stores handed from test to test on Cassandra and Neo4j.

A store made with default options gets the names of one a previous test used, emptied: on
those servers creating a store's schema is a schema change (five tables on Cassandra, a
constraint and indexes on Neo4j) that takes seconds, where deleting a test's few rows takes
milliseconds. A store whose emptying fails (a test dropped or changed its schema) is dropped
instead and never handed on; the next store still creates its schema with ``IF NOT EXISTS``.
"""

from __future__ import annotations

from typing import Any

from chatmem.testing.harness import ServerInfo

POOLED = ("cassandra", "neo4j")

# Cassandra: each table of a record store and its partition key columns.
_CASSANDRA_TABLES = (
    ("", ("id",)),
    ("_dedup", ("dedup_key",)),
    ("_by_user", ("user_id", "status")),
    ("_by_status", ("status",)),
    ("_state", ("namespace",)),
)


def take(server: ServerInfo, harness: str) -> dict[str, Any] | None:
    """The names of an emptied store to reuse, or None (make new ones)."""
    if harness not in POOLED:
        return None
    free: list[dict[str, Any]] = server.extra.setdefault("free_record_stores", [])
    return free.pop() if free else None


def give_back(server: ServerInfo, harness: str, names: dict[str, Any]) -> bool:
    """Empty the store ``names`` name and keep it for the next test; False when it could not
    be emptied (the caller drops it)."""
    if harness not in POOLED:
        return False
    try:
        emptied = (_empty_cassandra if harness == "cassandra" else _empty_neo4j)(server, names)
    except Exception:
        return False
    if emptied:
        server.extra.setdefault("free_record_stores", []).append(dict(names))
    return emptied


def _empty_cassandra(server: ServerInfo, names: dict[str, Any]) -> bool:
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args
    from cassandra.query import SimpleStatement

    session = server.extra["session"]
    keyspace = server.extra["keyspace"]
    for suffix, key in _CASSANDRA_TABLES:
        table = f'"{keyspace}"."{names["table_name"]}{suffix}"'
        columns = ", ".join(f'"{c}"' for c in key)
        listing = SimpleStatement(
            f"SELECT DISTINCT {columns} FROM {table}", consistency_level=ConsistencyLevel.QUORUM
        )
        partitions = [tuple(row) for row in session.execute(listing, timeout=30)]
        where = " AND ".join(f'"{c}" = ?' for c in key)
        delete = session.prepare(f"DELETE FROM {table} WHERE {where}")
        delete.consistency_level = ConsistencyLevel.QUORUM
        results = execute_concurrent_with_args(
            session, delete, partitions, raise_on_first_error=False
        )
        if not all(ok for ok, _ in results):
            return False
    return True


def _empty_neo4j(server: ServerInfo, names: dict[str, Any]) -> bool:
    labels = (names["user_label"], names["memory_label"], f"{names['memory_label']}State")
    match = " OR ".join(f"n:`{label}`" for label in labels)
    with server.extra["driver"].session() as session:
        session.run(f"MATCH (n) WHERE {match} DETACH DELETE n").consume()
    return True
