"""Start ``chatmem serve`` as a user would (a separate process) on a free loopback port."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chatmem.testing.harness import free_port, stop_process


@contextmanager
def serve(url: str, *args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, Path]]:
    """Run ``chatmem serve --url URL ARGS``; yield its base URL (once it answers) and the
    file its output goes to."""
    port = free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"chatmem-serve-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "chatmem.core._cli",
                "serve",
                "--url",
                url,
                "--port",
                str(port),
                *args,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"chatmem serve exited: {log.read_text()}")
            try:
                urllib.request.urlopen(base, timeout=2).close()
                break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"chatmem serve did not answer: {log.read_text()}") from None
                time.sleep(0.2)
        yield base, log
    finally:
        stop_process(proc, grace=10)
        log.unlink(missing_ok=True)
