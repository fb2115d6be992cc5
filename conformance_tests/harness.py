"""Kept for imports that predate the kit: the harness interface lives in chatmem.testing."""

from chatmem.testing.harness import (
    Harness,
    ServerInfo,
    Unavailable,
    cache_dir,
    docker_available,
    free_port,
    stop_process,
    tail,
    unique_suffix,
    wait_for_port,
)

__all__ = [
    "Harness",
    "ServerInfo",
    "Unavailable",
    "cache_dir",
    "docker_available",
    "free_port",
    "stop_process",
    "tail",
    "unique_suffix",
    "wait_for_port",
]
