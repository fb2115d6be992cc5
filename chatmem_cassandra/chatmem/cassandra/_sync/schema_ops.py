# Generated from chatmem_cassandra/chatmem/cassandra/_async/schema_ops.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""Creating the keyspace and table (the statements are in ``_schema``).

The DDL is sent like any statement (through the driver bridge this twin imports); then
every node's agreement on the schema is checked through the control
connection (set-up only, never per operation).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from chatmem.core import SchemaError

from .. import _schema
from .._config import CassandraConfig
from .._errors import schema_lagging, translate_errors
from .._native._blocking import execute, refresh_table, schema_agreed
from .._schema import (
    SCHEMA_AGREEMENT_WAIT,
    check_table,
    create_keyspace_cql,
    create_table_cql,
    missing_schema,
)


def ensure_schema(session: Any, config: CassandraConfig) -> None:
    """Create the keyspace and the table when the driver's metadata lacks them (``IF NOT
    EXISTS`` and a name-derived table id make racing creators agree), wait for schema
    agreement after each DDL (or once, when nothing was missing), then check the columns."""
    c = config
    with translate_errors("schema creation"):
        metadata = session.cluster.metadata
        keyspace = metadata.keyspaces.get(c.keyspace)
        ran_ddl = keyspace is None or c.table_name not in keyspace.tables
        if keyspace is None:
            ks = create_keyspace_cql(c.keyspace, c.replication)
            run_ddl(session, ks, f"keyspace {c.keyspace}")
            keyspace = metadata.keyspaces.get(c.keyspace)
        if keyspace is None or c.table_name not in keyspace.tables:
            what = f"table {c.keyspace}.{c.table_name}"
            run_ddl(session, create_table_cql(c), what, f"keyspace {c.keyspace}")
            keyspace = metadata.keyspaces.get(c.keyspace)
        table = keyspace.tables.get(c.table_name) if keyspace is not None else None
        if not ran_ddl and not schema_agreed(session, None, SCHEMA_AGREEMENT_WAIT):
            # our metadata may show a table another client is creating right now (the
            # driver loads it at connect without waiting for agreement): on a cluster a node
            # that has not applied it yet would answer "table does not exist"
            raise SchemaError(f"schema did not agree within {SCHEMA_AGREEMENT_WAIT:.0f}s")
    if table is not None:
        try:
            check_table(config, table)
        except SchemaError:
            # the driver loads tables and columns with separate queries: a table another
            # client created between them shows no columns (seen with 4 cold processes)
            if reloaded_missing(session, config):  # raises for another shape
                raise SchemaError(f"table {c.keyspace}.{c.table_name} vanished") from None


def reloaded_missing(session: Any, config: CassandraConfig) -> list[str]:
    """``missing_schema`` after reloading the table's metadata once, after agreement: for
    when the driver's metadata disagrees with the server (a torn load, or a refresh from a
    node that lags). Raises SchemaError for a table of another shape."""
    # no agreement or no connection: judge by the metadata we have
    with contextlib.suppress(Exception):
        refresh_table(session, config.keyspace, config.table_name)
    return missing_schema(session, config)


LAG_BACKOFF = 1.0
"""Longest pause (seconds) between tries of a DDL a lagging coordinator refused."""


def run_ddl(session: Any, cql: str, what: str, needs: str | None = None) -> None:
    """Run one ``CREATE ... IF NOT EXISTS`` (of ``what``), then wait for schema agreement.
    While a coordinator answers that ``needs`` (a keyspace another client or this process
    created a moment ago, not applied there yet) does not exist, try again with backoff for
    up to ``SCHEMA_LAG_WAIT``; then SchemaError names ``needs`` and the wait."""
    from cassandra import AlreadyExists, InvalidRequest

    since = time.monotonic()
    pause = 0.05
    while True:
        try:
            with contextlib.suppress(AlreadyExists):  # a concurrent creator won (rare)
                execute(session, cql, timeout=SCHEMA_AGREEMENT_WAIT)
            break
        except InvalidRequest as exc:
            waited = time.monotonic() - since
            if needs is None or not schema_lagging(exc):
                raise
            if waited >= _schema.SCHEMA_LAG_WAIT:
                raise SchemaError(
                    f"creating {what}: a coordinator still answered that {needs} does not "
                    f"exist after {_schema.SCHEMA_LAG_WAIT:.0f}s of retries (dropped meanwhile, "
                    f"or the schema does not reach every node): {exc}"
                ) from exc
        # safe to resend: IF NOT EXISTS makes a DDL that already applied (here or by a
        # racing client) a no-op, and a refused one changed nothing
        time.sleep(min(pause, _schema.SCHEMA_LAG_WAIT - waited))
        pause = min(LAG_BACKOFF, pause * 2)
    # always asked, not taken from the DDL's result: an ``IF NOT EXISTS`` that found the
    # table another client had just created changed nothing, so the driver waited for no
    # agreement, and a replica still without the table answers "Unknown CF" (seen on 3 nodes)
    if not schema_agreed(session, None, SCHEMA_AGREEMENT_WAIT):
        raise SchemaError(f"schema did not agree within {SCHEMA_AGREEMENT_WAIT:.0f}s")
