"""Driver errors -> chatmem's error tree (the driver's exception stays as ``__cause__``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError

from chatmem.core import BackendError, BackendUnavailableError, SchemaError


@contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Re-raise SQLAlchemy/DBAPI errors as BackendError (or its unavailable/schema kinds)."""
    try:
        yield
    except DBAPIError as exc:
        text = str(exc.orig).lower()
        if exc.connection_invalidated or (
            isinstance(exc, OperationalError)
            and ("connect" in text or "server has gone away" in text or "lost connection" in text)
        ):
            raise BackendUnavailableError(f"{what}: database unreachable: {exc.orig}") from exc
        if any(
            s in text
            for s in (
                "no such table",
                "does not exist",
                "doesn't exist",
                "invalid object name",
                "table or view does not exist",
            )
        ):
            raise SchemaError(
                f"{what}: chat memory tables are missing; create them with "
                f"initialize_schema='always' or apply `chatmem schema` DDL ({exc.orig})"
            ) from exc
        raise BackendError(f"{what} failed: {exc.orig}") from exc
    except SQLAlchemyError as exc:
        raise BackendError(f"{what} failed: {exc}") from exc
