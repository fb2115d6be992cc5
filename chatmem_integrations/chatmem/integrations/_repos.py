"""The repositories an adapter was given: a sync one, an async one, or both (pure checks).

A framework class with sync and async methods on one object (LangChain's history,
LlamaIndex's ``BaseChatStore``, LangGraph's saver and store) takes ``repository=`` for its
sync methods and ``async_repository=`` for its async ones; with both, they must be two
clients of one store. Async methods await the async repository and nothing here runs a
repository in a worker thread: a method whose repository was not given raises
``InvalidArgumentError`` naming the argument to pass. Where the framework's own base class
defines the async methods as the sync ones run in its executor (LangChain's
``BaseChatMessageHistory``, LlamaIndex's ``BaseChatStore``), an adapter given only a sync
repository leaves those methods to the framework instead.
"""

from __future__ import annotations

from chatmem.core import AsyncChatMemoryRepository, ChatMemoryRepository, InvalidArgumentError
from chatmem.core.backend import is_async_repository

__all__ = ["TwinRepositories", "Twins", "check_async", "pick"]


class Twins:
    """The two repositories of an adapter (either may be None) and the errors naming the
    missing one."""

    def __init__(
        self,
        sync: ChatMemoryRepository | None,
        aio: AsyncChatMemoryRepository | None,
        user: str,
    ) -> None:
        self.sync = sync
        self.aio = aio
        self.user = user

    def no_sync(self) -> InvalidArgumentError:
        """The error a sync method raises when only ``async_repository`` was given."""
        return InvalidArgumentError(
            "repository",
            f"{self.user} was given only async_repository: await its async methods, or "
            "pass repository= (a sync client of the same store) as well",
        )

    def no_async(self) -> InvalidArgumentError:
        """The error an async method raises when only a sync repository was given."""
        return InvalidArgumentError(
            "async_repository",
            f"{self.user} was given only a sync repository: call its sync methods, or "
            "pass async_repository= (an Async*Repository of the same store, e.g. from "
            "async_repository_from_url) as well",
        )

    def sync_repository(self) -> ChatMemoryRepository:
        """The repository of the sync methods (``no_sync()`` raised when there is none)."""
        if self.sync is None:
            raise self.no_sync()
        return self.sync

    def async_repository(self) -> AsyncChatMemoryRepository:
        """The repository of the async methods (``no_async()`` raised when there is none)."""
        if self.aio is None:
            raise self.no_async()
        return self.aio


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
        return self._twins.aio


def check_async(repository: object, argument: str = "async_repository") -> None:
    """``InvalidArgumentError`` naming ``argument`` unless ``repository`` is an async one."""
    if not (isinstance(repository, AsyncChatMemoryRepository) and is_async_repository(repository)):
        raise InvalidArgumentError(
            argument, "must implement AsyncChatMemoryRepository (an Async*Repository)"
        )


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
    if async_repository is not None:
        check_async(async_repository)
    return Twins(repository, async_repository, user)  # type: ignore[arg-type]  # checked above
