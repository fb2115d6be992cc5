"""Record stores by URL: ``record_store_from_url`` finds the class registered for the URL's
scheme in the ``chatmem.memory_stores`` entry-point group (as ``repository_from_url`` does for
chat repositories in ``chatmem.backends``), so core names no store. The async twin of a store
is the registered class's name with ``Async`` in front, in the same module."""

from __future__ import annotations

import inspect
from typing import Any

from chatmem.core._errors import InvalidArgumentError
from chatmem.core._registry import MEMORY_STORES_GROUP, entry_class

from ._async.repository import AsyncBaseMemoryRecordRepository
from ._repository import BaseMemoryRecordRepository


def record_store_class_for_url(url: str) -> type[BaseMemoryRecordRepository]:
    """The record store class registered for ``url``'s scheme, its package imported; an
    unknown scheme is an ``InvalidArgumentError`` listing the registered ones, a missing
    driver a ``MissingDependencyError`` naming the extra. Connects to nothing."""
    cls = entry_class(MEMORY_STORES_GROUP, url)
    if not issubclass(cls, BaseMemoryRecordRepository):
        raise InvalidArgumentError(
            "url", f"{cls.__module__}.{cls.__qualname__} is not a BaseMemoryRecordRepository"
        )
    return cls


def record_store_from_url(url: str, **options: Any) -> BaseMemoryRecordRepository:
    """The record store for ``url`` on a client of its own (``close()`` closes it);
    ``options`` go to the class's ``from_url`` (its constructor's keywords)."""
    store = record_store_class_for_url(url).from_url(url, **options)  # type: ignore[attr-defined]
    assert isinstance(store, BaseMemoryRecordRepository)
    return store


def async_record_store_class_for_url(url: str) -> type[AsyncBaseMemoryRecordRepository]:
    """The async twin of ``record_store_class_for_url``: ``Async<Store>MemoryRecordRepository``."""
    cls = entry_class(MEMORY_STORES_GROUP, url, "Async")
    if not issubclass(cls, AsyncBaseMemoryRecordRepository):
        raise InvalidArgumentError(
            "url", f"{cls.__module__}.{cls.__qualname__} is not an AsyncBaseMemoryRecordRepository"
        )
    return cls


async def async_record_store_from_url(url: str, **options: Any) -> AsyncBaseMemoryRecordRepository:
    """The async record store for ``url`` (same options as the sync one): ``store = await
    async_record_store_from_url(url)``; ``await store.close()`` closes the client it made."""
    store = await async_record_store_class_for_url(url).from_url(url, **options)  # type: ignore[attr-defined]
    assert isinstance(store, AsyncBaseMemoryRecordRepository)
    return store


def takes_option(function: Any, name: str, *, forwards_to: Any = None) -> bool:
    """Whether ``function`` accepts keyword ``name``; when it only has ``**options``, whether
    ``forwards_to`` (the constructor its options go to) does."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    found = parameters.get(name)
    if found is not None:
        return found.kind in (found.POSITIONAL_OR_KEYWORD, found.KEYWORD_ONLY)
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return forwards_to is not None and takes_option(forwards_to, name)
    return False
