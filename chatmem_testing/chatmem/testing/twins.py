"""Run the shared (blocking) suite against an async twin: a loop in a background thread and
a blocking view of an async repository that runs every call there.

``--twin async`` (or ``CHATMEM_TWIN=async``) makes the plugin hand every test a
``BlockingView`` of the backend's async repository instead of the sync one. Calls from many
test threads become concurrent tasks on the one loop, so the concurrency tests exercise the
async twin's own locking, compare-and-set and retries. ``memory_for`` does the same for a
memory class and its async twin (``TokenWindowChatMemory`` / ``AsyncTokenWindowChatMemory``):
in an async-twin run a test's memory is the async class on the async repository. This is test
tooling only: the product never hides a loop or a thread pool behind its async API.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, cast

from chatmem.core.backend import AsyncBaseChatMemoryRepository, BaseChatMemoryRepository

T = TypeVar("T")
TWINS = ("sync", "async")
BOTH = "both"
"""The run that tests each twin in turn, on one server start."""


def twin_from_env() -> str:
    """``CHATMEM_TWIN``: ``sync`` (the default), ``async`` or ``both``."""
    twin = os.environ.get("CHATMEM_TWIN", "sync").strip().lower() or "sync"
    if twin not in (*TWINS, BOTH):
        raise ValueError(f"CHATMEM_TWIN must be one of {', '.join(TWINS)}, both, not {twin!r}")
    return twin


class LoopThread:
    """An event loop running forever in a daemon thread; ``run(coro)`` blocks for its result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="twin")
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.run called from its own loop (would deadlock)")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


async def _collect(iterator: Any) -> list[Any]:
    return [item async for item in iterator]


class Blocking:
    """An async object ``twin`` seen through the sync API: every coroutine method runs on
    ``loop`` and blocks for its result; async iterators are read whole; everything else is
    the twin's own attribute."""

    def __init__(self, twin: Any, loop: LoopThread) -> None:
        self.__dict__["twin"] = twin
        self.__dict__["_loop"] = loop

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.twin, name)
        loop: LoopThread = self._loop
        if inspect.iscoroutinefunction(value):

            @functools.wraps(value)
            def call(*args: Any, **kwargs: Any) -> Any:
                return loop.run(value(*args, **kwargs))

            return call
        if inspect.isasyncgenfunction(value):

            @functools.wraps(value)
            def gather(*args: Any, **kwargs: Any) -> Any:
                return iter(loop.run(_collect(value(*args, **kwargs))))

            return gather
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # a test spying on a hook (monkeypatch.setattr(repo, "_load_window", spy)) replaces
        # the view's blocking wrapper; the twin keeps its own
        self.__dict__[name] = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.twin!r})"


class BlockingView(Blocking):
    """The async repository ``twin`` seen through the sync API (see ``Blocking``), with the
    sync repository that made its namespace (``sync``)."""

    def __init__(
        self,
        twin: AsyncBaseChatMemoryRepository,
        loop: LoopThread,
        sync: BaseChatMemoryRepository | None = None,
    ) -> None:
        super().__init__(twin, loop)
        self.__dict__["sync"] = sync

    # The Protocol's four methods are defined here, not only forwarded: from Python 3.12 a
    # runtime-checkable Protocol looks attributes up statically, past ``__getattr__``.
    def find_conversation_ids(self) -> list[str]:
        return self.__getattr__("find_conversation_ids")()  # type: ignore[no-any-return]

    def find_by_conversation_id(self, conversation_id: str) -> list[Any]:
        return self.__getattr__("find_by_conversation_id")(conversation_id)  # type: ignore[no-any-return]

    def save_all(self, conversation_id: str, messages: Any) -> None:
        self.__getattr__("save_all")(conversation_id, messages)

    def delete_by_conversation_id(self, conversation_id: str) -> None:
        self.__getattr__("delete_by_conversation_id")(conversation_id)


BaseChatMemoryRepository.register(BlockingView)
_VIEW_CLASSES: dict[type, type[BlockingView]] = {}


def sync_of(repository: Any) -> Any:
    """The sync repository behind a ``BlockingView`` (the one the harness made, for
    ``connect_spec`` and ``cleanup``); any other repository is returned as it is."""
    if isinstance(repository, BlockingView) and repository.sync is not None:
        return repository.sync
    return repository


def blocking_view(
    twin: AsyncBaseChatMemoryRepository,
    loop: LoopThread,
    sync: BaseChatMemoryRepository | None = None,
) -> BlockingView:
    """A ``BlockingView`` whose class carries the twin's ``capabilities`` and a name saying
    what it wraps (``type(repo).capabilities`` and ``type(repo).__name__`` read right)."""
    cls = type(twin)
    view_cls = _VIEW_CLASSES.get(cls)
    if view_cls is None:
        view_cls = type(
            f"BlockingView[{cls.__name__}]",
            (BlockingView,),
            {
                "capabilities": cls.capabilities,
                "max_conversation_id_length": cls.max_conversation_id_length,
            },
        )
        _VIEW_CLASSES[cls] = view_cls
    return view_cls(twin, loop, sync)


def memory_for(
    repository: Any, sync_class: Callable[..., T], async_class: Callable[..., Any], **options: Any
) -> T:
    """``sync_class(repository, **options)``; in an async-twin run (``repository`` is a
    ``BlockingView``) ``async_class`` on the view's async repository, seen through
    ``Blocking`` on the same loop, so a shared test exercises the memory's async twin."""
    if isinstance(repository, BlockingView):
        memory = async_class(repository.twin, **options)
        return cast(T, Blocking(memory, repository._loop))
    return sync_class(repository, **options)
