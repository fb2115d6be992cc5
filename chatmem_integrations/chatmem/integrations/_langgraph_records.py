"""The pure half of ``ChatmemSaver``: checkpoints and pending writes as records (one chatmem
message each, the data under the metadata key ``langgraph``), resolved and read back as
LangGraph's in-memory saver does. No I/O: ``_async/langgraph_log.py`` (and its generated sync
twin) reads and writes the records."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)

from chatmem.core import Message, UserMessage

KEY = "langgraph"
Record = dict[str, Any]


def dump(serde: Any, value: Any) -> list[str]:
    kind, data = serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def load(serde: Any, pair: Sequence[str]) -> Any:
    return serde.loads_typed((pair[0], base64.b64decode(pair[1])))


def vkey(version: Any) -> str:
    return json.dumps(version)


def message_of(record: Record) -> Message:
    kind = "checkpoint" if record["k"] == "cp" else "write"
    return UserMessage(f"langgraph {kind}", metadata={KEY: record})


def records_of(log: Sequence[Message]) -> list[Record]:
    return [dict(m.metadata[KEY]) for m in log if KEY in m.metadata]


def thread_and_ns(config: RunnableConfig) -> tuple[str, str]:
    c = config["configurable"]
    return str(c["thread_id"]), c.get("checkpoint_ns", "")


@dataclass
class Thread:
    """A thread's records, resolved (later checkpoints with the same id replace earlier)."""

    checkpoints: dict[str, dict[str, Record]] = field(default_factory=dict)
    blobs: dict[tuple[str, str, str], list[str] | None] = field(default_factory=dict)
    writes: dict[tuple[str, str], dict[tuple[str, int], Record]] = field(default_factory=dict)


def resolve(records: Sequence[Record]) -> Thread:
    t = Thread()
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


def tuple_of(serde: Any, thread_id: str, t: Thread, ns: str, cp_id: str) -> CheckpointTuple:
    r = t.checkpoints[ns][cp_id]
    checkpoint: Checkpoint = load(serde, r["cp"])
    values: dict[str, Any] = {}
    for ch, ver in checkpoint["channel_versions"].items():
        blob = t.blobs.get((ns, ch, vkey(ver)))
        if blob is not None:
            values[ch] = load(serde, blob)
    stored = t.writes.get((ns, cp_id), {})
    ordered = sorted(stored.values(), key=lambda w: writes_sort_key(w["path"], w["task"], w["idx"]))

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
        metadata=load(serde, r["md"]),
        parent_config=conf(r["parent"]) if r["parent"] else None,
        pending_writes=[(w["task"], w["ch"], load(serde, w["v"])) for w in ordered],
    )


def get_tuple(
    serde: Any, config: RunnableConfig, records: Sequence[Record]
) -> CheckpointTuple | None:
    """The checkpoint ``config`` names in its thread's records, or the latest of its ns."""
    thread_id, ns = thread_and_ns(config)
    t = resolve(records)
    checkpoints = t.checkpoints.get(ns, {})
    cp_id = get_checkpoint_id(config) or (max(checkpoints) if checkpoints else None)
    if cp_id is None or cp_id not in checkpoints:
        return None
    tup = tuple_of(serde, thread_id, t, ns, cp_id)
    return tup._replace(config=config) if get_checkpoint_id(config) else tup


@dataclass(frozen=True)
class ListQuery:
    """``list``'s arguments, read once."""

    want_ns: str | None
    want_id: str | None
    before_id: str | None
    filter: Mapping[str, Any] | None

    @classmethod
    def of(
        cls,
        config: RunnableConfig | None,
        filter: Mapping[str, Any] | None,
        before: RunnableConfig | None,
    ) -> ListQuery:
        return cls(
            config["configurable"].get("checkpoint_ns") if config else None,
            get_checkpoint_id(config) if config else None,
            get_checkpoint_id(before) if before else None,
            filter,
        )


