"""The shared conformance suite, collected exactly as a third-party backend collects it."""

from chatmem.testing.suite import *  # noqa: F403
