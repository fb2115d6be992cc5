"""The Cassandra shape of long-term memory records: four tables, each for its queries, and
the state entries' table.

- ``<t>``           PRIMARY KEY (id): the record, the source of truth. Reviews are
  lightweight transactions on it (``IF status = 'pending' AND expires_at > ?``): one winner.
- ``<t>_dedup``     PRIMARY KEY (dedup_key): which record holds a normalised content;
  claimed with ``INSERT ... IF NOT EXISTS``, so concurrent adds store one record.
- ``<t>_by_user``   PRIMARY KEY ((user_id, status), created_at, id): a user's records of
  one status, oldest first (the review queue and the injected memories).
- ``<t>_by_status`` PRIMARY KEY ((status), created_at, id): every user's records of one
  status (listing without a user, and the expiry sweep over ``pending``).
- ``<t>_state``     PRIMARY KEY ((namespace), key): state entries, a namespace's keys in
  byte (code-point) order; created with ``IF NOT EXISTS``, replaced and deleted with
  ``IF version = ?`` (lightweight transactions: one winner).

The two listing tables are moved in a logged batch when a record's status changes; a
listing reads their keys, then the records themselves from ``<t>``, and keeps only records
whose stored status is the partition's (so it never shows a stale row). Timestamps are
bigint UTC microseconds. No query needs ``ALLOW FILTERING``. Identifiers are validated and
double-quoted; every value is bound.
"""

# Identifiers here are validated (cql_identifier) and quoted; every value is a bind marker.
# ruff: noqa: S608
from __future__ import annotations

import uuid
from dataclasses import dataclass

from ._config import Replication

DEFAULT_MEMORY_TABLE_NAME = "ai_memory_record"
COLUMNS = (
    "id, agent_id, user_id, memory_type, content, dedup_key, confidence, status, created_at, "
    "expires_at, reviewed_at, reviewer, reason, conversation_id, message_position, "
    "original_content"
)


def q(name: str) -> str:
    """Quote a validated identifier."""
    return f'"{name}"'


def _table_id(keyspace: str, table: str) -> uuid.UUID:
    # Racing CREATE TABLE IF NOT EXISTS on several coordinators must create one table.
    return uuid.uuid5(uuid.NAMESPACE_URL, f"chatmem:cassandra:{keyspace}.{table}")


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def memory_schema_cql(keyspace: str, table: str, replication: Replication) -> list[str]:
    """The keyspace and the five tables, in the order to create them."""
    ks = q(keyspace)
    options = ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in replication.options().items())
    index_columns = "created_at bigint, id text, user_id text, expires_at bigint"

    def create(name: str, body: str, order: str = "") -> str:
        return (
            f"CREATE TABLE IF NOT EXISTS {ks}.{q(name)} ({body}){order}"
            f"{' AND' if order else ' WITH'} ID = {_table_id(keyspace, name)}"
        )

    return [
        f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{{options}}}",
        create(
            table,
            "id text PRIMARY KEY, agent_id text, user_id text, memory_type text, content text, "
            "dedup_key text, confidence double, status text, created_at bigint, "
            "expires_at bigint, reviewed_at bigint, reviewer text, reason text, "
            "conversation_id text, message_position bigint, original_content text",
        ),
        create(f"{table}_dedup", "dedup_key text PRIMARY KEY, id text"),
        create(
            f"{table}_by_user",
            f"status text, {index_columns}, PRIMARY KEY ((user_id, status), created_at, id)",
            " WITH CLUSTERING ORDER BY (created_at ASC, id ASC)",
        ),
        create(
            f"{table}_by_status",
            f"status text, {index_columns}, PRIMARY KEY ((status), created_at, id)",
            " WITH CLUSTERING ORDER BY (created_at ASC, id ASC)",
        ),
        create(
            f"{table}_state",
            '"namespace" text, "key" text, "value" text, "version" bigint, "updated_at" bigint, '
            'PRIMARY KEY (("namespace"), "key")',
            ' WITH CLUSTERING ORDER BY ("key" ASC)',
        ),
    ]