def list_thread(
    serde: Any, thread_id: str, records: Sequence[Record], q: ListQuery
) -> Iterator[CheckpointTuple]:
    """One thread's checkpoints matching ``q``, newest first within each namespace."""
    t = resolve(records)
    for ns, checkpoints in t.checkpoints.items():
        if q.want_ns is not None and ns != q.want_ns:
            continue
        for cp_id in sorted(checkpoints, reverse=True):
            if (q.want_id and cp_id != q.want_id) or (q.before_id and cp_id >= q.before_id):
                continue
            metadata = load(serde, checkpoints[cp_id]["md"])
            if q.filter and not all(metadata.get(k) == v for k, v in q.filter.items()):
                continue
            yield tuple_of(serde, thread_id, t, ns, cp_id)


def checkpoint_record(
    serde: Any,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> tuple[Record, dict[str, Any]]:
    """The record ``put`` appends, and the checkpoint's channel values."""
    _, ns = thread_and_ns(config)
    c: dict[str, Any] = dict(checkpoint)
    values: dict[str, Any] = c.pop("channel_values")
    blobs = {
        ch: [vkey(ver), dump(serde, values[ch]) if ch in values else None]
        for ch, ver in new_versions.items()
    }
    record = {
        "k": "cp",
        "ns": ns,
        "id": checkpoint["id"],
        "parent": config["configurable"].get("checkpoint_id"),
        "cp": dump(serde, c),
        "md": dump(serde, get_checkpoint_metadata(config, metadata)),
        "blobs": blobs,
    }
    return record, values


def put_config(config: RunnableConfig, checkpoint_id: str) -> RunnableConfig:
    thread_id, ns = thread_and_ns(config)
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def write_records(
    serde: Any,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> list[Record]:
    """The records ``put_writes`` appends."""
    _, ns = thread_and_ns(config)
    cp_id = config["configurable"]["checkpoint_id"]
    return [
        {
            "k": "w",
            "ns": ns,
            "cid": cp_id,
            "task": task_id,
            "idx": WRITES_IDX_MAP.get(ch, i),
            "ch": ch,
            "v": dump(serde, value),
            "path": task_path,
        }
        for i, (ch, value) in enumerate(writes)
    ]


def chat_of(values: Mapping[str, Any], channel: str | None, ns: str) -> list[BaseMessage] | None:
    """The root checkpoint's LangChain chat to mirror, or None."""
    chat = values.get(channel) if channel and not ns else None
    if isinstance(chat, list) and chat and all(isinstance(m, BaseMessage) for m in chat):
        return chat
    return None


def without_runs(serde: Any, records: Sequence[Record], runs: set[str]) -> list[Record] | None:
    """The records without the checkpoints (and their writes) of ``runs``; None: no change."""
    gone = {
        (r["ns"], r["id"])
        for r in records
        if r["k"] == "cp" and str(load(serde, r["md"]).get("run_id")) in runs
    }
    if not gone:
        return None
    return [r for r in records if (r["ns"], r.get("id", r.get("cid"))) not in gone]


def latest_only(serde: Any, records: Sequence[Record]) -> list[Record] | None:
    """Each namespace's newest checkpoint with its writes and the values it needs; None when
    there is no checkpoint."""
    t = resolve(records)
    if not t.checkpoints:
        return None
    kept: list[Record] = []
    for ns, checkpoints in t.checkpoints.items():
        latest = checkpoints[max(checkpoints)]
        versions = load(serde, latest["cp"])["channel_versions"]
        blobs = {
            ch: [vkey(ver), t.blobs[(ns, ch, vkey(ver))]]
            for ch, ver in versions.items()
            if (ns, ch, vkey(ver)) in t.blobs
        }
        kept.append({**latest, "blobs": blobs})
        kept.extend(t.writes.get((ns, latest["id"]), {}).values())
    return kept
