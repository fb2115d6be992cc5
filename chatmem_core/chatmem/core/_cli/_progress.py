"""A one-line progress bar with rate and ETA, drawn on stderr only when it is a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ProgressBar:
    """``bar(done)`` redraws ``label [####------] done/total  40% 123/s ETA 0:07``.

    Nothing is drawn when ``stream`` is not a tty (pipes and logs stay clean). Redraws happen
    when the percentage changes or ``min_interval`` seconds passed, so a fast loop costs
    almost nothing. ``clock`` is injectable for tests.
    """

    WIDTH = 30

    def __init__(
        self,
        total: int | None,
        *,
        stream: TextIO | None = None,
        label: str = "",
        clock: Callable[[], float] = time.monotonic,
        min_interval: float = 0.2,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = total
        self.label = label
        self._clock = clock
        self._started = clock()
        self._min_interval = min_interval
        self._shown_percent = -1
        self._shown_at = float("-inf")
        self._width = 0

    def restart_clock(self) -> None:
        """Measure the rate from now (call after any slow set-up such as counting)."""
        self._started = self._clock()

    def render(self, done: int, now: float) -> str:
        """The bar's text for ``done`` items at clock time ``now``."""
        elapsed = max(now - self._started, 1e-9)
        rate = done / elapsed
        speed = f"{rate:,.0f}/s" if rate >= 10 else f"{rate:.1f}/s"
        if not self.total:
            return f"{self.label}{done:,} {speed} elapsed {_duration(elapsed)}"
        filled = self.WIDTH * min(done, self.total) // self.total
        percent = 100 * done // self.total
        left = self.total - done
        eta = _duration(left / rate) if rate > 0 else "?"
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        return f"{self.label}[{bar}] {done:,}/{self.total:,} {percent:3d}% {speed} ETA {eta}"

    def __call__(self, done: int) -> None:
        if not self.enabled:
            return
        now = self._clock()
        percent = 100 * done // self.total if self.total else -1
        final = bool(self.total) and done >= (self.total or 0)
        too_soon = now - self._shown_at < self._min_interval
        if not final and percent == self._shown_percent and too_soon:
            return
        self._shown_percent, self._shown_at = percent, now
        text = self.render(done, now)
        pad = " " * max(self._width - len(text), 0)
        self._width = len(text)
        self.stream.write(f"\r{text}{pad}")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled and self._width:
            self.stream.write("\n")
            self.stream.flush()
