"""The one error tree of chatmem.

::

    ChatMemoryError
    ├── InvalidArgumentError (also ValueError): a bad argument, named in ``argument``
    │   └── InvalidIdentifierError: a bad table/keyspace/label/prefix/index name
    ├── SchemaError: the store's schema is missing or does not match
    ├── ConcurrencyError: an atomic update kept conflicting after its retries
    ├── BackendError: the driver failed; the driver's exception is ``__cause__``
    │   └── BackendUnavailableError: the server cannot be reached
    └── MissingDependencyError (also ImportError): names the extra to install
"""

from __future__ import annotations


class ChatMemoryError(Exception):
    """Base class of every error chatmem raises on purpose."""


class InvalidArgumentError(ChatMemoryError, ValueError):
    """An argument was rejected before any I/O; ``argument`` names it."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument


class InvalidIdentifierError(InvalidArgumentError):
    """A store identifier (table, keyspace, label, key prefix, index) failed validation."""


class SchemaError(ChatMemoryError):
    """The store's schema is missing, or differs from what this version needs."""


class ConcurrencyError(ChatMemoryError):
    """An atomic read-modify-write kept losing to concurrent writers after all retries."""


class BackendError(ChatMemoryError):
    """The store or its driver failed; the driver's own exception is ``__cause__``."""


class BackendUnavailableError(BackendError):
    """The store could not be reached (connection refused, lost or timed out)."""


class MissingDependencyError(ChatMemoryError, ImportError):
    """An optional driver is not installed; the message is the exact pip command
    (``distribution`` is the one whose ``extra`` installs it: a third-party store names its
    own)."""

    def __init__(self, extra: str, module: str, *, distribution: str = "chatmem") -> None:
        super().__init__(
            f'{distribution} needs the "{module}" package: pip install "{distribution}[{extra}]"',
            name=module,
        )
        self.extra = extra
        self.distribution = distribution


def require(module: str, extra: str) -> None:
    """Import ``module`` or raise MissingDependencyError naming ``extra``."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(extra, module) from exc
