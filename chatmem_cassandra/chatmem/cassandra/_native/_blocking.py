"""The blocking counterpart of ``_aio`` (hand-written): the same names, calling the driver's
synchronous API. The generated sync repository code imports these where the async source
imports ``_aio``."""

from __future__ import annotations

from typing import Any


def execute(
    session: Any, statement: Any, parameters: Any = None, *, timeout: float | None = None
) -> Any:
    """``session.execute``: the driver's ``ResultSet`` (``fetch_next_page`` blocks)."""
    if timeout is None:
        return session.execute(statement, parameters)
    return session.execute(statement, parameters, timeout=timeout)


def prepare(session: Any, query: str) -> Any:
    """``session.prepare``."""
    return session.prepare(query)


def schema_agreed(session: Any, result: Any, wait: float) -> bool:
    """After a DDL, or at set-up: wait until every node agrees on the schema (at most
    ``wait`` seconds)."""
    return bool(session.cluster.control_connection.wait_for_schema_agreement(wait_time=wait))


def refresh_table(session: Any, keyspace: str, table: str) -> None:
    """Reload one table's metadata (the driver waits for agreement first)."""
    session.cluster.refresh_table_metadata(keyspace, table)


def connect(cluster: Any) -> Any:
    """``cluster.connect()``."""
    return cluster.connect()


def shutdown(cluster: Any) -> None:
    """``cluster.shutdown()``."""
    cluster.shutdown()
