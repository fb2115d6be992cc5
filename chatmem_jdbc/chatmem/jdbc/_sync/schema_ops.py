# Generated from chatmem_jdbc/chatmem/jdbc/_async/schema_ops.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""Creating and checking the tables ``_schema.py`` defines: the only I/O on the shape, as a
mixin of the repository (``create_schema`` and the ``"never"`` mode's check call it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from chatmem.core.backend import retry

from .._errors import translate_errors
from .._schema import is_create_race
from .engine import on_connection, to_the_end
from .transactions import JdbcTransactions


class JdbcSchemaOps(JdbcTransactions):
    """Creates the tables when missing (racing creators tolerated) and lists the missing ones."""

    def _create_schema(self) -> bool:
        what = "creating the chat memory schema"
        with translate_errors(what), self._serial:
            if self.dialect.embedded:
                return retry(self._create_in_transaction, what=what)
            return retry(self._create_on_server, attempts=5, what=what, retry_on=is_create_race)

    def _create_in_transaction(self) -> bool | None:
        try:
            with self._transaction() as conn:
                on_connection(conn, self.tables.metadata.create_all, checkfirst=True)
            return True
        except DBAPIError as exc:
            if self.dialect.is_retryable(exc) or is_create_race(exc):
                return None
            raise

    def _create_on_server(self) -> bool:
        with self.engine.begin() as conn:
            on_connection(conn, self.tables.metadata.create_all, checkfirst=True)
        return True

    def _missing_tables(self) -> list[str]:
        """The tables of this repository that the database lacks (``"never"`` mode check)."""
        return to_the_end(self._find_missing_tables())

    def _find_missing_tables(self) -> list[str]:
        names = (self.tables.conversations.name, self.tables.messages.name)
        what = "checking the chat memory schema"
        with translate_errors(what), self._serial, self.engine.connect() as conn:
            present = on_connection(conn, _present_tables, names)
        return [f"table {n}" for n in names if n not in present]


def _present_tables(conn: Any, names: Sequence[str]) -> set[str]:
    inspector = sa.inspect(conn)
    return {n for n in names if inspector.has_table(n)}
