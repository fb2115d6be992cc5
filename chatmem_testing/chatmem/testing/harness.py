"""The harness interface: how the conformance suite gets a real server and repositories.

One ``Harness`` subclass per backend, registered under a name in the ``chatmem.harnesses``
entry-point group (or given as ``--harness module:Class``). Provisioning tries, in order:

1. ``env_var`` (for example ``CHATMEM_TEST_POSTGRES_URL``): an explicit server URL;
2. ``start_local(workdir)``: a real server started by our own tooling on a free loopback port;
3. ``start_testcontainers()``: only when a Docker daemon answers (``docker_available``), on
   the pinned official image or the one ``CHATMEM_TC_IMAGE_<NAME>`` names;
4. otherwise the backend is skipped with the collected reasons, unless it is required
   (``CHATMEM_REQUIRE_BACKENDS=name,name`` or ``all``), in which case the run fails.

``CHATMEM_ROUTE=testcontainers`` (or ``local``, ``env``) forces one route. Each route
returns a ``ServerInfo`` naming the product and version it reached (a stand-in names itself
in ``stand_in``; a container names its image in ``extra["image"]``). ``make_repository``
gives every test an isolated repository (its own table, prefix, collection, labels or
cleared data) and ``cleanup`` removes it.

Optional capabilities claimed by the repository class (``capabilities``) have hooks here:
``ttl_options``/``expiry_grace`` for TTL, ``search_options`` for search, ``label_options``
for labels. The shared capability tests call them only for a class that claims the feature.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

from chatmem.core import async_repository_from_url
from chatmem.core.backend import AsyncBaseChatMemoryRepository, BaseChatMemoryRepository


class Unavailable(Exception):
    """A provisioning route cannot give a server here; the message says why."""


@dataclass
class ServerInfo:
    """What a provisioning route reached."""

    product: str
    version: str
    url: str | None
    route: str  # "env", "local", "testcontainers", "embedded"
    stand_in: str | None = None
    stop: Callable[[], None] = lambda: None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        name = f"{self.product} {self.version}".strip()
        return f"{name} (stand-in: {self.stand_in})" if self.stand_in else name


class Harness(ABC):
    """Start a server for one backend and make isolated repositories on it."""

    name: ClassVar[str]
    env_var: ClassVar[str | None] = None
    testcontainers_image: ClassVar[str | None] = None
    also_runs: ClassVar[tuple[str, ...]] = ()
    """Backends whose own tests (``@pytest.mark.backend(name)``) also run on this harness's
    server (a second implementation of the same protocol)."""
    known_gaps: ClassVar[dict[str, tuple[str, bool]]] = {}
    """For a stand-in: test node id pattern (regex) -> (the product gap it hits, strict?);
    those tests run as expected failures, so the summary counts them apart."""
    default_path_rounds: ClassVar[tuple[int, int]] = (20, 3)
    """Fresh cold namespaces the default-path test races on: (thread rounds, process
    rounds). 20 rounds let a 1-in-12 first-use failure pass by luck with p < 0.2."""

    def from_env(self, url: str) -> ServerInfo:
        """Describe a server given by URL (probe its version)."""
        raise Unavailable("this backend takes no URL")

    def start_local(self, workdir: Path) -> ServerInfo:
        """Start a real server on loopback with our own tooling."""
        raise Unavailable("no local server route")

    def start_testcontainers(self) -> ServerInfo:
        """Start the pinned image with testcontainers (Docker machines only)."""
        raise Unavailable("no testcontainers route")

    @abstractmethod
    def make_repository(self, server: ServerInfo, **options: Any) -> BaseChatMemoryRepository:
        """A repository with its schema initialised. Without namespace options (see
        ``namespace_options``) it gets a fresh namespace sharing no data with other tests;
        with them, several repositories share one namespace (the first-use race test)."""

    async def make_async_twin(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> AsyncBaseChatMemoryRepository:
        """The async twin of ``repository`` on the same data (for ``--twin async`` runs),
        built on the running loop. The default opens ``connect_spec``'s URL and options with
        ``async_repository_from_url``; in-process stores override this."""
        spec = self.connect_spec(server, repository)
        if spec is None:
            raise Unavailable(
                f"{self.name}: connect_spec gives no URL, so no async twin (override "
                "make_async_twin)"
            )
        url, options = spec
        return await async_repository_from_url(url, **options)

    def namespace_options(self) -> dict[str, Any]:
        """Options naming a fresh, not yet created namespace (table, prefix, labels...).
        Every repository made with the same options must see one store: the default ``{}``
        is right only when ``make_repository()`` always returns views of one shared store."""
        return {}

    def connect_spec(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> tuple[str, dict[str, Any]] | None:
        """``(url, options)`` from which another process can reach the same data through
        ``chatmem.core.repository_from_url``; None for in-process stores."""
        return None

    def cleanup(self, server: ServerInfo, repository: BaseChatMemoryRepository) -> None:  # noqa: B027
        """Remove what ``make_repository`` created (tables, keys, collections)."""

    def restart(self, server: ServerInfo, downtime: float = 2.0) -> None:
        """Stop the server, wait ``downtime`` seconds, start it again on the same port with
        the same data (the reliability suite's restart-under-load test). Local routes that
        can do it override this; the others raise Unavailable saying why."""
        raise Unavailable(f"{self.name}: the {server.route} route cannot restart its server")

    def cold_default_url(self, server: ServerInfo) -> str:
        """A URL, shaped as the README shows, whose *default* namespace (the default table,
        keyspace, labels, index or collection) does not exist yet: no schema at all. The
        default-path test builds repositories from it with ``repository_from_url(url)`` and
        no options. Raise ``Unavailable`` when this backend cannot give one."""
        raise Unavailable(f"{self.name}: no cold default URL route")

    def cleanup_cold_default(self, server: ServerInfo, url: str) -> None:  # noqa: B027
        """Remove what was created under a ``cold_default_url`` (database, file, keys...)."""

    # -- capability hooks (used only when the repository class claims the capability) ----
    #: The TTL the shared TTL tests use: short, but one the store honours exactly.
    short_ttl: ClassVar[timedelta] = timedelta(seconds=3)

    def ttl_options(self, ttl: timedelta) -> dict[str, Any]:
        """Options for ``make_repository`` giving a repository whose conversations expire
        ``ttl`` after their last write."""
        return {"ttl": ttl}

    def expiry_grace(self, server: ServerInfo) -> float:
        """Seconds past the TTL the store may take to remove expired data (a purge cycle)."""
        return 5.0

    def search_options(self) -> dict[str, Any]:
        """Options for ``make_repository`` giving a repository whose search is enabled."""
        return {}

    def label_options(self, tag: str) -> dict[str, Any]:
        """Options naming a fresh label set derived from ``tag`` (a letters-only word), so
        two different tags give two stores that share no data in one namespace."""
        raise NotImplementedError(f"{type(self).__name__} claims labels: define label_options")


# -- helpers shared by harnesses -------------------------------------------------------
def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(
    port: int, timeout: float, proc: subprocess.Popen[Any] | None = None, log: Path | None = None
) -> None:
    """Wait until 127.0.0.1:port accepts, failing early (with the log) if ``proc`` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise Unavailable(f"server exited with {proc.returncode}: {tail(log)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise Unavailable(f"server did not listen on {port} within {timeout:.0f}s: {tail(log)}")


def tail(log: Path | None, lines: int = 40) -> str:
    """The end of a server log, for error messages."""
    if log is None or not log.exists():
        return "(no log)"
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def stop_process(proc: subprocess.Popen[Any], grace: float = 20.0) -> None:
    """SIGTERM, wait ``grace`` seconds, then SIGKILL."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@dataclass(frozen=True)
class DockerStatus:
    """Whether testcontainers can start containers here, and why not: the Docker SDK for
    Python is missing, no daemon answers, or the daemon is up (its version)."""

    up: bool
    reason: str

    def __bool__(self) -> bool:
        return self.up


def docker_available() -> DockerStatus:
    """Tell "SDK missing" from "no daemon" from "daemon up" (truthy only in the last case)."""
    try:
        import docker  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError as exc:
        return DockerStatus(False, f'Docker SDK missing: pip install "chatmem[test]" ({exc})')
    where = os.environ.get("DOCKER_HOST", "the default socket")
    try:
        client = docker.from_env(timeout=5)
        try:
            version = client.version().get("Version", "?")
        finally:
            client.close()
    except Exception as exc:
        return DockerStatus(False, f"no Docker daemon answers at {where}: {exc}")
    return DockerStatus(True, f"Docker daemon {version} at {where}")


ROUTES = ("auto", "env", "local", "testcontainers")


def forced_route() -> str:
    """``CHATMEM_ROUTE``: ``auto`` (env URL, then local server, then testcontainers) or one
    route only (``testcontainers`` runs the suite on containers even where a local server
    would start)."""
    route = os.environ.get("CHATMEM_ROUTE", "auto").strip().lower() or "auto"
    if route not in ROUTES:
        raise Unavailable(f"CHATMEM_ROUTE must be one of {', '.join(ROUTES)}, not {route!r}")
    return route


def testcontainers_image(harness: Harness) -> str:
    """The image for ``harness``'s testcontainers route: ``CHATMEM_TC_IMAGE_<NAME>`` (for
    example ``CHATMEM_TC_IMAGE_POSTGRES=chatmem/postgres:15``) or the pinned official one."""
    override = os.environ.get(f"CHATMEM_TC_IMAGE_{harness.name.upper()}", "").strip()
    if override:
        return override
    if not harness.testcontainers_image:
        raise Unavailable("no testcontainers route")
    return harness.testcontainers_image


def testcontainers_class(module: str, name: str) -> Any:
    """``testcontainers.<module>.<name>`` (for example ``("postgres", "PostgresContainer")``),
    or ``Unavailable`` saying which extra installs it."""
    import importlib

    try:
        return getattr(importlib.import_module(f"testcontainers.{module}"), name)
    except ImportError as exc:
        raise Unavailable(f'testcontainers missing: pip install "chatmem[test]" ({exc})') from exc


def start_container(container: Any) -> dict[str, str]:
    """Start a testcontainers container; on failure stop it and raise ``Unavailable`` with
    the end of its log. Returns the image's labels (a local stand-in image says what it is in
    ``chatmem.stand-in``, and ``chatmem.auth=none`` when it takes no credentials)."""
    ensure_image(str(container.image))
    try:
        container.start()
    except Exception as exc:
        logs = ""
        with contextlib.suppress(Exception):
            out, err = container.get_logs()
            logs = "\n".join((out + err).decode(errors="replace").splitlines()[-30:])
        with contextlib.suppress(Exception):
            container.stop()
        raise Unavailable(f"container {container.image} did not start: {exc}\n{logs}") from exc
    labels: dict[str, str] = {}
    with contextlib.suppress(Exception):
        labels = dict(container.get_wrapped_container().image.labels or {})
    return labels


def ensure_image(image: str) -> None:
    """The image is on this machine, or pulled now; ``Unavailable`` naming it otherwise (a
    machine without a registry has only the images it built)."""
    import docker  # type: ignore[import-not-found,import-untyped,unused-ignore]

    client = docker.from_env(timeout=30)
    try:
        try:
            client.images.get(image)
            return
        except docker.errors.ImageNotFound:
            pass
        try:
            client.images.pull(image)
        except Exception as exc:
            raise Unavailable(
                f"image {image} is not on this machine and cannot be pulled here ({exc})"
            ) from exc
    finally:
        client.close()


def container_extra(container: Any, labels: dict[str, str]) -> dict[str, Any]:
    """What the summary reports about a container: its image (and the stand-in it holds)."""
    return {"image": str(container.image), "stand_in": labels.get("chatmem.stand-in")}


def unique_suffix() -> str:
    """A short unique token for per-test table, prefix or collection names."""
    import uuid

    return uuid.uuid4().hex[:10]


def cache_dir(*parts: str) -> Path:
    """A cache folder outside the checkout that survives between runs on one machine."""
    base = Path(os.environ.get("CHATMEM_CACHE", Path.home() / ".cache" / "chatmem"))
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
