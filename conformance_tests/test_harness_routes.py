"""The provisioning routes' own rules (no server needed): why Docker is unusable, which
image a testcontainers route runs, and how ``CHATMEM_ROUTE`` is read."""

from __future__ import annotations

import sys

import pytest

from chatmem.testing.harness import Unavailable, docker_available, forced_route
from chatmem.testing.harness import testcontainers_image as image_for
from chatmem.testing.provision import MemoryHarness


def test_docker_sdk_missing_is_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docker", None)  # makes `import docker` raise
    status = docker_available()
    assert not status
    assert "Docker SDK missing" in status.reason


def test_no_daemon_is_told_apart(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    pytest.importorskip("docker", reason="the test extra brings the Docker SDK")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    status = docker_available()
    assert not status
    assert status.reason.startswith("no Docker daemon answers at unix://")


class _PinnedImage(MemoryHarness):
    """A harness pinning an official image, as the stores' own do (this module runs in every
    conformance session, so it imports no store's harness: those need their drivers)."""

    name = "postgres"
    testcontainers_image = "postgres:15.8"


def test_image_override_per_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = _PinnedImage()
    monkeypatch.delenv("CHATMEM_TC_IMAGE_POSTGRES", raising=False)
    assert image_for(harness) == "postgres:15.8"
    monkeypatch.setenv("CHATMEM_TC_IMAGE_POSTGRES", "chatmem/postgres:15")
    assert image_for(harness) == "chatmem/postgres:15"


def test_route_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATMEM_ROUTE", "Testcontainers")
    assert forced_route() == "testcontainers"
    monkeypatch.setenv("CHATMEM_ROUTE", "docker")
    with pytest.raises(Unavailable, match="CHATMEM_ROUTE must be one of"):
        forced_route()
