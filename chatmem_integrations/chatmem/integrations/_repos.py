"""The repositories an adapter was given: a sync one, an async one, or both (pure checks).

A framework class with sync and async methods (LangChain's history, LlamaIndex's
``BaseChatStore``, LangGraph's saver and store) takes ``repository=`` for its sync methods and
``async_repository=`` for its async ones. With both, they must be two clients of one store;
with only a sync one the async methods run it in a worker thread (``in_thread``); with only
an async one the sync methods raise ``InvalidArgumentError`` naming what to pass.
"""

from __future__ import annotations

from chatmem.core import AsyncChatMemoryRepository, ChatMemoryRepository, InvalidArgumentError
from chatmem.core.backend import is_async_repository

from ._in_thread import in_thread

__all__ = ["TwinRepositories", "Twins", "pick"]


class Twins:
    """``sync``: the repository the sync methods use (None: async only); ``aio``: the one the
    async methods await (the async repository, or the sync one in worker threads)."""

    def __init__(
        self,
        sync: ChatMemoryRepository | None,
        given_async: AsyncChatMemoryRepository | None,
        user: str,
    ) -> None:
        self.sync = sync
        self.given_async = given_async
        self.aio: AsyncChatMemoryRepository = (
            given_async if given_async is not None else in_thread(sync)  # type: ignore[arg-type]
        )
        self.user = user

    def no_sync(self) -> InvalidArgumentError:
        """The error a sync call on an adapter given only ``async_repository`` raises."""
        return InvalidArgumentError(
            "repository",
            f"{self.user} was given only async_repository: await its async methods, or "
            "pass repository= (a sync client of the same store) as well",
        )


class TwinRepositories:
    """The ``repository`` / ``async_repository`` properties of an adapter holding ``_twins``
    (one definition for the LangChain history, LlamaIndex store, LangGraph saver and store)."""

    _twins: Twins

    @property
    def repository(self) -> ChatMemoryRepository | None:
        """The sync repository (None when given only ``async_repository``)."""
        return self._twins.sync

    @property
    def async_repository(self) -> AsyncChatMemoryRepository | None:
        """The async repository (None when given only a sync one)."""
        return self._twins.given_async


def pick(repository: object, async_repository: object, *, user: str) -> Twins:
    """Check the pair an adapter was given (at least one; each of the right kind)."""
    if repository is None and async_repository is None:
        raise InvalidArgumentError("repository", "give repository=, async_repository= or both")
    if repository is not None:
        if not isinstance(repository, ChatMemoryRepository):
            raise InvalidArgumentError("repository", "must implement ChatMemoryRepository")
        if is_async_repository(repository):
            raise InvalidArgumentError(
                "repository", f"is an async repository: pass it to {user} as async_repository="
            )
    if async_repository is not None and not (
        isinstance(async_repository, AsyncChatMemoryRepository)
        and is_async_repository(async_repository)
    ):
        raise InvalidArgumentError(
            "async_repository", "must implement AsyncChatMemoryRepository (an Async*Repository)"
        )
    return Twins(repository, async_repository, user)
