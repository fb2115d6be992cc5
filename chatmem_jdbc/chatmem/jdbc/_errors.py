"""Driver errors -> chatmem's error tree (the driver's exception stays as ``__cause__``).

``translate_errors`` covers statements run through SQLAlchemy; the fast paths that run on the
driver's own connection wrap the driver's exception the way SQLAlchemy would
(``as_dbapi_error``) and re-raise it through the same translation (``translated``).
"""

from __future__ import annotations

from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError

from chatmem.core import BackendError, BackendUnavailableError, ChatMemoryError, SchemaError
from chatmem.core.backend import error_translator

_MISSING_TABLE = (
    "no such table",
    "does not exist",
    "doesn't exist",
    "invalid object name",
    "table or view does not exist",
)


def _classify(exc: BaseException, what: str) -> ChatMemoryError | None:
    """A DBAPI error by what it means: connection lost, tables missing, or anything else."""
    if not isinstance(exc, DBAPIError):
        return None
    text = str(exc.orig).lower()
    if exc.connection_invalidated or (
        isinstance(exc, OperationalError)
        and ("connect" in text or "server has gone away" in text or "lost connection" in text)
    ):
        return BackendUnavailableError(f"{what}: database unreachable: {exc.orig}")
    if any(s in text for s in _MISSING_TABLE):
        return SchemaError(
            f"{what}: chat memory tables are missing; create them with "
            f"initialize_schema='always' or apply `chatmem schema` DDL ({exc.orig})"
        )
    return BackendError(f"{what} failed: {exc.orig}")


translate_errors = error_translator("SQL database", failures=(SQLAlchemyError,), classify=_classify)
"""``with translate_errors(what):`` re-raises SQLAlchemy/DBAPI errors as ``BackendError`` (or
its unavailable kind) or ``SchemaError`` when the tables are missing."""


def as_dbapi_error(
    exc: Exception, sql: str, dialect: Dialect, dbapi_base: type[Exception], *, lost: bool = False
) -> Exception:
    """The exception SQLAlchemy would have raised for driver exception ``exc`` (normally a
    ``DBAPIError`` subclass chosen by the driver's error class)."""
    wrapped: Exception = DBAPIError.instance(
        sql, None, exc, dbapi_base, connection_invalidated=lost, dialect=dialect
    )
    return wrapped


def translated(error: Exception, what: str) -> Exception:
    """``error`` as ``translate_errors`` would re-raise it (its ``__cause__`` set)."""
    try:
        with translate_errors(what):
            raise error
    except Exception as exc:
        return exc
    return error  # pragma: no cover (translate_errors always raises)
