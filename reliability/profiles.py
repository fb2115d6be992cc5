"""How much load each profile applies: ``short`` for CI, ``full`` for the stated numbers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """Sizes of the load tests; every loop in the suite is bounded by one of these."""

    name: str
    scale_threads: int
    scale_processes: int
    scale_adds: int  # window adds per writer
    restart_writers: int
    restart_adds_after: int  # adds each writer makes once the server is back
    reset_cuts: int  # mid-write cut points tried
    latency_ops: int


PROFILES = {
    "short": Profile("short", 16, 4, 20, 8, 5, 6, 10),
    "full": Profile("full", 16, 4, 500, 8, 25, 24, 40),
}
