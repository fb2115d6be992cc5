"""The ``from_url`` / ``close`` / ``with`` lifecycle of a client a repository may own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

R = TypeVar("R", bound="AsyncOwnedClientMixin")
S = TypeVar("S", bound="AsyncOwnedClientMixin")


class AsyncOwnedClientMixin:
    """``close()`` and ``with`` support for a repository that may own its client.

    A repository built on a caller's client never closes it; one built by ``from_url`` owns
    the client it created (see ``async_owning``) and ``close()`` closes it once. Closing
    twice, or closing a repository that owns nothing, is a no-op.
    """

    _owned: Any = None
    _close_owned: Callable[[], Awaitable[None]] | None = None

    def _own(self, resource: object, close: Callable[[], Awaitable[None]]) -> None:
        """Take ownership of ``resource``: ``close()`` will call ``close``."""
        self._owned, self._close_owned = resource, close

    async def close(self) -> None:
        """Close the client ``from_url`` created; a client you passed in stays open."""
        closer, self._close_owned = self._close_owned, None
        if closer is not None:
            await closer()

    async def __aenter__(self: S) -> S:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def async_owning(
    resource: object, close: Callable[[], Awaitable[None]], build: Callable[[], Awaitable[R]]
) -> R:
    """The ``from_url`` pattern: ``build()`` a repository on a client made for it; if that
    raises (bad option, unreachable server...), close the client and re-raise, so a failed
    constructor leaks no connection; otherwise the repository owns the client."""
    try:
        repository = await build()
    except BaseException:
        await close()
        raise
    repository._own(resource, close)
    return repository
