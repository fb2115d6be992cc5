"""``ChatmemSaver``: a LangGraph checkpointer (``BaseCheckpointSaver``, sync and async) on any
chatmem repository. Needs ``pip install "chatmem[langgraph]"``.

Each thread's checkpoints and pending writes are records in one chatmem conversation,
``key_prefix + thread_id`` (one message a record, the data under the metadata key
``langgraph``, values serialised by the saver's serde and base64-encoded), so every backend
that stores conversations stores checkpoints. ``put`` and ``put_writes`` are one atomic
append each; reads load the thread's records and resolve them as LangGraph's in-memory saver
does. ``delete_for_runs``, ``copy_thread`` and ``prune`` rewrite whole threads
(``save_all``, atomic for readers).

The thread's chat goes where chatmem's tools read it: when a root checkpoint's
``messages`` channel (``messages_channel``) holds LangChain messages, they are saved as the
conversation ``thread_id`` (lossless, ``chatmem.core.integrations.langchain``), so
``chatmem show <thread_id>``, exports and the advisors see the agent's conversation.

The async methods run the synchronous repository calls in a worker thread.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import InvalidArgumentError, require

require("langgraph.checkpoint.base", "langgraph")

from langchain_core.messages import BaseMessage  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.checkpoint.base import (  # noqa: E402
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)

from .._messages import Message, UserMessage  # noqa: E402
from .._repository import ChatMemoryRepository  # noqa: E402
from .langchain import from_langchain  # noqa: E402

__all__ = ["DEFAULT_KEY_PREFIX", "ChatmemSaver"]

DEFAULT_KEY_PREFIX = "langgraph:"
KEY = "langgraph"


def _dump(serde: Any, value: Any) -> list[str]:
    kind, data = serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def _load(serde: Any, pair: Sequence[str]) -> Any:
    return serde.loads_typed((pair[0], base64.b64decode(pair[1])))


def _vkey(version: Any) -> str:
    return json.dumps(version)


@dataclass
class _Thread:
    """A thread's records, resolved (later checkpoints with the same id replace earlier)."""

    checkpoints: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    blobs: dict[tuple[str, str, str], list[str] | None] = field(default_factory=dict)
    writes: dict[tuple[str, str], dict[tuple[str, int], dict[str, Any]]] = field(
        default_factory=dict
    )


def _resolve(records: Sequence[dict[str, Any]]) -> _Thread:
    t = _Thread()
    for r in records:
        ns = r["ns"]
        if r["k"] == "cp":
            t.checkpoints.setdefault(ns, {})[r["id"]] = r
            for ch, (ver, blob) in r["blobs"].items():
                t.blobs[(ns, ch, ver)] = blob
        else:
            slot = t.writes.setdefault((ns, r["cid"]), {})
            key = (r["task"], r["idx"])
            if key[1] >= 0 and key in slot:
                continue  # a regular write is kept once (the first wins)
            slot[key] = r
    return t


class ChatmemSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpoints in a chatmem repository (see the module docstring)."""

    def __init__(
        self,
        repository: ChatMemoryRepository,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        messages_channel: str | None = "messages",
        serde: Any = None,
    ) -> None:
        if not isinstance(repository, ChatMemoryRepository):
            raise InvalidArgumentError("repository", "must implement ChatMemoryRepository")
        if not isinstance(key_prefix, str) or not key_prefix:
            raise InvalidArgumentError("key_prefix", "must be a non-empty str")
        if messages_channel is not None and not isinstance(messages_channel, str):
            raise InvalidArgumentError("messages_channel", "must be a str or None")
        super().__init__(serde=serde)
        self.repository = repository
        self.key_prefix = key_prefix
        self.messages_channel = messages_channel

    # -- storage ------------------------------------------------------------------------
    def _cid(self, thread_id: object) -> str:
        return self.key_prefix + str(thread_id)

    def _records(self, thread_id: str) -> list[dict[str, Any]]:
        log = self.repository.find_by_conversation_id(self._cid(thread_id))
        return [dict(m.metadata[KEY]) for m in log if KEY in m.metadata]

    def _append(self, thread_id: str, records: Sequence[dict[str, Any]]) -> None:
        msgs = [self._message(r) for r in records]
        append = getattr(self.repository, "append", None)
        if callable(append):
            append(self._cid(thread_id), msgs)
        else:
            cid = self._cid(thread_id)
            self.repository.save_all(cid, [*self.repository.find_by_conversation_id(cid), *msgs])

    def _rewrite(self, thread_id: str, records: Sequence[dict[str, Any]]) -> None:
        self.repository.save_all(self._cid(thread_id), [self._message(r) for r in records])

    @staticmethod
    def _message(record: dict[str, Any]) -> Message:
        kind = "checkpoint" if record["k"] == "cp" else "write"
        return UserMessage(f"langgraph {kind}", metadata={KEY: record})

    def _threads(self) -> list[str]:
        ids = self.repository.find_conversation_ids()
        return [c[len(self.key_prefix) :] for c in ids if c.startswith(self.key_prefix)]

    # -- reading ------------------------------------------------------------------------
    def _tuple(self, thread_id: str, t: _Thread, ns: str, cp_id: str) -> CheckpointTuple:
        r = t.checkpoints[ns][cp_id]
        checkpoint: Checkpoint = _load(self.serde, r["cp"])
        values: dict[str, Any] = {}
        for ch, ver in checkpoint["channel_versions"].items():
            blob = t.blobs.get((ns, ch, _vkey(ver)))
            if blob is not None:
                values[ch] = _load(self.serde, blob)
        stored = t.writes.get((ns, cp_id), {})
        ordered = sorted(
            stored.values(), key=lambda w: writes_sort_key(w["path"], w["task"], w["idx"])
        )

        def conf(checkpoint_id: str) -> RunnableConfig:
            return {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": checkpoint_id,
                }
            }

        return CheckpointTuple(
            config=conf(cp_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=_load(self.serde, r["md"]),
            parent_config=conf(r["parent"]) if r["parent"] else None,
            pending_writes=[(w["task"], w["ch"], _load(self.serde, w["v"])) for w in ordered],
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's latest in its namespace."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        t = _resolve(self._records(thread_id))
        checkpoints = t.checkpoints.get(ns, {})
        cp_id = get_checkpoint_id(config) or (max(checkpoints) if checkpoints else None)
        if cp_id is None or cp_id not in checkpoints:
            return None
        tup = self._tuple(thread_id, t, ns, cp_id)
        if get_checkpoint_id(config):
            return tup._replace(config=config)
        return tup

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, by thread, namespace, metadata, ``before`` and ``limit``."""
        threads = [str(config["configurable"]["thread_id"])] if config else self._threads()
        want_ns = config["configurable"].get("checkpoint_ns") if config else None
        want_id = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        left = limit
        for thread_id in threads:
            t = _resolve(self._records(thread_id))
            for ns, checkpoints in t.checkpoints.items():
                if want_ns is not None and ns != want_ns:
                    continue
                for cp_id in sorted(checkpoints, reverse=True):
                    if want_id and cp_id != want_id:
                        continue
                    if before_id and cp_id >= before_id:
                        continue
                    metadata = _load(self.serde, checkpoints[cp_id]["md"])
                    if filter and not all(metadata.get(k) == v for k, v in filter.items()):
                        continue
                    if left is not None:
                        if left <= 0:
                            return
                        left -= 1
                    yield self._tuple(thread_id, t, ns, cp_id)

    # -- writing ------------------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (one atomic append); mirror the root chat into ``thread_id``."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        c: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = c.pop("channel_values")
        blobs = {
            ch: [_vkey(ver), _dump(self.serde, values[ch]) if ch in values else None]
            for ch, ver in new_versions.items()
        }
        record = {
            "k": "cp",
            "ns": ns,
            "id": checkpoint["id"],
            "parent": config["configurable"].get("checkpoint_id"),
            "cp": _dump(self.serde, c),
            "md": _dump(self.serde, get_checkpoint_metadata(config, metadata)),
            "blobs": blobs,
        }
        self._append(thread_id, [record])
        self._mirror(thread_id, ns, values)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def _mirror(self, thread_id: str, ns: str, values: dict[str, Any]) -> None:
        chat = values.get(self.messages_channel) if self.messages_channel and not ns else None
        if isinstance(chat, list) and chat and all(isinstance(m, BaseMessage) for m in chat):
            self.repository.save_all(thread_id, from_langchain(chat))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes for a checkpoint (one atomic append)."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        cp_id = config["configurable"]["checkpoint_id"]
        records = [
            {
                "k": "w",
                "ns": ns,
                "cid": cp_id,
                "task": task_id,
                "idx": WRITES_IDX_MAP.get(ch, i),
                "ch": ch,
                "v": _dump(self.serde, value),
                "path": task_path,
            }
            for i, (ch, value) in enumerate(writes)
        ]
        if records:
            self._append(thread_id, records)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and writes, and its mirrored chat."""
        self.repository.delete_by_conversation_id(self._cid(thread_id))
        if self.messages_channel:
            self.repository.delete_by_conversation_id(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint whose metadata ``run_id`` is in ``run_ids``, with its
        writes (every thread is read; the changed ones are rewritten)."""
        runs = {str(r) for r in run_ids}
        if not runs:
            return
        for thread_id in self._threads():
            records = self._records(thread_id)
            gone = {
                (r["ns"], r["id"])
                for r in records
                if r["k"] == "cp" and str(_load(self.serde, r["md"]).get("run_id")) in runs
            }
            if gone:
                kept = [r for r in records if (r["ns"], r.get("id", r.get("cid"))) not in gone]
                self._rewrite(thread_id, kept)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another (appended)."""
        records = self._records(str(source_thread_id))
        if records:
            self._append(str(target_thread_id), records)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint (with its writes and the
        values it needs); ``delete``: delete the threads' checkpoints."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidArgumentError(
                "strategy", f"must be keep_latest or delete, got {strategy!r}"
            )
        for thread_id in map(str, thread_ids):
            if strategy == "delete":
                self.repository.delete_by_conversation_id(self._cid(thread_id))
                continue
            records = self._records(thread_id)
            t = _resolve(records)
            if not t.checkpoints:
                continue
            kept: list[dict[str, Any]] = []
            for ns, checkpoints in t.checkpoints.items():
                latest = checkpoints[max(checkpoints)]
                versions = _load(self.serde, latest["cp"])["channel_versions"]
                blobs = {
                    ch: [_vkey(ver), t.blobs[(ns, ch, _vkey(ver))]]
                    for ch, ver in versions.items()
                    if (ns, ch, _vkey(ver)) in t.blobs
                }
                kept.append({**latest, "blobs": blobs})
                kept.extend(t.writes.get((ns, latest["id"]), {}).values())
            self._rewrite(thread_id, kept)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Monotonic string versions, as LangGraph's own savers use."""
        if current is None:
            n = 0
        elif isinstance(current, int):
            n = current
        else:
            n = int(str(current).split(".")[0])
        return f"{n + 1:032}.{random.random():016}"

    # -- async: the same operations in a worker thread ----------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for tup in found:
            yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
