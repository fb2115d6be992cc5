"""The durable analysis queue's values, pure (the I/O is ``_async/queue.py``).

A user message accepted for analysis is one entry of the record store's state primitive in
``QUEUE_NAMESPACE``: its key sorts by the time it was accepted (microseconds since the epoch,
zero-padded) and is made unique by a random suffix; its value is the JSON object
``{"job": {...}, "claim": null | {"worker": ..., "lease_until": ...}}``. A worker claims an
entry by a compare-and-set write of a claim on the version it read, analyses it, and deletes
it once its candidates are stored; a claim whose lease has passed (its worker died or hung)
may be taken by any worker. Analysing a message twice stores nothing twice (the record
store's dedup key), so a lease that runs out mid-analysis costs work, never a duplicate.

One namespace holds every agent's entries (an agent id may hold characters a namespace may
not); a worker for one agent skips the others' entries.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from chatmem.core._errors import InvalidArgumentError

from . import _rules as rules

QUEUE_NAMESPACE = "longterm.queue"
DEFAULT_LEASE = timedelta(seconds=60)
"""How long a worker's claim on an entry holds before another worker may take it."""
DEFAULT_POLL = timedelta(seconds=1)
"""How long a draining worker waits when every remaining entry is claimed by another."""
PAGE = 100
"""Entries a worker lists per state read."""


@dataclass(frozen=True)
class Job:
    """One user message to analyse (validated where it is made)."""

    agent_id: str
    user_id: str
    text: str
    conversation_id: str | None
    message_position: int | None


@dataclass(frozen=True)
class Claim:
    """A worker's hold on an entry until ``lease_until`` (aware UTC)."""

    worker: str
    lease_until: datetime


def make_job(
    agent_id: str,
    user_id: str,
    text: object,
    conversation_id: str | None = None,
    message_position: int | None = None,
) -> Job:
    """A validated job; an ``InvalidArgumentError`` naming the argument otherwise."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a str, got {type(text).__name__}")
    return Job(
        rules.validate_id(agent_id, "agent_id"),
        rules.validate_id(user_id, "user_id"),
        text,
        None if conversation_id is None else rules.validate_id(conversation_id, "conversation_id"),
        rules.validate_position(message_position),
    )


def new_key(now: datetime) -> str:
    """A queue key: sorts by ``now`` (then at random among equal times), never repeats."""
    micros = int(
        (rules.as_utc(now) - rules.as_utc(datetime(1970, 1, 1))) / timedelta(microseconds=1)
    )
    return f"{micros:017d}-{uuid.uuid4().hex}"


def validate_lease(value: object) -> timedelta:
    """A positive timedelta (``lease``)."""
    if not isinstance(value, timedelta) or value <= timedelta(0):
        raise InvalidArgumentError("lease", "must be a positive timedelta")
    return value


def validate_worker(value: object) -> str:
    """A worker id: the rule of every other id."""
    return rules.validate_id(value, "worker_id")


def encode_entry(job: Job, claim: Claim | None = None) -> str:
    """The entry's stored value."""
    held = (
        None
        if claim is None
        else {"worker": claim.worker, "lease_until": claim.lease_until.isoformat()}
    )
    return json.dumps({"job": asdict(job), "claim": held}, ensure_ascii=False, sort_keys=True)


def decode_entry(value: str) -> tuple[Job, Claim | None]:
    """The job and claim ``encode_entry`` stored; ``ValueError`` for anything else."""
    data = json.loads(value)
    job = make_job(**data["job"])
    held = data.get("claim")
    claim = (
        None
        if held is None
        else Claim(str(held["worker"]), rules.as_utc(datetime.fromisoformat(held["lease_until"])))
    )
    return job, claim


def job_of(value: str) -> Job | None:
    """The job of the entry ``value``; None when it is not one ``encode_entry`` wrote
    (workers leave such an entry alone)."""
    try:
        return decode_entry(value)[0]
    except (ValueError, KeyError, TypeError):
        return None


def queued_for(value: str, user_id: str, agent_id: str | None) -> bool:
    """Whether the entry ``value`` is a message of ``user_id`` (to ``agent_id``, when given);
    an entry that does not decode is nobody's."""
    job = job_of(value)
    return job is not None and job.user_id == user_id and agent_id in (None, job.agent_id)


def claimable(claim: Claim | None, now: datetime) -> bool:
    """True when no live lease holds the entry at ``now``."""
    return claim is None or claim.lease_until <= now


@dataclass
class WorkStats:
    """What a worker did (``work`` returns it)."""

    claimed: int = 0
    analysed: int = 0
    stored: int = 0
    duplicates: int = 0
    skipped: int = 0
    """Entries of an agent whose memory is disabled: deleted without analysis."""
    failed: int = 0
    lost: int = 0
    """Claims another worker took over after this one's lease passed."""

    def snapshot(self) -> WorkStats:
        """A copy of the counts now."""
        return WorkStats(**asdict(self))

    def since(self, before: WorkStats) -> dict[str, int]:
        """What one entry's processing added, in the in-process analyser's counter names."""
        return {
            "stored": self.stored - before.stored,
            "duplicates": self.duplicates - before.duplicates,
            "failed": self.failed - before.failed,
        }
