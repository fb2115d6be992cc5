"""The one place the Cassandra storage shape is defined: DDL and every statement, as CQL text.

One partition per conversation; its rows are the non-system messages clustered by
``position`` (newest first, so "the last N" is one ``LIMIT N`` read in clustering order).
Three static columns hold what belongs to the whole conversation:

- ``next_position``: every position below it is taken; it is also the guard of every
  lightweight transaction (``IF next_position = ?``), so writes to one conversation are
  serialised and concurrent appends all land with strictly increasing positions. Negated, it
  marks a conversation an edit left without a message (``pop_last`` of the last one), which
  listing skips (``_plan.after``);
- ``origin``: the stored position of the first message of the last ``save_all`` (callers see
  ``position - origin``); a new conversation starts at a random origin, so a cached guard of
  a deleted or expired conversation can never match its successor;
- ``system_messages``: ``map<position, (created_at, content)>``, so the window (every system
  message plus the newest others) is one single-partition read. It also holds the receipts of
  recent deletion-only edits, at positions they deleted (see ``_plan.Claims``).

Identifiers are validated by ``CassandraConfig`` and double-quoted here; values are always
bound. TTLs are bound too (``USING TTL ?``, 0 meaning none), so a changed TTL takes effect on
an existing table with no DDL.
"""

# Identifiers here are validated (cql_identifier) and quoted; every value is a bind marker.
# ruff: noqa: S608
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from chatmem.core import SchemaError

from ._config import CassandraConfig, Replication

SCHEMA_AGREEMENT_WAIT = 60.0
"""Seconds a DDL may take, and then to wait for every node to agree on the schema."""
SCHEMA_LAG_WAIT = 30.0
"""Seconds a statement is retried while a coordinator answers that the keyspace or table
this process has just created (or that the driver's metadata shows) does not exist: a node
that has not applied it yet (a cold 3-node cluster took a few seconds). Past it, SchemaError
names the element and this wait; an element really dropped fails after it at the latest."""


def q(name: str) -> str:
    """Quote a validated identifier (case kept, reserved words allowed)."""
    return f'"{name}"'


def table_id(config: CassandraConfig) -> uuid.UUID:
    """A table id derived from its name, so concurrent ``CREATE TABLE IF NOT EXISTS`` on
    different coordinators create the same table instead of diverging schemas."""
    return uuid.uuid5(
        uuid.NAMESPACE_URL, f"chatmem:cassandra:{config.keyspace}.{config.table_name}"
    )


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def create_keyspace_cql(keyspace: str, replication: Replication) -> str:
    """``CREATE KEYSPACE IF NOT EXISTS`` with the configured (validated) replication map."""
    options = ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in replication.options().items())
    return f"CREATE KEYSPACE IF NOT EXISTS {q(keyspace)} WITH replication = {{{options}}}"


def create_table_cql(config: CassandraConfig) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for the configured names."""
    c = config
    return (
        f"CREATE TABLE IF NOT EXISTS {q(c.keyspace)}.{q(c.table_name)} ("
        f"{q(c.conversation_id_column)} text, "
        f"{q(c.position_column)} bigint, "
        f"{q(c.message_type_column)} text, "
        f"{q(c.content_column)} text, "
        f"{q(c.created_at_column)} bigint, "
        f"{q(c.next_position_column)} bigint static, "
        f"{q(c.origin_column)} bigint static, "
        f"{q(c.system_messages_column)} map<bigint, frozen<tuple<bigint, text>>> static, "
        f"PRIMARY KEY (({q(c.conversation_id_column)}), {q(c.position_column)})"
        f") WITH CLUSTERING ORDER BY ({q(c.position_column)} DESC)"
        f" AND ID = {table_id(c)}"
        " AND comment = 'chatmem conversation memory: one partition per conversation'"
    )


def schema_cql(config: CassandraConfig) -> list[str]:
    """The DDL ``initialize_schema`` runs, for teams that apply schema changes themselves."""
    return [create_keyspace_cql(config.keyspace, config.replication), create_table_cql(config)]


def missing_schema(session: Any, config: CassandraConfig) -> list[str]:
    """What the driver's metadata lacks of the keyspace and table (no round trip)."""
    keyspace = session.cluster.metadata.keyspaces.get(config.keyspace)
    if keyspace is None:
        return [f"keyspace {config.keyspace}", f"table {config.keyspace}.{config.table_name}"]
    if config.table_name not in keyspace.tables:
        return [f"table {config.keyspace}.{config.table_name}"]
    check_table(config, keyspace.tables[config.table_name])
    return []


