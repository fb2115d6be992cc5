# Generated from chatmem_integrations/chatmem/integrations/_async/langgraph_log.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The I/O of ``ChatmemSaver`` (LangGraph): each operation reads or appends a thread's
records; ``_langgraph_records`` decides what they hold."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from chatmem.core import ChatMemoryRepository

from .._langchain_codec import from_langchain
from .._langgraph_records import (
    ListQuery,
    Record,
    chat_of,
    checkpoint_record,
    get_tuple,
    latest_only,
    list_thread,
    message_of,
    put_config,
    records_of,
    thread_and_ns,
    without_runs,
    write_records,
)
from .io import append_to

__all__ = ["CheckpointLog"]


class CheckpointLog:
    """The saver's operations on one repository (built per call: the saver's ``serde`` may
    change, as ``with_allowlist`` does)."""

    def __init__(
        self,
        repository: ChatMemoryRepository,
        key_prefix: str,
        messages_channel: str | None,
        serde: Any,
    ) -> None:
        self.repository = repository
        self.key_prefix = key_prefix
        self.messages_channel = messages_channel
        self.serde = serde

    # -- storage ------------------------------------------------------------------------
    def _cid(self, thread_id: object) -> str:
        return self.key_prefix + str(thread_id)

    def _records(self, thread_id: str) -> list[Record]:
        return records_of(self.repository.find_by_conversation_id(self._cid(thread_id)))

    def _append(self, thread_id: str, records: Sequence[Record]) -> None:
        append_to(self.repository, self._cid(thread_id), [message_of(r) for r in records])

    def _rewrite(self, thread_id: str, records: Sequence[Record]) -> None:
        self.repository.save_all(self._cid(thread_id), [message_of(r) for r in records])

    def _threads(self) -> list[str]:
        ids = self.repository.find_conversation_ids()
        return [c[len(self.key_prefix) :] for c in ids if c.startswith(self.key_prefix)]

    # -- the saver's operations ------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, _ = thread_and_ns(config)
        return get_tuple(self.serde, config, self._records(thread_id))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        q = ListQuery.of(config, filter, before)
        threads = [thread_and_ns(config)[0]] if config else self._threads()
        left = limit
        for thread_id in threads:
            for tup in list_thread(self.serde, thread_id, self._records(thread_id), q):
                if left is not None:
                    if left <= 0:
                        return
                    left -= 1
                yield tup

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id, ns = thread_and_ns(config)
        record, values = checkpoint_record(self.serde, config, checkpoint, metadata, new_versions)
        self._append(thread_id, [record])
        chat = chat_of(values, self.messages_channel, ns)
        if chat is not None:
            self.repository.save_all(thread_id, from_langchain(chat))
        return put_config(config, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        records = write_records(self.serde, config, writes, task_id, task_path)
        if records:
            self._append(thread_and_ns(config)[0], records)

    def delete_thread(self, thread_id: str) -> None:
        self.repository.delete_by_conversation_id(self._cid(thread_id))
        if self.messages_channel:
            self.repository.delete_by_conversation_id(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        runs = {str(r) for r in run_ids}
        if not runs:
            return
        for thread_id in self._threads():
            kept = without_runs(self.serde, self._records(thread_id), runs)
            if kept is not None:
                self._rewrite(thread_id, kept)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        records = self._records(str(source_thread_id))
        if records:
            self._append(str(target_thread_id), records)

    def prune(self, thread_ids: Sequence[str], strategy: str) -> None:
        for thread_id in map(str, thread_ids):
            if strategy == "delete":
                self.repository.delete_by_conversation_id(self._cid(thread_id))
                continue
            kept = latest_only(self.serde, self._records(thread_id))
            if kept is not None:
                self._rewrite(thread_id, kept)
