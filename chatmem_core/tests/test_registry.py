"""The URL registry itself (``chatmem.core._registry``), with no store of ours: the in-memory
scheme, an unknown scheme, and a third-party distribution registering schemes in the
``chatmem.backends`` group (read through ``importlib.metadata``, as for ours). The registry
on our own stores is tested in ``conformance_tests/test_url_registry.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chatmem.core import (
    AsyncInMemoryChatMemoryRepository,
    InMemoryChatMemoryRepository,
    async_repository_class_for_url,
    repository_class_for_url,
)


def test_memory_is_cores_own_scheme() -> None:
    assert repository_class_for_url("memory:") is InMemoryChatMemoryRepository
    assert async_repository_class_for_url("memory:") is AsyncInMemoryChatMemoryRepository


def test_an_unknown_scheme_lists_the_known_ones() -> None:
    from chatmem.core import InvalidArgumentError, repository_class_for_url

    with pytest.raises(InvalidArgumentError, match=r"known schemes:.*postgresql"):
        repository_class_for_url("db2://h/x")


FIXTURE = Path(__file__).resolve().parents[2] / "conformance_tests/fixtures/thirdparty_backend"


def test_a_third_party_store_registered_in_the_group_is_found_like_ours(tmp_path: Path) -> None:
    """A distribution on ``sys.path`` that registers schemes in ``chatmem.backends`` (the
    fixture package ``dictstore``, plus a scheme whose driver is missing): the registry finds
    it through ``importlib.metadata`` exactly as it finds chatmem's own."""
    info = tmp_path / "chatmem_dictstore-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: chatmem-dictstore\nVersion: 0.0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[chatmem.backends]\n"
        "dictstore = dictstore:DictChatMemoryRepository\n"
        "fancystore = fancy_driver_nowhere_xyz:FancyChatMemoryRepository [fancy]\n"
    )
    code = textwrap.dedent(
        """
        from chatmem.core import (
            InvalidArgumentError, MissingDependencyError, UserMessage,
            async_repository_class_for_url, repository_class_for_url, repository_from_url,
        )
        from dictstore import DictChatMemoryRepository

        assert repository_class_for_url("DictStore://") is DictChatMemoryRepository
        repo = repository_from_url("dictstore://")
        assert type(repo) is DictChatMemoryRepository
        repo.save_all("c", [UserMessage("hi")])
        assert repo.find_by_conversation_id("c") == [UserMessage("hi")]
        try:
            repository_class_for_url("nosuch://x")
        except InvalidArgumentError as exc:
            print(exc)
        try:
            async_repository_class_for_url("dictstore://")
        except InvalidArgumentError as exc:
            print(exc)
        try:
            repository_from_url("fancystore://x")
        except MissingDependencyError as exc:
            assert isinstance(exc, ImportError) and exc.extra == "fancy"
            print(exc)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(FIXTURE / "src")])}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    unknown, no_twin, missing = done.stdout.splitlines()
    assert unknown.startswith("url: unknown scheme 'nosuch'; known schemes: ")
    known = unknown.split("known schemes: ")[1].split(", ")
    assert {"dictstore", "fancystore", "memory", "postgresql", "sqlite"} <= set(known)
    assert known == sorted(known)
    assert no_twin == (
        "url: dictstore has no class AsyncDictChatMemoryRepository (no async twin for 'dictstore')"
    )
    assert missing == (
        'chatmem-dictstore needs the "fancy_driver_nowhere_xyz" package: '
        'pip install "chatmem-dictstore[fancy]"'
    )
