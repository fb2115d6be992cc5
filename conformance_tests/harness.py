"""Kept for imports that predate the kit: the harness interface lives in chatmem.testing
(every public name of ``chatmem.testing.harness`` is re-exported here)."""

from chatmem.testing.harness import *  # noqa: F403
from chatmem.testing.harness import Harness, ServerInfo, Unavailable  # noqa: F401
