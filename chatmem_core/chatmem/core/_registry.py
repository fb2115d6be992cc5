"""``repository_from_url`` / ``async_repository_from_url``: the URL scheme picks the store.

Core holds no table of stores. Each store package registers its URL schemes in the
``chatmem.backends`` entry-point group (record stores: ``chatmem.memory_stores``), a third
party's exactly as ours::

    [project.entry-points."chatmem.backends"]
    mystore = "mystore:MyStoreChatMemoryRepository [mystore-driver]"

The name is the scheme before any ``+driver``; the value names the sync class, whose twin is
``Async`` + that name in the same module; the extra is what ``pip install`` needs for the
store's driver. ``memory:`` is core's own in-process store. The group is read once per
process. An unknown scheme is an error listing the registered ones (never a silent
fallback); a missing driver is a ``MissingDependencyError`` naming the extra.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ._async.repository import AsyncBaseChatMemoryRepository, AsyncInMemoryChatMemoryRepository
from ._errors import InvalidArgumentError, MissingDependencyError
from ._sync.repository import BaseChatMemoryRepository, InMemoryChatMemoryRepository

BACKENDS_GROUP = "chatmem.backends"
MEMORY_STORES_GROUP = "chatmem.memory_stores"
MEMORY_SCHEME = "memory"
"""Core's own in-process chat store; a registration under this name in ``chatmem.backends``
is ignored."""


def scheme_of(url: str) -> str:
    """The store part of a URL scheme: ``postgresql+psycopg://`` -> ``postgresql``."""
    if not isinstance(url, str) or ("://" not in url and url != "memory:"):
        raise InvalidArgumentError("url", f"{url!r} is not a URL like sqlite:///chat.db")
    return url.split(":", 1)[0].split("+", 1)[0].lower()


@functools.cache
def registered(group: str) -> dict[str, tuple[EntryPoint, ...]]:
    """The entry points of ``group`` by lower-cased scheme (read once per process; a scheme
    two distributions register differently keeps both, and using it is an error)."""
    found: dict[str, dict[str, EntryPoint]] = {}
    for ep in entry_points(group=group):
        scheme = ep.name.lower()
        if not (group == BACKENDS_GROUP and scheme == MEMORY_SCHEME):
            found.setdefault(scheme, {}).setdefault(ep.value, ep)
    return {scheme: tuple(eps.values()) for scheme, eps in found.items()}


def entry_for(group: str, url: str) -> EntryPoint:
    """The one entry point registered for ``url``'s scheme in ``group``."""
    scheme = scheme_of(url)
    known = registered(group)
    eps = known.get(scheme, ())
    if not eps:
        builtin = [MEMORY_SCHEME] if group == BACKENDS_GROUP else []
        names = ", ".join(sorted([*known, *builtin]))
        raise InvalidArgumentError("url", f"unknown scheme {scheme!r}; known schemes: {names}")
    if len(eps) > 1:
        values = " and ".join(repr(ep.value) for ep in eps)
        raise InvalidArgumentError(
            "url", f"scheme {scheme!r} is registered in {group!r} twice: {values}"
        )
    return eps[0]


def extra_of(ep: EntryPoint) -> tuple[str, str] | None:
    """(distribution, extra) that installs the driver of ``ep``'s store, if it names one."""
    if not ep.extras:
        return None
    dist = getattr(ep, "dist", None)
    return (dist.name if dist is not None else "chatmem"), ep.extras[0]


def entry_class(group: str, url: str, prefix: str = "") -> type:
    """The class registered for ``url`` in ``group`` (``prefix`` + its name: ``"Async"``
    for the async twin), its module imported; a missing driver names the entry's extra."""
    ep = entry_for(group, url)
    try:
        module = importlib.import_module(ep.module)
    except (MissingDependencyError, ModuleNotFoundError) as exc:
        extra = extra_of(ep)
        if extra is None:
            raise
        raise MissingDependencyError(
            extra[1], exc.name or ep.module, distribution=extra[0]
        ) from exc
    *outer, name = ep.attr.split(".")
    target: Any = module
    for part in [*outer, prefix + name]:
        target = getattr(target, part, None)
    if not isinstance(target, type):
        twin = f" (no async twin for {scheme_of(url)!r})" if prefix else ""
        raise InvalidArgumentError("url", f"{ep.module} has no class {prefix + name}{twin}")
    return target


