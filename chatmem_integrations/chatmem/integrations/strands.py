"""Strands Agents: a chatmem store behind Strands' ``SessionRepository``. Needs
``pip install "chatmem[strands]"``.

``ChatmemSessionManager(session_id, repository)`` is Strands' ``RepositorySessionManager`` on
any chatmem repository (``repository_from_url(url)``)::

    agent = Agent(model=model, session_manager=ChatmemSessionManager("user-42", repository))

Strands calls its session repository synchronously (from its hooks, also inside
``invoke_async``), so ``ChatmemSessionRepository`` takes a sync chatmem repository;
``AsyncChatmemSessionRepository`` is the same repository on an async one, for async code that
reads or edits sessions outside an agent.

Layout (``_strands_codec``): a session's records (the session, its agents, its multi-agents)
in ``strands/s/<session>``; each agent's messages in ``strands/m/<session>/<agent>`` as
chatmem messages in chatmem's idiom, so ``chatmem show`` prints the conversation, with the exact
``SessionMessage`` in their metadata. Semantics follow the repository Strands' own tests use:
creating a session, agent or message whose id is taken raises ``SessionException``, as does
updating one that is not stored; updates keep the stored ``created_at``; every write is one
atomic edit of one conversation (concurrent writers lose nothing). ``list_messages`` reads the
agent's conversation once and pages it by message id, as Strands' file store reads its folder.
"""

from __future__ import annotations

from typing import Any

from chatmem.core import InvalidArgumentError, repository_from_url
from chatmem.core.backend import BaseChatMemoryRepository, require

require("strands", "strands")

from strands.session.repository_session_manager import RepositorySessionManager  # noqa: E402
from strands.session.session_repository import SessionRepository  # noqa: E402

from ._async.strands_sessions import AsyncStrandsSessions  # noqa: E402
from ._strands_codec import messages_id, records_id  # noqa: E402
from ._sync.strands_sessions import StrandsSessions  # noqa: E402

__all__ = [
    "AsyncChatmemSessionRepository",
    "ChatmemSessionManager",
    "ChatmemSessionRepository",
    "messages_id",
    "records_id",
]


class ChatmemSessionRepository(StrandsSessions, SessionRepository):
    """Strands' ``SessionRepository`` on a sync chatmem repository (the module docstring)."""

    def __init__(self, repository: BaseChatMemoryRepository) -> None:
        if not isinstance(repository, BaseChatMemoryRepository):
            raise InvalidArgumentError(
                "repository",
                "must be a sync chatmem repository (repository_from_url(url)): Strands calls "
                "its session repository synchronously",
            )
        super().__init__(repository)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> ChatmemSessionRepository:
        """A session repository on the chatmem repository of ``url`` (``options`` go to it)."""
        repository = repository_from_url(url, **options)
        if not isinstance(repository, BaseChatMemoryRepository):
            raise InvalidArgumentError("url", "names a store without chatmem's base repository")
        return cls(repository)


class AsyncChatmemSessionRepository(AsyncStrandsSessions):
    """The same operations as coroutines, on an async chatmem repository."""


class ChatmemSessionManager(RepositorySessionManager):
    """Strands' ``RepositorySessionManager`` on ``ChatmemSessionRepository(repository)``."""

    def __init__(
        self, session_id: str, repository: BaseChatMemoryRepository, **kwargs: Any
    ) -> None:
        super().__init__(
            session_id=session_id,
            session_repository=ChatmemSessionRepository(repository),
            **kwargs,
        )
