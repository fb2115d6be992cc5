"""A pytest plugin that runs Strands' own ``RepositorySessionManager`` tests against
``ChatmemSessionRepository``.

Loaded with ``-p chatmem_integrations.tests.strands_repository_shim`` inside Strands' unpacked
source distribution (the ``agent-framework-strands`` nox session fetches it into .work/):
before the test modules are collected, the in-memory repository of their fixtures,
``tests.fixtures.mock_session_repository.MockedSessionRepository``, becomes ``ShimRepository``,
a ``ChatmemSessionRepository`` over a fresh chatmem store (SQLite when ``CHATMEM_SHIM_URL``
names one, else the in-memory repository)."""

from __future__ import annotations

import os

import pytest

from chatmem.core import InMemoryChatMemoryRepository, repository_from_url
from chatmem.integrations.strands import ChatmemSessionRepository


class ShimRepository(ChatmemSessionRepository):
    """``MockedSessionRepository()`` as a ``ChatmemSessionRepository`` on a fresh store."""

    def __init__(self) -> None:
        url = os.environ.get("CHATMEM_SHIM_URL")
        repository = repository_from_url(url) if url else InMemoryChatMemoryRepository()
        for cid in repository.find_conversation_ids():  # each test starts from an empty store
            repository.delete_by_conversation_id(cid)
        super().__init__(repository)  # type: ignore[arg-type]


def pytest_configure(config: pytest.Config) -> None:
    import tests.fixtures.mock_session_repository as fixtures

    fixtures.MockedSessionRepository = ShimRepository  # type: ignore[misc,assignment]