@dataclass(frozen=True)
class MemoryCql:
    """Every statement, as CQL text with bind markers (prepared once per store)."""

    insert: str
    by_id: str
    by_ids: str
    delete: str
    claim: str
    claimed: str
    take_over: str
    release: str
    review: str
    review_edit: str
    expire: str
    user_insert: str
    user_delete: str
    user_page: str
    user_first: str
    status_insert: str
    status_delete: str
    status_page: str
    status_first: str
    state_read: str
    state_create: str
    state_replace: str
    state_delete: str
    state_delete_at: str
    state_first: str
    state_page: str


def memory_cql(keyspace: str, table: str) -> MemoryCql:
    """Build the statements for ``keyspace.table`` (validated names)."""
    t = f"{q(keyspace)}.{q(table)}"
    dedup = f"{q(keyspace)}.{q(table + '_dedup')}"
    user = f"{q(keyspace)}.{q(table + '_by_user')}"
    status = f"{q(keyspace)}.{q(table + '_by_status')}"
    idx = "created_at, id, user_id, expires_at"
    st = f"{q(keyspace)}.{q(table + '_state')}"
    entry = '"namespace" = ? AND "key" = ?'
    fields = '"key", "value", "version", "updated_at"'
    return MemoryCql(
        insert=f"INSERT INTO {t} ({COLUMNS}) VALUES ({', '.join('?' * 16)})",
        by_id=f"SELECT {COLUMNS} FROM {t} WHERE id = ?",
        by_ids=f"SELECT {COLUMNS} FROM {t} WHERE id IN ?",
        delete=f"DELETE FROM {t} WHERE id = ? IF EXISTS",
        claim=f"INSERT INTO {dedup} (dedup_key, id) VALUES (?, ?) IF NOT EXISTS",
        claimed=f"SELECT id FROM {dedup} WHERE dedup_key = ?",
        take_over=f"UPDATE {dedup} SET id = ? WHERE dedup_key = ? IF id = ?",
        release=f"DELETE FROM {dedup} WHERE dedup_key = ? IF id = ?",
        review=(
            f"UPDATE {t} SET status = ?, reviewed_at = ?, reviewer = ?, reason = ? "
            "WHERE id = ? IF status = 'pending' AND expires_at > ?"
        ),
        review_edit=(
            f"UPDATE {t} SET status = ?, reviewed_at = ?, reviewer = ?, reason = ?, content = ?, "
            "original_content = ? WHERE id = ? IF status = 'pending' AND expires_at > ?"
        ),
        expire=(
            f"UPDATE {t} SET status = 'rejected', reviewed_at = ?, reviewer = null, reason = ? "
            "WHERE id = ? IF status = 'pending' AND expires_at = ?"
        ),
        user_insert=f"INSERT INTO {user} (status, {idx}) VALUES (?, ?, ?, ?, ?)",
        user_delete=(
            f"DELETE FROM {user} WHERE user_id = ? AND status = ? AND created_at = ? AND id = ?"
        ),
        user_page=(
            f"SELECT {idx} FROM {user} WHERE user_id = ? AND status = ? "
            "AND (created_at, id) > (?, ?) LIMIT ?"
        ),
        user_first=f"SELECT {idx} FROM {user} WHERE user_id = ? AND status = ? LIMIT ?",
        status_insert=f"INSERT INTO {status} (status, {idx}) VALUES (?, ?, ?, ?, ?)",
        status_delete=f"DELETE FROM {status} WHERE status = ? AND created_at = ? AND id = ?",
        status_page=(
            f"SELECT {idx} FROM {status} WHERE status = ? AND (created_at, id) > (?, ?) LIMIT ?"
        ),
        status_first=f"SELECT {idx} FROM {status} WHERE status = ? LIMIT ?",
        state_read=f"SELECT {fields} FROM {st} WHERE {entry}",
        state_create=(
            f'INSERT INTO {st} ("namespace", {fields}) VALUES (?, ?, ?, 1, ?) IF NOT EXISTS'
        ),
        state_replace=(
            f'UPDATE {st} SET "value" = ?, "version" = ?, "updated_at" = ? '
            f'WHERE {entry} IF "version" = ?'
        ),
        state_delete=f"DELETE FROM {st} WHERE {entry} IF EXISTS",
        state_delete_at=f'DELETE FROM {st} WHERE {entry} IF "version" = ?',
        state_first=f'SELECT {fields} FROM {st} WHERE "namespace" = ? LIMIT ?',
        state_page=f'SELECT {fields} FROM {st} WHERE "namespace" = ? AND "key" > ? LIMIT ?',
    )
