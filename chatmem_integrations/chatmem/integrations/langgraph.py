"""``ChatmemSaver``: a LangGraph checkpointer (``BaseCheckpointSaver``, sync and async) on
chatmem repositories. Needs ``pip install "chatmem[langgraph]"``.

Each thread's checkpoints and pending writes are records in one chatmem conversation,
``key_prefix + thread_id`` (one message a record, the data under the metadata key
``langgraph``, values serialised by the saver's serde and base64-encoded), so every backend
that stores conversations stores checkpoints. ``put`` and ``put_writes`` are one atomic
append each; reads load the thread's records and resolve them as LangGraph's in-memory saver
does. ``delete_for_runs``, ``copy_thread`` and ``prune`` rewrite whole threads
(``save_all``, atomic for readers).

The thread's chat goes where chatmem's tools read it: when a root checkpoint's
``messages`` channel (``messages_channel``) holds LangChain messages, they are saved as the
conversation ``thread_id`` (lossless, ``chatmem.integrations.langchain``), so
``chatmem show <thread_id>``, exports and the advisors see the agent's conversation.

Sync and async: a compiled graph calls the sync methods from ``invoke`` and the async ones
(``aget_tuple``, ``alist``, ``aput``, ``aput_writes``, ``adelete_thread``...) from
``ainvoke``, on the same saver, so it takes ``repository=`` (sync), ``async_repository=`` (an
``Async*Repository``, awaited) or both, two clients of one store. A method whose repository
was not given raises ``InvalidArgumentError`` naming the argument to pass (LangGraph's own
base class has no async fallback either). The operations are written once
(``_async/langgraph_log.py``, sync twin generated) over pure record functions
(``_langgraph_records.py``); the methods here only pick the twin.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from chatmem.core import (
    AsyncChatMemoryRepository,
    ChatMemoryRepository,
    InvalidArgumentError,
)
from chatmem.core.backend import require

require("langgraph.checkpoint.base", "langgraph")

from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.checkpoint.base import (  # noqa: E402
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from ._async.langgraph_log import AsyncCheckpointLog  # noqa: E402
from ._repos import TwinRepositories, pick  # noqa: E402
from ._sync.langgraph_log import CheckpointLog  # noqa: E402

__all__ = ["DEFAULT_KEY_PREFIX", "ChatmemSaver"]

DEFAULT_KEY_PREFIX = "langgraph:"
STRATEGIES = ("keep_latest", "delete")


def _strategy(strategy: object) -> str:
    if strategy not in STRATEGIES:
        raise InvalidArgumentError("strategy", f"must be keep_latest or delete, got {strategy!r}")
    return str(strategy)


class ChatmemSaver(TwinRepositories, BaseCheckpointSaver[str]):
    """LangGraph checkpoints in a chatmem repository (see the module docstring)."""

    def __init__(
        self,
        repository: ChatMemoryRepository | None = None,
        *,
        async_repository: AsyncChatMemoryRepository | None = None,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        messages_channel: str | None = "messages",
        serde: Any = None,
    ) -> None:
        twins = pick(repository, async_repository, user="ChatmemSaver")
        if not isinstance(key_prefix, str) or not key_prefix:
            raise InvalidArgumentError("key_prefix", "must be a non-empty str")
        if messages_channel is not None and not isinstance(messages_channel, str):
            raise InvalidArgumentError("messages_channel", "must be a str or None")
        super().__init__(serde=serde)
        self._twins = twins
        self.key_prefix = key_prefix
        self.messages_channel = messages_channel

    def _log(self) -> CheckpointLog:
        repository = self._twins.sync_repository()
        return CheckpointLog(repository, self.key_prefix, self.messages_channel, self.serde)

    def _alog(self) -> AsyncCheckpointLog:
        repository = self._twins.async_repository()
        return AsyncCheckpointLog(repository, self.key_prefix, self.messages_channel, self.serde)

    # -- sync ---------------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's latest in its namespace."""
        return self._log().get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, by thread, namespace, metadata, ``before`` and ``limit``."""
        return self._log().list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (one atomic append); mirror the root chat into ``thread_id``."""
        return self._log().put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes for a checkpoint (one atomic append)."""
        self._log().put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and writes, and its mirrored chat."""
        self._log().delete_thread(thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint whose metadata ``run_id`` is in ``run_ids``, with its
        writes (every thread is read; the changed ones are rewritten)."""
        self._log().delete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another (appended)."""
        self._log().copy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint (with its writes and the
        values it needs); ``delete``: delete the threads' checkpoints."""
        self._log().prune(thread_ids, _strategy(strategy))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Monotonic string versions, as LangGraph's own savers use."""
        if current is None:
            n = 0
        elif isinstance(current, int):
            n = current
        else:
            n = int(str(current).split(".")[0])
        return f"{n + 1:032}.{random.random():016}"

    # -- async: the same operations awaited on the async repository --------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """``get_tuple``, awaited."""
        return await self._alog().get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """``list``, awaited thread by thread."""
        async for tup in self._alog().list(config, filter=filter, before=before, limit=limit):
            yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``put``, awaited."""
        return await self._alog().put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """``put_writes``, awaited."""
        await self._alog().put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """``delete_thread``, awaited."""
        await self._alog().delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """``delete_for_runs``, awaited."""
        await self._alog().delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """``copy_thread``, awaited."""
        await self._alog().copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``prune``, awaited."""
        await self._alog().prune(thread_ids, _strategy(strategy))
