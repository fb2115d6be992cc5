"""The shared conformance suite. One line in a test module collects all of it::

    from chatmem.testing.suite import *  # noqa: F403

Every ``test_*`` function of the modules below is exported (the plugin supplies the
fixtures); a name defined twice is an import error, so no shared test can shadow another.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from . import (
    test_async,
    test_concurrency,
    test_contract,
    test_default_path,
    test_labels,
    test_search,
    test_token_window,
    test_ttl,
    test_turns,
    test_window,
)

MODULES: tuple[ModuleType, ...] = (
    test_contract,
    test_concurrency,
    test_default_path,
    test_turns,
    test_window,
    test_token_window,
    test_ttl,
    test_search,
    test_labels,
    test_async,
)


def shared_tests() -> dict[str, Any]:
    """Every shared test function by name, across the suite's modules."""
    found: dict[str, Any] = {}
    for module in MODULES:
        for name, value in vars(module).items():
            if name.startswith("test_") and callable(value):
                if name in found:
                    raise ImportError(f"{name} is defined in two suite modules")
                found[name] = value
    return found


globals().update(shared_tests())
__all__ = sorted(shared_tests())
