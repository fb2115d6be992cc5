"""The pure part of the Neo4j record store: node properties and every Cypher statement, for
validated labels (back-quoted; every value is a parameter).

State entries are nodes labelled ``<memory_label>State`` with ``namespace``, ``key``,
``value``, ``version`` and ``updated_at`` (UTC microseconds), unique on ``(namespace,
key)``: a create is a CREATE the constraint guards (the loser gets a ConstraintError), and a
replace or delete first takes the node's write lock (``SET s.lock = true REMOVE s.lock``)
and only then checks the version, so of racing writers one wins.
"""

from __future__ import annotations

from typing import Any

from chatmem.core.backend import from_micros
from chatmem.core.longterm import MemoryRecord, StateEntry, record_from_fields, record_to_fields


def to_properties(record: MemoryRecord, key: str) -> dict[str, Any]:
    """A record as node properties (None values are simply absent in Neo4j)."""
    return record_to_fields(record, key)


def from_properties(p: dict[str, Any]) -> MemoryRecord:
    """A record from a node's properties."""
    return record_from_fields(p)


def state_from_properties(p: dict[str, Any]) -> StateEntry:
    return StateEntry(
        namespace=p["namespace"],
        key=p["key"],
        value=p["value"],
        version=int(p["version"]),
        updated_at=from_micros(int(p["updated_at"])),
    )


def quoted(label: str) -> str:
    return f"`{label}`"


def schema_statements(user: str, memory: str) -> list[str]:
    """The constraints and indexes of the record and state nodes."""
    u, m, name = quoted(user), quoted(memory), f"chatmem_{memory}"
    s = quoted(f"{memory}State")
    return [
        f"CREATE CONSTRAINT `{name}_dedup_key` IF NOT EXISTS "
        f"FOR (m:{m}) REQUIRE m.dedup_key IS UNIQUE",
        f"CREATE CONSTRAINT `{name}_id` IF NOT EXISTS FOR (m:{m}) REQUIRE m.id IS UNIQUE",
        f"CREATE CONSTRAINT `chatmem_{user}_user_id` IF NOT EXISTS "
        f"FOR (u:{u}) REQUIRE u.user_id IS UNIQUE",
        f"CREATE INDEX `{name}_user_created` IF NOT EXISTS "
        f"FOR (m:{m}) ON (m.user_id, m.created_at)",
        f"CREATE INDEX `{name}_status_expires` IF NOT EXISTS "
        f"FOR (m:{m}) ON (m.status, m.expires_at)",
        f"CREATE CONSTRAINT `{name}State_key` IF NOT EXISTS "
        f"FOR (s:{s}) REQUIRE (s.namespace, s.key) IS UNIQUE",
    ]


def queries(user: str, memory: str, message: str) -> dict[str, str]:
    """The fixed statements for validated labels."""
    u, m, msg = quoted(user), quoted(memory), quoted(message)
    lock = "SET m.lock = true REMOVE m.lock\nWITH m"  # hold m's write lock from here on
    st = quoted(f"{memory}State")
    state_lock = "SET s.lock = true REMOVE s.lock\nWITH s"
    return {
        "add": (
            f"MERGE (u:{u} {{user_id: $user}})\n"
            f"CREATE (u)-[:REMEMBERS]->(m:{m})\nSET m = $props\nWITH m\n"
            f"OPTIONAL MATCH (x:{msg}) WHERE $cid IS NOT NULL AND x.conversation_id = $cid "
            "AND x.position = $pos\n"
            "FOREACH (s IN CASE WHEN x IS NULL THEN [] ELSE [x] END |\n"
            "  MERGE (m)-[:EXTRACTED_FROM]->(s))"
        ),
        "by_key": f"MATCH (m:{m} {{dedup_key: $key}}) RETURN m {{.*}} AS m",
        "by_id": f"MATCH (m:{m} {{id: $id}}) RETURN m {{.*}} AS m",
        "review": (
            f"MATCH (m:{m} {{id: $id}})\n{lock}\n"
            "WHERE m.status = 'pending' AND m.expires_at > $now\n"
            "SET m.status = $decision, m.reviewed_at = $now, m.reviewer = $reviewer, "
            "m.reason = $reason, m.content = coalesce($content, m.content), "
            "m.original_content = $original\nRETURN m {.*} AS m"
        ),
        "delete": f"MATCH (m:{m} {{id: $id}})\nDETACH DELETE m\nRETURN 1 AS done",
        "expire": (
            f"MATCH (m:{m}) WHERE m.status = 'pending' AND m.expires_at <= $now\n{lock}\n"
            "WHERE m.status = 'pending' AND m.expires_at <= $now\n"
            "SET m.status = 'rejected', m.reviewed_at = m.expires_at, m.reviewer = null, "
            "m.reason = $reason\nRETURN count(m) AS n"
        ),
        "state_read": f"MATCH (s:{st} {{namespace: $ns, key: $key}}) RETURN s {{.*}} AS s",
        "state_create": (
            f"CREATE (s:{st} {{namespace: $ns, key: $key, value: $value, version: 1, "
            "updated_at: $now}) RETURN s.version AS v"
        ),
        "state_replace": (
            f"MATCH (s:{st} {{namespace: $ns, key: $key}})\n{state_lock}\n"
            "WHERE s.version = $expected\n"
            "SET s.value = $value, s.version = s.version + 1, s.updated_at = $now\n"
            "RETURN s.version AS v"
        ),
        "state_delete": (
            f"MATCH (s:{st} {{namespace: $ns, key: $key}})\n{state_lock}\n"
            "WHERE $expected IS NULL OR s.version = $expected\nDELETE s\nRETURN 1 AS done"
        ),
        "state_list": (
            f"MATCH (s:{st} {{namespace: $ns}}) WHERE $after IS NULL OR s.key > $after\n"
            "RETURN s {.*} AS s ORDER BY s.key LIMIT $limit"
        ),
    }
