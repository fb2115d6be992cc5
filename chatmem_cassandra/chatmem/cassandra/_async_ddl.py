"""Creating the keyspace and table (the statements are in ``_schema``). Written as async
code; ``_ddl.py`` is its generated sync twin.

The DDL is sent like any statement (the async twin awaits the driver's future through
``_aio``). The driver refreshes its schema metadata and waits for schema agreement before a
DDL's future completes; the async twin waits again, in a thread, only when that wait saw no
agreement (set-up only, never per operation).
"""

from __future__ import annotations

import contextlib
from typing import Any

from chatmem.core import SchemaError

from ._aio import execute, schema_agreed
from ._config import CassandraConfig
from ._errors import translate_errors
from ._schema import SCHEMA_AGREEMENT_WAIT, check_table, create_keyspace_cql, create_table_cql

# unasync: _aio -> _blocking


async def ensure_schema(session: Any, config: CassandraConfig) -> None:
    """Create the keyspace and the table when the driver's metadata lacks them (``IF NOT
    EXISTS`` and a name-derived table id make racing creators agree), wait for schema
    agreement after each DDL (or once, when nothing was missing), then check the columns."""
    c = config
    with translate_errors("schema creation"):
        metadata = session.cluster.metadata
        keyspace = metadata.keyspaces.get(c.keyspace)
        ran_ddl = keyspace is None or c.table_name not in keyspace.tables
        if keyspace is None:
            await _ddl(session, create_keyspace_cql(c.keyspace, c.replication))
            keyspace = metadata.keyspaces.get(c.keyspace)
        if keyspace is None or c.table_name not in keyspace.tables:
            await _ddl(session, create_table_cql(c))
            keyspace = metadata.keyspaces.get(c.keyspace)
        table = keyspace.tables.get(c.table_name) if keyspace is not None else None
        if not ran_ddl and not await schema_agreed(session, None, SCHEMA_AGREEMENT_WAIT):
            # our metadata may show a table another client is creating right now (the
            # driver loads it at connect without waiting for agreement): on a cluster a node
            # that has not applied it yet would answer "table does not exist"
            raise SchemaError(f"schema did not agree within {SCHEMA_AGREEMENT_WAIT:.0f}s")
    if table is not None:
        check_table(config, table)


async def _ddl(session: Any, cql: str) -> None:
    from cassandra import AlreadyExists

    result = None
    with contextlib.suppress(AlreadyExists):  # a concurrent creator won (rare: IF NOT EXISTS)
        result = await execute(session, cql, timeout=SCHEMA_AGREEMENT_WAIT)
    if not await schema_agreed(session, result, SCHEMA_AGREEMENT_WAIT):
        raise SchemaError(f"schema did not agree within {SCHEMA_AGREEMENT_WAIT:.0f}s")
