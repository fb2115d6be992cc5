"""Kept for imports that predate the kit: the shared test data is chatmem.testing.corpus."""

from chatmem.testing.corpus import *  # noqa: F403
