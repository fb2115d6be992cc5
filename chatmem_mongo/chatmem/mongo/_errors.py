"""Driver errors -> chatmem's error tree (the driver's exception stays as ``__cause__``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bson.errors import BSONError
from pymongo.errors import ConnectionFailure, DocumentTooLarge, OperationFailure, PyMongoError

from chatmem.core import BackendError, BackendUnavailableError, InvalidArgumentError

# BSONObjectTooLarge, and "resulting document after update is larger than 16 MiB" (two forms)
_TOO_LARGE_CODES = frozenset({10334, 17419, 17420})

TOO_LARGE = (
    "the conversation would exceed MongoDB's 16 MiB document limit (one document holds a "
    "whole conversation); keep it bounded with MessageWindowChatMemory or store large media "
    "as URIs"
)


@contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Re-raise pymongo/bson errors as BackendError (or its unavailable kind); a document
    over the size limit (nothing was written) as InvalidArgumentError naming ``messages``."""
    try:
        yield
    except DocumentTooLarge as exc:
        raise InvalidArgumentError("messages", TOO_LARGE) from exc
    except ConnectionFailure as exc:
        raise BackendUnavailableError(f"{what}: MongoDB unreachable: {exc}") from exc
    except OperationFailure as exc:
        if exc.code in _TOO_LARGE_CODES:
            raise InvalidArgumentError("messages", TOO_LARGE) from exc
        raise BackendError(f"{what} failed: {exc}") from exc
    except (PyMongoError, BSONError) as exc:
        raise BackendError(f"{what} failed: {exc}") from exc
