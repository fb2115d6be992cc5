"""Translate cassandra-driver exceptions into chatmem's error tree (driver error as ``__cause__``).

- no host / connection lost / client or server timeout / not enough replicas:
  ``BackendUnavailableError`` (a timed-out lightweight transaction has an unknown outcome:
  the message says so; so has Paxos v1's ``CAS_WRITE_UNKNOWN`` error, code 0x1700, which
  this driver does not know and raises as a bare ``ErrorMessage``);
- an unknown keyspace or table, or a table of another shape: ``SchemaError``;
- anything else the driver raises: ``BackendError``.
"""

from __future__ import annotations

import cassandra
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionException
from cassandra.protocol import ErrorMessage
from chatmem.core import BackendUnavailableError, ChatMemoryError, SchemaError
from chatmem.core.backend import error_translator

CAS_WRITE_UNKNOWN = 0x1700
"""Protocol v5's error code for a lightweight transaction whose outcome is unknown."""


def unknown_outcome(exc: BaseException | None) -> bool:
    """Whether a failed lightweight transaction may still have applied: any server timeout
    (a CAS write timeout; with Paxos v2 also a read timeout of the condition's read, and a
    commit timed out after the proposal was accepted), ``CAS_WRITE_UNKNOWN``, or a request
    lost with its connection or timed out client-side. Settling by reading is right whether
    it applied or not, so any doubt counts as unknown; ``Unavailable`` never ran."""
    if isinstance(exc, cassandra.Timeout):
        return True
    if isinstance(exc, ErrorMessage):
        return bool(getattr(exc, "code", None) == CAS_WRITE_UNKNOWN)
    return isinstance(exc, (ConnectionException, cassandra.OperationTimedOut))


def _classify(exc: BaseException, what: str) -> ChatMemoryError | None:
    """The cases that need more than the class: unknown LWT outcomes and schema mismatches."""
    if isinstance(exc, cassandra.WriteTimeout):
        unknown = (
            " (the lightweight transaction may or may not have applied)"
            if (getattr(exc, "write_type", None) == cassandra.WriteType.CAS)
            else ""
        )
        return BackendUnavailableError(f"Cassandra write timed out during {what}{unknown}")
    if isinstance(exc, ErrorMessage) and getattr(exc, "code", None) == CAS_WRITE_UNKNOWN:
        return BackendUnavailableError(
            f"Cassandra could not settle a lightweight transaction during {what} (it may or "
            f"may not have applied): {exc}"
        )
    if isinstance(exc, (cassandra.Unavailable, cassandra.Timeout)):
        return BackendUnavailableError(f"Cassandra replicas unavailable during {what}")
    if isinstance(exc, cassandra.InvalidRequest):
        text = str(exc)
        if schema_lagging(exc) or "Undefined column" in text:
            return SchemaError(
                f"{what}: the table is missing or has another shape ({text}); create it with "
                'initialize_schema="always", repo.create_schema() or `chatmem schema --url`'
            )
        return None
    return None


translate_errors = error_translator(
    "Cassandra",
    unavailable=(NoHostAvailable, ConnectionException, cassandra.OperationTimedOut),
    failures=(cassandra.DriverException, ErrorMessage),
    classify=_classify,
)
"""``with translate_errors(what):`` runs a block of driver calls and re-raises driver failures
as chatmem errors."""


LAGGING_REPLICA = (0x0000, 0x0003)
"""Replica failure reasons (a read's ``error_code_map``) of a node whose schema lacks the
table the coordinator sent it: ``UNKNOWN`` and ``INCOMPATIBLE_SCHEMA``."""
MISSING_ANSWERS = ("does not exist", "doesn't exist", "unconfigured table", "Unknown CF")
"""How Cassandra says a keyspace, table, type or index is unknown: prepared statements and
queries answer "does not exist" or "unconfigured table", DDL answers "Keyspace 'k' doesn't
exist", a node still opening a table answers "Unknown CF <id>" (a racing ``CREATE TABLE IF
NOT EXISTS`` returns before the winner's table is open there)."""


def schema_lagging(exc: BaseException) -> bool:
    """Whether a coordinator answered that a schema element is unknown (see
    ``MISSING_ANSWERS``): on an element just created, a node that has not applied it yet;
    nothing ran, so the statement may be sent again. ``NoHostAvailable`` only when every
    host answered so (one lost mid-request may have run a write). A read failing on replicas
    that have not applied the table yet (``INCOMPATIBLE_SCHEMA`` or ``UNKNOWN``, both seen on
    3 nodes right after a cold start) too: a read changes nothing; a write failing so is not
    (a lightweight transaction may have been proposed)."""
    if isinstance(exc, cassandra.ReadFailure):
        codes = (exc.error_code_map or {}).values()
        return bool(codes) and all(code in LAGGING_REPLICA for code in codes)
    if isinstance(exc, NoHostAvailable) and exc.errors:
        return all(schema_lagging(Exception(str(e))) for e in exc.errors.values())
    text = str(exc)
    return any(answer in text for answer in MISSING_ANSWERS)
