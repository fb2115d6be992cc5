"""Creating and checking the tables ``_schema.py`` defines: the only I/O on the shape, as a
mixin of the repository (``create_schema`` and the ``"never"`` mode's check call it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from chatmem.core.backend import async_retry

from .._errors import translate_errors
from .._schema import is_create_race
from .engine import on_connection, to_the_end
from .transactions import AsyncJdbcTransactions


class AsyncJdbcSchemaOps(AsyncJdbcTransactions):
    """Creates the tables when missing (racing creators tolerated) and lists the missing ones."""

    async def _create_schema(self) -> bool:
        what = "creating the chat memory schema"
        with translate_errors(what):
            async with self._serial:
                if self.dialect.embedded:
                    return await async_retry(self._create_in_transaction, what=what)
                return await async_retry(
                    self._create_on_server, attempts=5, what=what, retry_on=is_create_race
                )

    async def _create_in_transaction(self) -> bool | None:
        try:
            async with self._transaction() as conn:
                await on_connection(conn, self.tables.metadata.create_all, checkfirst=True)
            return True
        except DBAPIError as exc:
            if self.dialect.is_retryable(exc) or is_create_race(exc):
                return None
            raise

    async def _create_on_server(self) -> bool:
        async with self.engine.begin() as conn:
            await on_connection(conn, self.tables.metadata.create_all, checkfirst=True)
        return True

    async def _missing_tables(self) -> list[str]:
        """The tables of this repository that the database lacks (``"never"`` mode check)."""
        return await to_the_end(self._find_missing_tables())

    async def _find_missing_tables(self) -> list[str]:
        names = (self.tables.conversations.name, self.tables.messages.name)
        what = "checking the chat memory schema"
        with translate_errors(what):
            async with self._serial, self.engine.connect() as conn:
                present = await on_connection(conn, _present_tables, names)
        return [f"table {n}" for n in names if n not in present]


def _present_tables(conn: Any, names: Sequence[str]) -> set[str]:
    inspector = sa.inspect(conn)
    return {n for n in names if inspector.has_table(n)}
