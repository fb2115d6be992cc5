"""Background analysis in the process: user messages go to a bounded queue; one worker
thread extracts, deduplicates and stores candidates, so the chat turn never waits for a model
or a store. ``AsyncBackgroundAnalyser`` (``_analyser_task``) is the same on an asyncio task.

A full queue drops the message (counted in ``stats.dropped``, logged) instead of blocking
the turn. A failing extractor or store is logged and counted in ``stats.failed``; the chat
turn is never affected. ``flush()`` waits until everything submitted so far is processed
(tests, shutdown); ``close()`` flushes and stops the worker. With a durable queue
(``LongTermMemory(durable=True)``) the message is already in the store and what is queued
here is its entry's key, which the thread claims, analyses and deletes like any worker.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from chatmem.core._errors import InvalidArgumentError
from chatmem.core._validation import validate_positive_int

from ._advice import require_records
from ._dedup import Deduplicator
from ._extract import Extractor
from ._queue import Job, make_job
from ._sync.analysis import analyse as analyse_job
from ._sync.queue import QueueWorker
from ._sync.repository import MemoryRecordRepository

log = logging.getLogger("chatmem.longterm")

DEFAULT_QUEUE_SIZE = 1000


@dataclass
class AnalyserStats:
    """Counters since start (each only ever grows; updated under the analyser's lock)."""

    submitted: int = 0
    processed: int = 0
    stored: int = 0
    duplicates: int = 0
    failed: int = 0
    dropped: int = 0


Item = tuple[Job, timedelta | None] | str
"""A job with the pending TTL it was accepted under, or a durable queue entry's key."""
_Job = Job  # the backfill's name for it


def check_analyser_arguments(
    repository: object, extractor: object, protocol: type, *, want_async: bool
) -> None:
    """The analysers' argument checks (``protocol``: the record store twin they take)."""
    require_records(repository, protocol, want_async=want_async)
    if not isinstance(extractor, Extractor):
        raise InvalidArgumentError("extractor", "must have extract(text) -> candidates")


class Submitting:
    """``submit`` and ``submit_queued`` of both in-process analysers: validate, then hand
    the item to the twin's own ``_put`` (a thread's queue or a task's)."""

    queue_worker: object | None

    def _put(self, item: Item, who: str) -> bool:
        raise NotImplementedError

    def submit(
        self,
        agent_id: str,
        user_id: str,
        text: str,
        *,
        conversation_id: str | None = None,
        message_position: int | None = None,
        pending_ttl: timedelta | None = None,
    ) -> bool:
        """Queue a user message for analysis; False when it was dropped (queue full or
        closed). Arguments are validated here, in the caller's thread (on the loop, for the
        task)."""
        job = make_job(agent_id, user_id, text, conversation_id, message_position)
        return self._put((job, pending_ttl), job.user_id)

    def submit_queued(self, key: str) -> bool:
        """Queue the durable entry ``key`` for this process's worker (it is in the store
        already: dropping it here only leaves it to another worker)."""
        if self.queue_worker is None:
            raise InvalidArgumentError("key", "this analyser has no durable queue worker")
        return self._put(key, key)


class BackgroundAnalyser(Submitting):
    """Extracts memories from user messages on a worker thread and stores them as pending."""

    def __init__(
        self,
        repository: MemoryRecordRepository,
        extractor: Extractor,
        *,
        deduplicator: Deduplicator | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        queue_worker: QueueWorker | None = None,
    ) -> None:
        check_analyser_arguments(repository, extractor, MemoryRecordRepository, want_async=False)
        self.repository = repository
        self.extractor = extractor
        self.deduplicator = deduplicator or Deduplicator()
        self.queue_worker: QueueWorker | None = queue_worker
        self.stats = AnalyserStats()
        self._stats_lock = threading.Lock()
        self._queue: queue.Queue[Item | None] = queue.Queue(
            validate_positive_int(queue_size, "queue_size")
        )
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    def _put(self, item: Item, who: str) -> bool:
        if self._closed:
            self._count("dropped")
            return False
        self._ensure_worker()
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._count("dropped")
            log.warning("long-term memory queue full: a message (%s) was not analysed", who)
            return False
        self._count("submitted")
        return True

    def analyse(self, job: Job, pending_ttl: timedelta | None = None) -> None:
        """Extract, dedup and store one message's candidates (the worker's body; runs in
        the caller's thread when called directly)."""
        outcome = analyse_job(
            self.repository, self.extractor, self.deduplicator, job, pending_ttl=pending_ttl
        )
        for _ in range(outcome.stored):
            self._count("stored")
        for _ in range(outcome.duplicates):
            self._count("duplicates")

    def handle(self, item: Item) -> None:
        """Analyse one queued item (a job, or a durable entry claimed by key)."""
        if not isinstance(item, str):
            self.analyse(*item)
            return
        assert self.queue_worker is not None
        before = self.queue_worker.stats.snapshot()
        self.queue_worker.process_key(item)
        for counter, n in self.queue_worker.stats.since(before).items():
            for _ in range(n):
                self._count(counter)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every message submitted so far is processed; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def close(self, timeout: float | None = None) -> None:
        """Process what is queued, then stop the worker; later submissions are dropped."""
        self._closed = True
        worker = self._worker
        if worker is not None and worker.is_alive():
            self._queue.put(None)
            worker.join(timeout)

    def _count(self, counter: str) -> None:
        with self._stats_lock:
            setattr(self.stats, counter, getattr(self.stats, counter) + 1)

    def _ensure_worker(self) -> None:
        with self._start_lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._run, name="chatmem-longterm-analyser", daemon=True
                )
                self._worker.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self.handle(item)
            except Exception:
                self._count("failed")
                log.exception("long-term memory analysis failed (%s)", _who(item))
            finally:
                if item is not None:
                    self._count("processed")
                self._queue.task_done()


def _who(item: Item | None) -> str:
    """A log's name for a queued item: the user, or the durable entry's key."""
    if item is None or isinstance(item, str):
        return f"entry {item}"
    return f"user {item[0].user_id}"
