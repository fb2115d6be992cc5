"""Translate redis-py exceptions into chatmem's error tree (driver error as ``__cause__``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chatmem.core import BackendError, BackendUnavailableError, SchemaError
from redis import exceptions as rx

_MISSING_MODULE = ("unknown command", "unknown redis command", "json.", "ft.")
MISSING_INDEX = ("no such index", "unknown index name", "unknown index")


@contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Run a block of Redis I/O; re-raise driver failures as chatmem errors naming ``what``."""
    try:
        yield
    except (rx.ConnectionError, rx.TimeoutError) as exc:
        raise BackendUnavailableError(f"{what}: Redis is unreachable: {exc}") from exc
    except rx.ResponseError as exc:
        text = str(exc).lower()
        if any(m in text for m in MISSING_INDEX):
            raise SchemaError(
                f"{what}: the search index does not exist; create it with "
                f'initialize_schema="always" or repo.create_schema() ({exc})'
            ) from exc
        if "unknown" in text and any(m in text for m in _MISSING_MODULE):
            raise SchemaError(
                f"{what}: the server lacks the RedisJSON and RediSearch modules "
                f"(use Redis Stack or Redis 8 with its modules): {exc}"
            ) from exc
        raise BackendError(f"{what}: {exc}") from exc
    except rx.RedisError as exc:
        raise BackendError(f"{what}: {exc}") from exc
