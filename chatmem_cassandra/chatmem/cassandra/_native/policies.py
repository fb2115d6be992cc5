"""The driver retry policy of every lightweight transaction: never send one again after its
coordinator was lost mid-request.

The driver's default ``RetryPolicy`` answers a connection error (the coordinator died or the
connection dropped while the request was in flight) with "retry on the next host", for any
statement. For a lightweight transaction that is unsafe: the lost coordinator may already
have committed it (or left an accepted Paxos proposal that the next coordinator completes),
so the resent transaction finds its own write, does not apply, and the repository, taking
that for a lost race, writes the messages a second time. This policy raises instead (a
``BackendUnavailableError`` whose outcome is unknown, as for a timed-out transaction); every
other decision stays the default's: an ``Unavailable`` (nothing was attempted) still moves
to the next host, and server-side CAS write timeouts are still raised, never retried.
"""

from __future__ import annotations

from typing import Any

from cassandra.connection import ConnectionException
from cassandra.policies import RetryPolicy


class LwtRetryPolicy(RetryPolicy):  # type: ignore[misc]  # the driver is untyped
    """``RetryPolicy``, except that a connection error mid-request is raised, not resent."""

    def on_request_error(
        self, query: Any, consistency: Any, error: Any, retry_num: int
    ) -> tuple[int, Any]:
        if isinstance(error, ConnectionException):
            return self.RETHROW, None
        decision: tuple[int, Any] = super().on_request_error(query, consistency, error, retry_num)
        return decision


LWT_RETRY_POLICY = LwtRetryPolicy()
"""Shared by every conditional statement and batch (the policy keeps no state)."""


def is_conditional(cql: str) -> bool:
    """Whether a statement is a lightweight transaction (``IF`` condition, ``IF [NOT]
    EXISTS``); DDL is not passed here."""
    return " IF " in f" {cql.upper()} "
