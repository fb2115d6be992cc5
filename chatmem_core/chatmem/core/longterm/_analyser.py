"""Background analysis: user messages go to a bounded queue; one worker thread extracts,
deduplicates and stores candidates, so the chat turn never waits for a model or a store.

A full queue drops the message (counted in ``stats.dropped``, logged) instead of blocking
the turn. A failing extractor or store is logged and counted in ``stats.failed``; the chat
turn is never affected. ``flush()`` waits until everything submitted so far is processed
(tests, shutdown); ``close()`` flushes and stops the worker.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass

from chatmem.core._errors import InvalidArgumentError
from chatmem.core._validation import validate_positive_int

from . import _rules as rules
from ._dedup import Deduplicator
from ._extract import Extractor
from ._model import MemoryStatus
from ._repository import MemoryRecordRepository

log = logging.getLogger("chatmem.longterm")

DEFAULT_QUEUE_SIZE = 1000
DEDUP_SCAN_LIMIT = 500
"""How many of the user's pending and approved memories a candidate is compared with by
similarity (exact duplicates are caught by the store's unique key whatever the count)."""


@dataclass
class AnalyserStats:
    """Counters since start (each only ever grows; updated under the analyser's lock)."""

    submitted: int = 0
    processed: int = 0
    stored: int = 0
    duplicates: int = 0
    failed: int = 0
    dropped: int = 0


@dataclass(frozen=True)
class _Job:
    agent_id: str
    user_id: str
    text: str
    conversation_id: str | None
    message_position: int | None


class BackgroundAnalyser:
    """Extracts memories from user messages on a worker thread and stores them as pending."""

    def __init__(
        self,
        repository: MemoryRecordRepository,
        extractor: Extractor,
        *,
        deduplicator: Deduplicator | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
    ) -> None:
        if not isinstance(repository, MemoryRecordRepository):
            raise InvalidArgumentError("repository", "must be a MemoryRecordRepository")
        if not isinstance(extractor, Extractor):
            raise InvalidArgumentError("extractor", "must have extract(text) -> candidates")
        self.repository = repository
        self.extractor = extractor
        self.deduplicator = deduplicator or Deduplicator()
        self.stats = AnalyserStats()
        self._stats_lock = threading.Lock()
        self._queue: queue.Queue[_Job | None] = queue.Queue(
            validate_positive_int(queue_size, "queue_size")
        )
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    def submit(
        self,
        agent_id: str,
        user_id: str,
        text: str,
        *,
        conversation_id: str | None = None,
        message_position: int | None = None,
    ) -> bool:
        """Queue a user message for analysis; False when it was dropped (queue full or
        closed). Arguments are validated here, in the caller's thread."""
        job = _Job(
            rules.validate_id(agent_id, "agent_id"),
            rules.validate_id(user_id, "user_id"),
            _text(text),
            None
            if conversation_id is None
            else rules.validate_id(conversation_id, "conversation_id"),
            rules.validate_position(message_position),
        )
        if self._closed:
            self._count("dropped")
            return False
        self._ensure_worker()
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            self._count("dropped")
            log.warning("long-term memory queue full: a message of %s was not analysed", user_id)
            return False
        self._count("submitted")
        return True

    def analyse(self, job: _Job) -> None:
        """Extract, dedup and store one message's candidates (the worker's body; runs in
        the caller's thread when called directly)."""
        candidates = self.extractor.extract(job.text)
        if not candidates:
            return
        existing = []
        # without embeddings the only duplicates are of the same normalised text, which the
        # store's unique key refuses anyway: no need to read the user's memories first
        similar = (MemoryStatus.APPROVED, MemoryStatus.PENDING) if self.deduplicator.embed else ()
        for status in similar:
            page = self.repository.find(
                agent_id=job.agent_id, user_id=job.user_id, status=status, limit=DEDUP_SCAN_LIMIT
            )
            existing.extend(page.records)
        for candidate in candidates:
            if self.deduplicator.duplicate_of(candidate, existing) is not None:
                self._count("duplicates")
                continue
            result = self.repository.add(
                job.agent_id,
                job.user_id,
                candidate,
                conversation_id=job.conversation_id,
                message_position=job.message_position,
            )
            if result.created:
                self._count("stored")
                existing.append(result.record)
            else:
                self._count("duplicates")

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
            job = self._queue.get()
            try:
                if job is None:
                    return
                self.analyse(job)
            except Exception:
                self._count("failed")
                log.exception("long-term memory analysis failed for user %s", job and job.user_id)
            finally:
                if job is not None:
                    self._count("processed")
                self._queue.task_done()


def _text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a str, got {type(text).__name__}")
    return text
