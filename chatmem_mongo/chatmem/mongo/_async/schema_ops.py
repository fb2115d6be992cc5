"""Creating and checking the indexes ``_schema.py`` defines: the only I/O on the shape."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure

from .._schema import POSITION_INDEX, TTL_INDEX, UPDATED_AT, key_of

# MongoDB error codes met while reconciling indexes concurrently with other processes.
_INDEX_NOT_FOUND = 27
_INDEX_CONFLICTS = frozenset({85, 86})  # IndexOptionsConflict, IndexKeySpecsConflict


async def _indexes_of(collection: AsyncCollection[Any]) -> list[MutableMapping[str, Any]]:
    cursor = await collection.list_indexes()
    return await cursor.to_list()


async def async_missing_indexes(
    collection: AsyncCollection[Any], ttl_seconds: int | None
) -> list[str]:
    """The indexes ``ensure_indexes`` would create or change; empty when all match."""
    keys = {tuple(key_of(ix)): ix for ix in await _indexes_of(collection)}
    missing = [] if tuple(POSITION_INDEX) in keys else ["position index"]
    ttl = keys.get(tuple(TTL_INDEX))
    expiry = None if ttl is None else ttl.get("expireAfterSeconds")
    if ttl_seconds is not None and (expiry is None or int(expiry) != ttl_seconds):
        missing.append(f"TTL index on {UPDATED_AT} ({ttl_seconds} s)")
    return missing


async def async_ensure_indexes(collection: AsyncCollection[Any], ttl_seconds: int | None) -> None:
    """Create the position index; make the TTL index on ``updated_at`` match ``ttl_seconds``.

    A TTL index with another expiry is dropped and created again (as Spring AI does); with
    ``ttl_seconds`` None an existing TTL index is dropped. Safe to run from many processes at
    once: a concurrent drop or create of the same index is tolerated and re-checked. When
    everything already matches, this is one ``listIndexes`` and no DDL.
    """
    indexes = await _indexes_of(collection)
    if not any(key_of(ix) == POSITION_INDEX for ix in indexes):
        await collection.create_index(POSITION_INDEX)
    for attempt in range(10):
        if attempt:  # a concurrent creator changed the TTL index: look again
            indexes = await _indexes_of(collection)
        current = next((ix for ix in indexes if key_of(ix) == TTL_INDEX), None)
        expiry = None if current is None else current.get("expireAfterSeconds")
        if current is not None and expiry is None:
            return  # a plain index on updated_at someone else made: not ours to drop
        if expiry is not None and int(expiry) == ttl_seconds:
            return
        if current is not None:
            try:
                await collection.drop_index(current["name"])
            except OperationFailure as exc:
                if exc.code != _INDEX_NOT_FOUND:
                    raise
        if ttl_seconds is None:
            return
        try:
            await collection.create_index(TTL_INDEX, expireAfterSeconds=ttl_seconds)
        except OperationFailure as exc:
            if exc.code not in _INDEX_CONFLICTS:
                raise
            continue  # another process created it with other options: look again
        return
