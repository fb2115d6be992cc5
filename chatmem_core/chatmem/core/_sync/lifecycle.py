# Generated from chatmem_core/chatmem/core/_async/lifecycle.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The ``from_url`` / ``close`` / ``with`` lifecycle of a client a repository may own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R", bound="OwnedClientMixin")
S = TypeVar("S", bound="OwnedClientMixin")


class OwnedClientMixin:
    """``close()`` and ``with`` support for a repository that may own its client.

    A repository built on a caller's client never closes it; one built by ``from_url`` owns
    the client it created (see ``owning``) and ``close()`` closes it once. Closing
    twice, or closing a repository that owns nothing, is a no-op.
    """

    _owned: Any = None
    _close_owned: Callable[[], None] | None = None

    def _own(self, resource: object, close: Callable[[], None]) -> None:
        """Take ownership of ``resource``: ``close()`` will call ``close``."""
        self._owned, self._close_owned = resource, close

    def close(self) -> None:
        """Close the client ``from_url`` created; a client you passed in stays open."""
        closer, self._close_owned = self._close_owned, None
        if closer is not None:
            closer()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def owning(resource: object, close: Callable[[], None], build: Callable[[], R]) -> R:
    """The ``from_url`` pattern: ``build()`` a repository on a client made for it; if that
    raises (bad option, unreachable server...), close the client and re-raise, so a failed
    constructor leaks no connection; otherwise the repository owns the client."""
    try:
        repository = build()
    except BaseException:
        close()
        raise
    repository._own(resource, close)
    return repository
