"""A small Toxiproxy client: start ``toxiproxy-server`` on loopback and drive its HTTP API.

Toxiproxy is a TCP proxy whose faults ("toxics") are switched on and off over HTTP. The
server binary is built by ``scripts/install/toxiproxy.sh`` into
``~/.cache/chatmem/toxiproxy-<version>/``. Only ``urllib`` is used, so the suite needs no
extra dependency.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chatmem.testing.harness import Unavailable, cache_dir, free_port, stop_process, wait_for_port

VERSION = "2.5.0"
"""The pinned version (``go install ...@latest`` resolved to it on the Go module proxy)."""


def find_binary() -> Path:
    """The cached ``toxiproxy-server``, preferring the pinned version."""
    override = os.environ.get("CHATMEM_TOXIPROXY")
    if override:
        return Path(override)
    pinned = cache_dir() / f"toxiproxy-{VERSION}" / "toxiproxy-server"
    if pinned.exists():
        return pinned
    found = sorted(glob.glob(str(cache_dir() / "toxiproxy-*" / "toxiproxy-server")))
    if not found:
        raise Unavailable("toxiproxy-server not built: run scripts/install/toxiproxy.sh")
    return Path(found[-1])


@dataclass
class Proxy:
    """One proxy: clients connect to ``127.0.0.1:listen_port``, it forwards to ``upstream``."""

    api: Toxiproxy
    name: str
    listen_port: int
    upstream: str

    def add_toxic(
        self, kind: str, stream: str = "downstream", name: str | None = None, **attributes: Any
    ) -> str:
        """Switch a toxic on (``latency``, ``timeout``, ``reset_peer``, ``limit_data``...)."""
        toxic = name or f"{kind}_{stream}"
        body = {"name": toxic, "type": kind, "stream": stream, "attributes": attributes}
        self.api.request("POST", f"/proxies/{self.name}/toxics", body)
        return toxic

    def remove_toxic(self, name: str) -> None:
        self.api.request("DELETE", f"/proxies/{self.name}/toxics/{name}")

    def clear(self) -> None:
        """Remove every toxic and make sure the proxy accepts connections."""
        for toxic in self.api.request("GET", f"/proxies/{self.name}/toxics") or []:
            self.remove_toxic(toxic["name"])
        self.set_enabled(True)

    def set_enabled(self, enabled: bool) -> None:
        """Disabled: existing connections are closed and new ones refused (server "down")."""
        self.api.request("POST", f"/proxies/{self.name}", {"enabled": enabled})

    @contextmanager
    def toxic(self, kind: str, stream: str = "downstream", **attributes: Any) -> Iterator[str]:
        """A toxic for the duration of a ``with`` block."""
        name = self.add_toxic(kind, stream, **attributes)
        try:
            yield name
        finally:
            self.remove_toxic(name)


class Toxiproxy:
    """A running ``toxiproxy-server`` and its HTTP API on 127.0.0.1."""

    def __init__(self, workdir: Path) -> None:
        binary = find_binary()
        self.port = free_port()
        self.log = workdir / "toxiproxy.log"
        self._sink = self.log.open("wb")
        self._proc = subprocess.Popen(
            [str(binary), "-host", "127.0.0.1", "-port", str(self.port)],
            stdin=subprocess.DEVNULL,
            stdout=self._sink,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(self.port, 30, self._proc, self.log)
            self.version = str(self.request("GET", "/version"))
        except BaseException:
            self.close()
            raise

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One API call; an HTTP error becomes a RuntimeError with the server's message."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"toxiproxy {method} {path}: {exc.code} {exc.read()!r}") from exc
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode().strip().strip('"')

    def proxy(self, name: str, upstream_port: int) -> Proxy:
        """A new proxy on a free loopback port forwarding to ``127.0.0.1:upstream_port``."""
        listen = free_port()
        upstream = f"127.0.0.1:{upstream_port}"
        body = {"name": name, "listen": f"127.0.0.1:{listen}", "upstream": upstream}
        self.request("POST", "/proxies", body)
        return Proxy(self, name, listen, upstream)

    def close(self) -> None:
        stop_process(self._proc, grace=5)
        self._sink.close()
