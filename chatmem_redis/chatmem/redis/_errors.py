"""Translate redis-py exceptions into chatmem's error tree (driver error as ``__cause__``)."""

from __future__ import annotations

from chatmem.core import ChatMemoryError, SchemaError
from chatmem.core.backend import error_translator
from redis import exceptions as rx

_MISSING_MODULE = ("unknown command", "unknown redis command", "json.", "ft.")
MISSING_INDEX = ("no such index", "unknown index name", "unknown index")


def _schema_error(exc: BaseException, what: str) -> ChatMemoryError | None:
    """A missing search index, or a server without the JSON and search modules."""
    if not isinstance(exc, rx.ResponseError):
        return None
    text = str(exc).lower()
    if any(m in text for m in MISSING_INDEX):
        return SchemaError(
            f"{what}: the search index does not exist; create it with "
            f'initialize_schema="always" or repo.create_schema() ({exc})'
        )
    if "unknown" in text and any(m in text for m in _MISSING_MODULE):
        return SchemaError(
            f"{what}: the server lacks the RedisJSON and RediSearch modules "
            f"(use Redis Stack or Redis 8 with its modules): {exc}"
        )
    return None


translate_errors = error_translator(
    "Redis",
    unavailable=(rx.ConnectionError, rx.TimeoutError),
    failures=(rx.RedisError,),
    classify=_schema_error,
)
"""``with translate_errors(what):`` runs a block of Redis I/O and re-raises driver failures
as chatmem errors naming ``what``."""
