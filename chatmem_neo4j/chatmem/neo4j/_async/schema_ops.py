"""Creating and checking the constraint and the index ``_schema`` defines: the only I/O on the
graph's shape. One creator per process at a time; waits until both are online."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import weakref
from collections.abc import Awaitable, Callable

import neo4j
from chatmem.core.backend import SchemaError
from neo4j import exceptions as neo4j_errors

from .._errors import translate_errors
from .._schema import Schema

ASYNC = True
if ASYNC:
    _SCHEMA_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
        weakref.WeakKeyDictionary()
    )

    def _schema_lock() -> asyncio.Lock:
        """One per event loop: an asyncio lock cannot be shared between loops."""
        return _SCHEMA_LOCKS.setdefault(asyncio.get_running_loop(), asyncio.Lock())

else:
    _SCHEMA_LOCK = threading.Lock()

    def _schema_lock() -> threading.Lock:
        return _SCHEMA_LOCK


SCHEMA_ONLINE_SECONDS = 300.0
"""How long ``create_schema`` waits for the constraint's and the index's population."""

_ALREADY_EXISTS = (
    "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
    "Neo.ClientError.Schema.ConstraintAlreadyExists",
    "Neo.ClientError.Schema.IndexAlreadyExists",
)

OpenSession = Callable[[str], neo4j.AsyncSession]
"""The repository's session factory, given an access mode."""
Retry = Callable[[Callable[[], Awaitable[bool]]], Awaitable[bool]]
"""The repository's retry of a statement the server rejected before commit."""


async def async_schema_state(
    session: OpenSession, schema: Schema
) -> list[tuple[str, str, bool | None]]:
    """``(kind, name, online)`` of the constraint and the index, in ``ddl()`` order;
    ``online`` is None when missing. (The constraint's backing index has its name.)"""
    names = [schema.constraint_name, schema.index_name]
    query = "SHOW INDEXES YIELD name, state WHERE name IN $names RETURN name, state"
    with translate_errors("schema check"):
        async with session(neo4j.READ_ACCESS) as s:
            result = await s.run(query, names=names)
            found = {r["name"]: r["state"] == "ONLINE" async for r in result}
    kinds = ("constraint", "index")
    return [(kind, name, found.get(name)) for kind, name in zip(kinds, names, strict=True)]


async def _run_schema(session: OpenSession, statement: str) -> bool:
    try:
        async with session(neo4j.WRITE_ACCESS) as s:
            result = await s.run(statement)
            await result.consume()
    except neo4j_errors.Neo4jError as exc:
        if exc.code not in _ALREADY_EXISTS:  # a concurrent creator won the race
            raise
    return True


async def async_create_schema(session: OpenSession, schema: Schema, retry: Retry) -> None:
    """Create the constraint and index if missing (race-safe: ``IF NOT EXISTS``, and a
    concurrent creator's win is tolerated) and wait until they are online. When both are
    already online this is one ``SHOW INDEXES`` round trip and no DDL."""
    # One creator per process at a time: concurrent CREATE CONSTRAINTs queue on the server's
    # schema lock, so the others would only wait; after the first, they see everything
    # online and run no DDL.
    async with _schema_lock():
        with translate_errors("schema initialisation"):
            state = await async_schema_state(session, schema)
            for statement, (_, _, online) in zip(schema.ddl(), state, strict=True):
                if online is None:
                    await retry(functools.partial(_run_schema, session, statement))
            # Poll instead of db.awaitIndexes: that procedure holds a schema lock while it
            # waits, which blocks other processes' CREATE CONSTRAINT until it times out.
            deadline = time.monotonic() + SCHEMA_ONLINE_SECONDS
            while not all(online for _, _, online in state):
                if time.monotonic() > deadline:
                    waiting = [name for _, name, online in state if not online]
                    raise SchemaError(f"{waiting} not online after {SCHEMA_ONLINE_SECONDS:.0f}s")
                await asyncio.sleep(0.05)
                state = await async_schema_state(session, schema)