EXPECTED_COLUMNS = {
    "conversation_id_column": "text",
    "position_column": "bigint",
    "message_type_column": "text",
    "content_column": "text",
    "created_at_column": "bigint",
    "next_position_column": "bigint",
    "origin_column": "bigint",
    "system_messages_column": "map<bigint, frozen<tuple<bigint, text>>>",
}
"""Column option -> CQL type, checked against an existing table."""


def check_table(config: CassandraConfig, table: Any) -> None:
    """Raise SchemaError unless the driver's ``TableMetadata`` has every column we need."""
    c = config
    for option, cql_type in EXPECTED_COLUMNS.items():
        name = getattr(c, option)
        column = table.columns.get(name)
        found = None if column is None else column.cql_type.replace(" ", "")
        if found != cql_type.replace(" ", ""):
            raise SchemaError(
                f"table {c.keyspace}.{c.table_name}: column {name!r} ({option}) should be "
                f"{cql_type}, found {found or 'nothing'}"
            )


@dataclass(frozen=True)
class Statements:
    """Every statement the repository prepares, as CQL text."""

    select_log: str
    select_last: str
    select_guard: str
    select_statics: str
    select_range: str
    list_first: str
    list_from: str
    insert_row: str
    delete_row: str
    delete_below: str
    delete_partition: str
    cas_next: str
    cas_add_systems: str
    cas_state: str
    cas_clear: str


def statements(config: CassandraConfig) -> Statements:
    """Build every statement once, from validated names only."""
    c = config
    t = f"{q(c.keyspace)}.{q(c.table_name)}"
    cid, pos = q(c.conversation_id_column), q(c.position_column)
    nxt, org, sysm = q(c.next_position_column), q(c.origin_column), q(c.system_messages_column)
    cols = f"{nxt}, {org}, {sysm}, {pos}, {q(c.message_type_column)}, {q(c.content_column)}, " + (
        q(c.created_at_column)
    )
    guard = f"WHERE {cid} = ? IF {nxt} = ?"
    return Statements(
        select_log=f"SELECT {cols} FROM {t} WHERE {cid} = ?",
        select_last=f"SELECT {cols} FROM {t} WHERE {cid} = ? LIMIT ?",
        select_guard=f"SELECT {nxt} FROM {t} WHERE {cid} = ? LIMIT 1",
        select_statics=f"SELECT {nxt}, {org}, {sysm} FROM {t} WHERE {cid} = ? LIMIT 1",
        select_range=(
            f"SELECT {pos}, {q(c.message_type_column)}, {q(c.content_column)}, "
            f"{q(c.created_at_column)} FROM {t} WHERE {cid} = ? AND {pos} >= ? AND {pos} <= ?"
        ),
        list_first=f"SELECT DISTINCT {cid}, token({cid}), {nxt} FROM {t} LIMIT ?",
        list_from=(
            f"SELECT DISTINCT {cid}, token({cid}), {nxt} FROM {t} WHERE token({cid}) >= ? LIMIT ?"
        ),
        insert_row=(
            f"INSERT INTO {t} ({cid}, {pos}, {q(c.message_type_column)}, {q(c.content_column)}, "
            f"{q(c.created_at_column)}) VALUES (?, ?, ?, ?, ?) USING TTL ?"
        ),
        delete_row=f"DELETE FROM {t} WHERE {cid} = ? AND {pos} = ?",
        delete_below=f"DELETE FROM {t} WHERE {cid} = ? AND {pos} < ?",
        delete_partition=f"DELETE FROM {t} WHERE {cid} = ?",
        cas_next=f"UPDATE {t} SET {nxt} = ? {guard}",
        cas_add_systems=f"UPDATE {t} SET {nxt} = ?, {sysm} = {sysm} + ? {guard}",
        cas_state=f"UPDATE {t} USING TTL ? SET {nxt} = ?, {org} = ?, {sysm} = ? {guard}",
        cas_clear=f"UPDATE {t} SET {nxt} = null {guard}",
    )
