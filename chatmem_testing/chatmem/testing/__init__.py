"""chatmem.testing: the conformance kit that any backend, ours or a third party's, runs.

- ``Harness`` (and ``ServerInfo``, ``Unavailable``, the helpers): start a server and make
  isolated repositories on it; register it under a name in the ``chatmem.harnesses``
  entry-point group, or pass ``--harness module:Class``.
- ``chatmem.testing.plugin``: the pytest plugin (``-p chatmem.testing.plugin``).
- ``chatmem.testing.suite``: the shared tests (``from chatmem.testing.suite import *``),
  the optional capabilities (TTL, search, labels) gated by the repository class's
  ``capabilities``.
"""

from .capabilities import KNOWN_CAPABILITIES, require_capability
from .harness import (
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
from .registry import (
    ENTRY_POINT_GROUP,
    HarnessNotFoundError,
    harness_from_spec,
    load_harness,
    registered_harnesses,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "KNOWN_CAPABILITIES",
    "Harness",
    "HarnessNotFoundError",
    "ServerInfo",
    "Unavailable",
    "cache_dir",
    "docker_available",
    "free_port",
    "harness_from_spec",
    "load_harness",
    "registered_harnesses",
    "require_capability",
    "stop_process",
    "tail",
    "unique_suffix",
    "wait_for_port",
]
