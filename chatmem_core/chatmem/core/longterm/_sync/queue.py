# Generated from chatmem_core/chatmem/core/longterm/_async/queue.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The durable analysis queue's I/O (its values and rules are ``.._queue``).

``enqueue`` records a job before the turn that accepted it returns; a
``QueueWorker`` claims entries with a lease, analyses them, and deletes each once its
candidates are stored. Any number of workers, in any processes, share one queue: the claim is
a compare-and-set on the entry's version, so one worker wins each entry, and an entry whose
claim's lease has passed goes back to the pool.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import time
import uuid
from datetime import datetime, timedelta

from chatmem.core._errors import ConcurrencyError

from .. import _rules as rules
from .._dedup import Deduplicator
from .._extract import Extractor
from .._queue import (
    DEFAULT_LEASE,
    DEFAULT_POLL,
    PAGE,
    QUEUE_NAMESPACE,
    Claim,
    Job,
    WorkStats,
    claimable,
    decode_entry,
    encode_entry,
    job_of,
    new_key,
    validate_lease,
    validate_worker,
)
from .._settings import (
    DEFAULT_SETTINGS_REFRESH,
    AgentSettings,
    SettingsCache,
    validate_settings_refresh,
)
from .._state import StateEntry
from .analysis import analyse
from .repository import MemoryRecordRepository
from .settings import defaults_of, get_settings

log = logging.getLogger("chatmem.longterm")


def store_now(records: object) -> datetime:
    """The store's clock when it has one (``now()``), else the wall clock, aware UTC."""
    now = getattr(records, "now", None)
    return rules.as_utc(now() if callable(now) else rules.utc_now())


def default_worker_id() -> str:
    """``host:pid:random``: tells workers apart in a claim."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def enqueue(records: MemoryRecordRepository, job: Job) -> str:
    """Record ``job`` in the queue (one store write); its key."""
    value = encode_entry(job)
    for _ in range(3):  # a key repeats only if the random suffix does
        key = new_key(store_now(records))
        if records.write_state(QUEUE_NAMESPACE, key, value) is not None:
            return key
    raise ConcurrencyError("could not record the message for analysis; try again")


class QueueWorker:
    """Claims queued messages (every agent's, or ``agent_id``'s only), analyses them with
    ``extractor`` and stores their candidates under each agent's settings (a disabled
    agent's messages are deleted unanalysed). ``drain()`` returns once the queue holds
    nothing this worker could take or wait for; ``drain(follow=True)`` keeps polling."""

    def __init__(
        self,
        records: MemoryRecordRepository,
        extractor: Extractor,
        *,
        agent_id: str | None = None,
        worker_id: str | None = None,
        lease: timedelta = DEFAULT_LEASE,
        poll: timedelta = DEFAULT_POLL,
        deduplicator: Deduplicator | None = None,
        settings_refresh: timedelta = DEFAULT_SETTINGS_REFRESH,
    ) -> None:
        self.records = records
        self.extractor = extractor
        self.agent_id = None if agent_id is None else rules.validate_id(agent_id, "agent_id")
        self.worker_id = validate_worker(worker_id or default_worker_id())
        self.lease = validate_lease(lease)
        self.poll = validate_lease(poll).total_seconds()
        self.deduplicator = deduplicator or Deduplicator()
        self.stats = WorkStats()
        self.settings_refresh = validate_settings_refresh(settings_refresh)
        self._settings: dict[str, SettingsCache] = {}

    def settings(self, agent_id: str) -> AgentSettings:
        """``agent_id``'s settings, read again at most every ``settings_refresh``."""
        cache = self._settings.get(agent_id)
        if cache is None:
            cache = self._settings[agent_id] = SettingsCache(
                self.settings_refresh, defaults_of(self.records)
            )
        if cache.due():
            return cache.update(get_settings(self.records, agent_id))
        return cache.value

    def claim(self, entry: StateEntry) -> StateEntry | None:
        """``entry`` claimed for this worker, or None (held by another, or changed since it
        was read)."""
        job, claim = decode_entry(entry.value)
        now = store_now(self.records)
        if not claimable(claim, now):
            return None
        held = Claim(self.worker_id, now + self.lease)
        return self.records.write_state(
            QUEUE_NAMESPACE, entry.key, encode_entry(job, held), expected_version=entry.version
        )

    def process(self, entry: StateEntry) -> bool:
        """Claim, analyse and delete one entry; False when another worker holds it. A
        failure is logged and counted, and the claim left to lapse (the entry is retried)."""
        claimed = self.claim(entry)
        if claimed is None:
            return False
        self.stats.claimed += 1
        job, _ = decode_entry(claimed.value)
        try:
            settings = self.settings(job.agent_id)
            if not settings.enabled:
                self.stats.skipped += 1
            else:
                outcome = analyse(
                    self.records,
                    self.extractor,
                    self.deduplicator,
                    job,
                    pending_ttl=settings.pending_ttl,
                )
                self.stats.analysed += 1
                self.stats.stored += outcome.stored
                self.stats.duplicates += outcome.duplicates
        except Exception:
            self.stats.failed += 1
            log.exception("long-term memory analysis failed for user %s", job.user_id)
            return True
        if not self.records.delete_state(
            QUEUE_NAMESPACE, claimed.key, expected_version=claimed.version
        ):
            self.stats.lost += 1  # the lease passed and another worker took it over
        return True

    def process_key(self, key: str) -> bool:
        """``process`` the entry under ``key`` (False when it is gone or held)."""
        entry = self.records.read_state(QUEUE_NAMESPACE, key)
        return False if entry is None else self.process(entry)

    def run_once(self, skip: set[str] | None = None) -> int:
        """One pass over the queue, processing what this worker can claim; how many entries
        of its agents are left held by others (``skip``: keys not to try again)."""
        held, after = 0, None
        while True:
            page = self.records.list_state(QUEUE_NAMESPACE, after=after, limit=PAGE)
            # each worker takes a page in its own order, so workers sharing a queue rarely
            # race for one entry (a lost race costs a write)
            for entry in random.sample(page, len(page)):
                if skip is not None and entry.key in skip:
                    continue
                job = job_of(entry.value)
                if job is None:
                    log.warning("queue entry %s is not a queued message: left alone", entry.key)
                    continue
                if self.agent_id not in (None, job.agent_id):
                    continue
                failed = self.stats.failed
                if not self.process(entry):
                    held += 1
                elif skip is not None and self.stats.failed > failed:
                    skip.add(entry.key)
            if len(page) < PAGE:
                return held
            after = page[-1].key

    def drain(self, *, follow: bool = False) -> WorkStats:
        """Process the queue until nothing is left to take or wait for (a claim held by a
        live or dead worker is waited for until its lease passes); with ``follow``, forever.
        An entry whose analysis failed is not retried within one ``drain``."""
        failed: set[str] = set()
        while True:
            held = self.run_once(failed)
            if held == 0 and not follow:
                return self.stats
            time.sleep(self.poll)
