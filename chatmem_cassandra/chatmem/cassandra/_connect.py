"""The one way a Cassandra store connects from a URL: the chat and the memory-record
repositories build their ``Cluster`` here, with the same policies and timeouts."""

from __future__ import annotations

from typing import Any

from chatmem.core import InvalidArgumentError
from chatmem.core.backend import require

from ._config import parse_url

DEFAULT_REQUEST_TIMEOUT = 10.0
"""Seconds a statement may take before the driver gives up (BackendUnavailableError)."""
DEFAULT_CONNECT_TIMEOUT = 5.0
"""Seconds a connection attempt may take."""


def check_seconds(argument: str, value: object) -> None:
    """A positive number of seconds, else InvalidArgumentError naming ``argument``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InvalidArgumentError(argument, f"must be a positive number of seconds: {value!r}")


def cluster_for_url(
    url: str, options: dict[str, Any], *, request_timeout: float, connect_timeout: float
) -> Any:
    """A ``Cluster`` (not yet connected) for
    ``cassandra://[user:pw@]host[:port][,host...][/keyspace][?local_dc=dc]``; the URL's
    keyspace becomes ``options["keyspace"]`` unless the caller set one. Validates the
    timeouts before any I/O. Rows come back as plain tuples (every reader here takes
    tuples, named tuples or dicts)."""
    check_seconds("request_timeout", request_timeout)
    check_seconds("connect_timeout", connect_timeout)
    require("cassandra", "cassandra")
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
    from cassandra.query import tuple_factory

    target = parse_url(url)
    if target.keyspace is not None:
        options.setdefault("keyspace", target.keyspace)
    policy = TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=target.local_dc))
    auth = (
        PlainTextAuthProvider(target.username, target.password or "") if target.username else None
    )
    return Cluster(
        list(target.contact_points),
        port=target.port,
        auth_provider=auth,
        execution_profiles={
            EXEC_PROFILE_DEFAULT: ExecutionProfile(
                load_balancing_policy=policy,
                request_timeout=request_timeout,
                # plain tuples: the default named tuples build a class per result, on the
                # driver's I/O thread under the GIL (measured: ~100x the cost of a tuple)
                row_factory=tuple_factory,
            )
        },
        connect_timeout=connect_timeout,
        control_connection_timeout=connect_timeout,
    )
