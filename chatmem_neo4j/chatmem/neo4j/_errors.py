"""Driver errors -> chatmem's error tree (the driver's exception stays as ``__cause__``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chatmem.core.backend import error_translator
from neo4j import exceptions as neo4j_errors


@contextmanager
def server_errors() -> Iterator[None]:
    """Around ``execute_write``/``execute_read``: re-raise the server's own error in place of
    the ``ResultFailedError`` the driver's rollback can raise after a transaction function
    failed (its cause), so a constraint or a deadlock keeps its type for the code above."""
    try:
        yield
    except neo4j_errors.ResultFailedError as exc:
        if isinstance(exc.__cause__, neo4j_errors.Neo4jError):
            raise exc.__cause__ from None
        raise


def rejected_before_commit(exc: BaseException) -> bool:
    """True for server errors that guarantee the statement did not commit and may be re-run
    (deadlock, lock timeout, not a leader); False for lost connections (outcome unknown)."""
    return isinstance(exc, neo4j_errors.Neo4jError) and exc.is_retryable()


def hidden_by_rollback(exc: BaseException) -> bool:
    """``rejected_before_commit`` for an error ``server_errors`` took from behind the
    driver's rollback: the driver's own retry never saw it. Others it has already retried
    for its whole retry time, so running them again would only multiply that wait."""
    hidden = isinstance(exc.__context__, neo4j_errors.ResultFailedError)
    return hidden and rejected_before_commit(exc)


translate_errors = error_translator(
    "Neo4j",
    unavailable=(
        neo4j_errors.ServiceUnavailable,
        neo4j_errors.SessionExpired,
        neo4j_errors.AuthError,
    ),
    failures=(neo4j_errors.Neo4jError, neo4j_errors.DriverError),
)
"""``with translate_errors(what):`` re-raises driver failures as ``BackendUnavailableError``
(no server, expired session, bad credentials) or ``BackendError``."""
