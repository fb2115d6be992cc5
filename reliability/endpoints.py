"""How each server backend is reached through a proxy, with the timeouts users can pass.

``TIMEOUTS`` is the per-backend table the README documents: the options a user passes to
``repository_from_url`` so that a stalled connection ends in a typed error, and the bound
(seconds) the suite states and checks for that error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timeouts:
    """Options for ``repository_from_url`` and the stated bound they give, in seconds."""

    options: dict[str, Any]
    url_query: str
    stated: float
    how: str
    known_hang: str = ""
    """Why a stall still blocks this driver (reported as a known failure, not hidden)."""


TIMEOUTS: dict[str, Timeouts] = {
    "postgres": Timeouts(
        {"engine_options": {"connect_args": {"connect_timeout": 5}}},
        "",
        10.0,
        "engine_options={'connect_args': {'connect_timeout': 5}} (psycopg has no read timeout)",
        known_hang="psycopg 3 has no client-side read timeout: a statement on a stalled "
        "connection blocks until the network closes it (statement_timeout runs on the server "
        "and its error cannot get through the stall either)",
    ),
    "mariadb": Timeouts(
        {
            "engine_options": {
                "connect_args": {"connect_timeout": 5, "read_timeout": 5, "write_timeout": 5}
            }
        },
        "",
        12.0,
        "engine_options={'connect_args': {'connect_timeout': 5, 'read_timeout': 5, "
        "'write_timeout': 5}}",
    ),
    "redis": Timeouts(
        {},
        "socket_timeout=2&socket_connect_timeout=2",
        15.0,
        "URL query ?socket_timeout=2&socket_connect_timeout=2 (redis-py retries 3 times)",
    ),
    "mongo": Timeouts(
        {
            "client_options": {
                "serverSelectionTimeoutMS": 5000,
                "connectTimeoutMS": 5000,
                "socketTimeoutMS": 5000,
            }
        },
        "",
        12.0,
        "client_options={'serverSelectionTimeoutMS': 5000, 'connectTimeoutMS': 5000, "
        "'socketTimeoutMS': 5000}",
    ),
    "cassandra": Timeouts(
        {"request_timeout": 5.0, "connect_timeout": 5.0},
        "",
        12.0,
        "request_timeout=5.0, connect_timeout=5.0",
    ),
    "neo4j": Timeouts(
        {"driver_options": {"connection_timeout": 5.0, "max_transaction_retry_time": 5.0}},
        "",
        125.0,
        "driver_options={'connection_timeout': 5.0, 'max_transaction_retry_time': 5.0}; a "
        "stalled read ends after the server's connection.recv_timeout_seconds hint",
        known_hang="the neo4j driver has no client read timeout option; reads on a stalled "
        "connection end only after the server's connection.recv_timeout_seconds hint "
        "(Neo4j's server.bolt.connection_keep_alive* settings)",
    ),
}

_HOST_PORT = re.compile(r"127\.0\.0\.1:(\d+)")


def upstream_port(url: str) -> int:
    """The loopback port a harness URL points at."""
    match = _HOST_PORT.search(url)
    if match is None:
        raise ValueError(f"no 127.0.0.1:<port> in {url!r}")
    return int(match.group(1))


def through(url: str, port: int, query: str = "") -> str:
    """``url`` pointed at ``127.0.0.1:port`` instead, with ``query`` appended."""
    out = _HOST_PORT.sub(f"127.0.0.1:{port}", url, count=1)
    if query:
        out += ("&" if "?" in out else "?") + query
    return out