def _chat_class(url: str, require_driver: bool, base: type, prefix: str) -> type:
    cls = entry_class(BACKENDS_GROUP, url, prefix)
    if not issubclass(cls, base):
        raise InvalidArgumentError(
            "url", f"{cls.__module__}.{cls.__qualname__} is not a {base.__name__} subclass"
        )
    if require_driver:
        cls.require_driver(url)  # type: ignore[attr-defined]  # both bases define it
    return cls


def repository_class_for_url(
    url: str, *, require_driver: bool = True
) -> type[BaseChatMemoryRepository]:
    """The repository class for ``url``'s scheme, its store package imported; an unknown
    scheme is an ``InvalidArgumentError`` listing the registered ones, a missing driver a
    ``MissingDependencyError`` naming the extra. Connects to nothing. ``require_driver=False``
    skips the class's ``require_driver(url)`` check (the SQL DB-API module), for work that
    needs no connection (DDL export)."""
    if scheme_of(url) == MEMORY_SCHEME:
        return InMemoryChatMemoryRepository
    cls = _chat_class(url, require_driver, BaseChatMemoryRepository, "")
    assert issubclass(cls, BaseChatMemoryRepository)
    return cls


def async_repository_class_for_url(
    url: str, *, require_driver: bool = True
) -> type[AsyncBaseChatMemoryRepository]:
    """The async twin of ``repository_class_for_url``: ``Async<Store>ChatMemoryRepository``,
    whose ``require_driver(url)`` checks the store's asyncio driver."""
    if scheme_of(url) == MEMORY_SCHEME:
        return AsyncInMemoryChatMemoryRepository
    cls = _chat_class(url, require_driver, AsyncBaseChatMemoryRepository, "Async")
    assert issubclass(cls, AsyncBaseChatMemoryRepository)
    return cls


def config_options(url: str, config: object | None, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` plus the fields of ``config``, a store's typed option dataclass
    (``RedisConfig``, ``JdbcConfig``, ...: what editors and type checkers see). The config
    must be ``<Store>Config`` from the package of the class registered for ``url``'s scheme,
    and an option may not be given both ways."""
    if config is None:
        return options
    scheme = scheme_of(url)
    if scheme == MEMORY_SCHEME or not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise InvalidArgumentError("config", "must be a store's Config instance or None")
    ep = entry_for(BACKENDS_GROUP, url)
    name = ep.attr.rsplit(".", 1)[-1]
    expected = name.removesuffix("ChatMemoryRepository") + "Config"
    module = type(config).__module__
    if type(config).__name__ != expected or not (
        module == ep.module or module.startswith(ep.module + ".")
    ):
        raise InvalidArgumentError(
            "config", f"is a {type(config).__name__}; {scheme}:// URLs take {expected}"
        )
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.init}
    both = sorted(set(fields) & set(options))
    if both:
        raise InvalidArgumentError("config", f"and keyword options both give {', '.join(both)}")
    return {**fields, **options}


def repository_from_url(
    url: str, config: object | None = None, **options: Any
) -> BaseChatMemoryRepository:
    """Build the repository for ``url``; ``options`` go to that store's ``from_url``. For
    typed options pass the store's config dataclass instead: ``repository_from_url(url,
    RedisConfig(ttl=timedelta(hours=1)))`` (``JdbcConfig``, ``MongoConfig``,
    ``CassandraConfig``, ``Neo4jConfig``)."""
    options = config_options(url, config, options)
    cls = repository_class_for_url(url)
    if cls is InMemoryChatMemoryRepository:
        return InMemoryChatMemoryRepository()
    repo = cls.from_url(url, **options)  # type: ignore[attr-defined]
    assert isinstance(repo, BaseChatMemoryRepository)
    return repo


async def async_repository_from_url(
    url: str, config: object | None = None, **options: Any
) -> AsyncBaseChatMemoryRepository:
    """Build the async repository for ``url`` (same options, config and defaults as the sync
    one): ``repo = await async_repository_from_url("postgresql://...")``; ``await
    repo.close()`` or ``async with`` closes the client it made."""
    options = config_options(url, config, options)
    cls = async_repository_class_for_url(url)
    if cls is AsyncInMemoryChatMemoryRepository:
        return AsyncInMemoryChatMemoryRepository()
    repo = await cls.from_url(url, **options)  # type: ignore[attr-defined]
    assert isinstance(repo, AsyncBaseChatMemoryRepository)
    return repo
