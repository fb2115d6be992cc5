# Generated from chatmem_cassandra/chatmem/cassandra/_async/record_state.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The record store's statement runner (prepared once, bound, run; logged batches) and its
state entries, as a mixin of ``CassandraMemoryRecordRepository``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from chatmem.core.backend import from_micros, to_micros
from chatmem.core.longterm import BaseMemoryRecordRepository, StateEntry

from .._errors import translate_errors
from .._native._blocking import execute, prepare
from .._native.policies import LWT_RETRY_POLICY, is_conditional
from .._record_schema import MemoryCql


def values_of(row: Any) -> Sequence[Any]:
    """Row values in column order, whatever row factory the caller's session uses."""
    if isinstance(row, tuple):
        return row
    return list(row.values()) if isinstance(row, Mapping) else row


def _entry(namespace: str, row: Any) -> StateEntry:
    key, value, version, updated = values_of(row)
    return StateEntry(
        namespace=namespace,
        key=key,
        value=value or "",  # Cassandra reads an empty text back as empty (or null)
        version=int(version),
        updated_at=from_micros(int(updated)),
    )


class CassandraRecordStatements(BaseMemoryRecordRepository):
    """Prepared statements on ``self._session`` (``self._cql``), and the state hooks."""

    _session: Any
    _cql: MemoryCql
    _prepared: dict[str, Any]

    def _ps(self, name: str) -> Any:
        prepared = self._prepared.get(name)
        if prepared is None:
            cql = getattr(self._cql, name)
            with translate_errors(f"preparing {name}"):
                prepared = prepare(self._session, cql)
            if is_conditional(cql):  # never resent after a lost coordinator (see _policies)
                prepared.retry_policy = LWT_RETRY_POLICY
            self._prepared[name] = prepared
        return prepared

    def _run(self, name: str, params: Sequence[Any], what: str) -> Any:
        statement = (self._ps(name)).bind(params)
        with translate_errors(what):
            return execute(self._session, statement)

    def _batch(self, parts: Sequence[tuple[str, Sequence[Any]]], what: str) -> None:
        """A logged batch: every part is applied eventually, even if this process dies."""
        from cassandra.query import BatchStatement, BatchType

        batch = BatchStatement(batch_type=BatchType.LOGGED)
        for name, params in parts:
            batch.add(self._ps(name), params)
        with translate_errors(what):
            execute(self._session, batch)

    # -- state entries -------------------------------------------------------------------
    def _read_state(self, namespace: str, key: str) -> StateEntry | None:
        self._ready()
        row = (self._run("state_read", [namespace, key], "reading state")).one()
        return None if row is None else _entry(namespace, row)

    def _write_state(
        self, namespace: str, key: str, value: str, expected: int | None, now: datetime
    ) -> StateEntry | None:
        self._ready()
        at = to_micros(now)
        if expected is None:
            done = self._run("state_create", [namespace, key, value, at], "writing state")
        else:
            params = [value, expected + 1, at, namespace, key, expected]
            done = self._run("state_replace", params, "writing state")
        if not done.was_applied:
            return None
        version = 1 if expected is None else expected + 1
        return StateEntry(
            namespace=namespace, key=key, value=value, version=version, updated_at=now
        )

    def _delete_state(self, namespace: str, key: str, expected: int | None) -> bool:
        self._ready()
        if expected is None:
            done = self._run("state_delete", [namespace, key], "deleting state")
        else:
            done = self._run("state_delete_at", [namespace, key, expected], "deleting state")
        return bool(done.was_applied)

    def _list_state(self, namespace: str, after: str | None, limit: int) -> list[StateEntry]:
        self._ready()
        if after is None:
            result = self._run("state_first", [namespace, limit], "listing state")
        else:
            result = self._run("state_page", [namespace, after, limit], "listing state")
        return [_entry(namespace, row) for row in result.current_rows]
