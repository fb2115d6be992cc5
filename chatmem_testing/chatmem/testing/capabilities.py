"""The capability gate: shared capability tests run only for a class that claims it, and a
claim always runs them (the contract suite checks that they were collected)."""

from __future__ import annotations

import pytest

from chatmem.core.backend import BaseChatMemoryRepository, Capability

#: Every optional capability a repository class may list in ``capabilities``.
KNOWN_CAPABILITIES = frozenset({Capability.TTL, Capability.SEARCH, Capability.LABELS})


def require_capability(repository: BaseChatMemoryRepository, capability: str) -> None:
    """Skip (with the reason) unless the repository's class claims ``capability``."""
    cls = type(repository)
    if capability not in cls.capabilities:
        pytest.skip(f"{cls.__name__} does not claim the {capability!r} capability")
