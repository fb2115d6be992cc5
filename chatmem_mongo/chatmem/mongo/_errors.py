"""Driver errors -> chatmem's error tree (the driver's exception stays as ``__cause__``)."""

from __future__ import annotations

from bson.errors import BSONError
from pymongo.errors import ConnectionFailure, DocumentTooLarge, OperationFailure, PyMongoError

from chatmem.core import ChatMemoryError, InvalidArgumentError
from chatmem.core.backend import error_translator

# BSONObjectTooLarge, and "resulting document after update is larger than 16 MiB" (two forms)
_TOO_LARGE_CODES = frozenset({10334, 17419, 17420})

TOO_LARGE = (
    "the conversation would exceed MongoDB's 16 MiB document limit (one document holds a "
    "whole conversation); keep it bounded with MessageWindowChatMemory or store large media "
    "as URIs"
)


def _too_large(exc: BaseException, what: str) -> ChatMemoryError | None:
    """A document over the size limit (nothing was written) is the caller's input: an
    InvalidArgumentError naming ``messages``."""
    if isinstance(exc, DocumentTooLarge) or (
        isinstance(exc, OperationFailure) and exc.code in _TOO_LARGE_CODES
    ):
        return InvalidArgumentError("messages", TOO_LARGE)
    return None


translate_errors = error_translator(
    "MongoDB",
    unavailable=(ConnectionFailure,),
    failures=(PyMongoError, BSONError),
    classify=_too_large,
)
"""``with translate_errors(what):`` re-raises pymongo/bson errors as ``BackendError`` (or its
unavailable kind); a document over the size limit as ``InvalidArgumentError("messages")``."""
