"""Driver errors -> chatmem's error tree (the driver's exception stays as ``__cause__``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chatmem.core import BackendError, BackendUnavailableError, ChatMemoryError
from neo4j import exceptions as neo4j_errors

_UNAVAILABLE = (
    neo4j_errors.ServiceUnavailable,
    neo4j_errors.SessionExpired,
    neo4j_errors.AuthError,
)


def rejected_before_commit(exc: BaseException) -> bool:
    """True for server errors that guarantee the statement did not commit and may be re-run
    (deadlock, lock timeout, not a leader); False for lost connections (outcome unknown)."""
    return isinstance(exc, neo4j_errors.Neo4jError) and exc.is_retryable()


@contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Re-raise driver failures as ``BackendUnavailableError`` or ``BackendError``."""
    try:
        yield
    except ChatMemoryError:
        raise
    except _UNAVAILABLE as exc:
        raise BackendUnavailableError(f"Neo4j unavailable during {what}: {exc}") from exc
    except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
        raise BackendError(f"Neo4j failed during {what}: {exc}") from exc
