"""Translate cassandra-driver exceptions into chatmem's error tree (driver error as ``__cause__``).

- no host / connection lost / client or server timeout / not enough replicas:
  ``BackendUnavailableError`` (a timed-out lightweight transaction has an unknown outcome:
  the message says so);
- an unknown keyspace or table, or a table of another shape: ``SchemaError``;
- anything else the driver raises: ``BackendError``.
"""

from __future__ import annotations

import cassandra
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionException
from chatmem.core import BackendUnavailableError, ChatMemoryError, SchemaError
from chatmem.core.backend import error_translator


def _classify(exc: BaseException, what: str) -> ChatMemoryError | None:
    """The cases that need more than the class: unknown LWT outcomes and schema mismatches."""
    if isinstance(exc, cassandra.WriteTimeout):
        unknown = (
            " (the lightweight transaction may or may not have applied)"
            if (getattr(exc, "write_type", None) == cassandra.WriteType.CAS)
            else ""
        )
        return BackendUnavailableError(f"Cassandra write timed out during {what}{unknown}")
    if isinstance(exc, (cassandra.Unavailable, cassandra.Timeout)):
        return BackendUnavailableError(f"Cassandra replicas unavailable during {what}")
    if isinstance(exc, cassandra.InvalidRequest):
        text = str(exc)
        if "unconfigured table" in text or "does not exist" in text or "Undefined column" in text:
            return SchemaError(
                f"{what}: the table is missing or has another shape ({text}); create it with "
                'initialize_schema="always", repo.create_schema() or `chatmem schema --url`'
            )
        return None
    return None


translate_errors = error_translator(
    "Cassandra",
    unavailable=(NoHostAvailable, ConnectionException, cassandra.OperationTimedOut),
    failures=(cassandra.DriverException,),
    classify=_classify,
)
"""``with translate_errors(what):`` runs a block of driver calls and re-raises driver failures
as chatmem errors."""


def table_not_ready(exc: BaseException) -> bool:
    """A table another client has just created that a node has not opened yet: Cassandra
    answers ``Unknown CF <id>`` for a moment (a racing ``CREATE TABLE IF NOT EXISTS`` returns
    before the winner's table is open). Worth retrying; nothing was written."""
    return "Unknown CF" in str(exc)
