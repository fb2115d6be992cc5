"""Kept for imports that predate the kit: the plugin is ``chatmem.testing.plugin``.

Only plain names are re-exported here, never the pytest hooks, so loading this module can
never register the plugin twice.
"""

from chatmem.testing.plugin import _STATE, _required, provision
from chatmem.testing.registry import load_harness

__all__ = ["_STATE", "_required", "load_harness", "provision"]
