"""``AsyncBackgroundAnalyser``: the in-process analyser on an asyncio task, for the async
record stores (``BackgroundAnalyser`` in ``_analyser`` is the thread for the sync ones).

The same rules: a bounded queue that drops (and counts) rather than blocks the turn, one
worker, failures logged and counted, ``flush``/``close``. The worker task starts on the
first ``submit``, on the loop that submitted, and stays on it: a submit from another loop
while that one runs is refused (``ConcurrencyError``; the async stores' clients are bound
to their loop too), and after that loop closed, the next submit starts a new worker on its
own loop, counting what the closed loop left queued as dropped. The store calls it makes are
awaited and the offline extractor is pure CPU on short text, so the loop is never blocked
for longer than one message's rules (a model ``complete`` is awaited when it is async).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from chatmem.core._errors import ConcurrencyError
from chatmem.core._validation import validate_positive_int

from ._analyser import (
    DEFAULT_QUEUE_SIZE,
    AnalyserStats,
    Item,
    Submitting,
    _who,
    check_analyser_arguments,
)
from ._async.analysis import async_analyse
from ._async.queue import AsyncQueueWorker
from ._async.repository import AsyncMemoryRecordRepository
from ._dedup import Deduplicator
from ._extract import Extractor
from ._queue import Job

log = logging.getLogger("chatmem.longterm")


class AsyncBackgroundAnalyser(Submitting):
    """Extracts memories from user messages on an asyncio task and stores them as pending."""

    def __init__(
        self,
        repository: AsyncMemoryRecordRepository,
        extractor: Extractor,
        *,
        deduplicator: Deduplicator | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        queue_worker: AsyncQueueWorker | None = None,
    ) -> None:
        check_analyser_arguments(
            repository, extractor, AsyncMemoryRecordRepository, want_async=True
        )
        self.repository = repository
        self.extractor = extractor
        self.deduplicator = deduplicator or Deduplicator()
        self.queue_worker: AsyncQueueWorker | None = queue_worker
        self.stats = AnalyserStats()
        self._size = validate_positive_int(queue_size, "queue_size")
        self._queue: asyncio.Queue[Item | None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def _put(self, item: Item, who: str) -> bool:
        if self._closed:
            self.stats.dropped += 1
            return False
        work = self._ensure_worker()
        try:
            work.put_nowait(item)
        except asyncio.QueueFull:
            self.stats.dropped += 1
            log.warning("long-term memory queue full: a message (%s) was not analysed", who)
            return False
        self.stats.submitted += 1
        return True

    async def analyse(self, job: Job, pending_ttl: timedelta | None = None) -> None:
        """Extract, dedup and store one message's candidates (the task's body)."""
        outcome = await async_analyse(
            self.repository, self.extractor, self.deduplicator, job, pending_ttl=pending_ttl
        )
        self.stats.stored += outcome.stored
        self.stats.duplicates += outcome.duplicates

    async def handle(self, item: Item) -> None:
        """Analyse one queued item (a job, or a durable entry claimed by key)."""
        if not isinstance(item, str):
            await self.analyse(*item)
            return
        assert self.queue_worker is not None
        before = self.queue_worker.stats.snapshot()
        await self.queue_worker.process_key(item)
        for counter, n in self.queue_worker.stats.since(before).items():
            setattr(self.stats, counter, getattr(self.stats, counter) + n)

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every message submitted so far is processed; False on timeout."""
        if self._queue is None:
            return True
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def close(self, timeout: float | None = None) -> None:
        """Process what is queued, then stop the task; later submissions are dropped."""
        self._closed = True
        task = self._task
        if task is not None and not task.done() and self._queue is not None:
            await self._queue.put(None)
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout)
            except asyncio.TimeoutError:
                task.cancel()

    def _ensure_worker(self) -> asyncio.Queue[Item | None]:
        loop = asyncio.get_running_loop()
        if self._loop is not None and loop is not self._loop:
            if not self._loop.is_closed():
                raise ConcurrencyError(
                    "this analyser's worker runs on another event loop, which is still open: "
                    "use one analyser (and one async store) per loop"
                )
            # the worker's loop is gone, and what it left queued can never run
            if self._queue is not None:
                self.stats.dropped += self._queue.qsize()
                log.warning(
                    "long-term memory analyser: its event loop closed with %d messages queued",
                    self._queue.qsize(),
                )
            self._queue = self._task = None
        self._loop = loop
        if self._queue is None:
            self._queue = asyncio.Queue(self._size)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(self._queue), name="chatmem-longterm-analyser"
            )
        return self._queue

    async def _run(self, work: asyncio.Queue[Item | None]) -> None:
        while True:
            item = await work.get()
            if item is None:
                work.task_done()
                return
            try:
                await self.handle(item)
            except Exception:
                self.stats.failed += 1
                log.exception("long-term memory analysis failed (%s)", _who(item))
            except BaseException:  # cancelled mid-message (its loop is closing): not stored
                self.stats.dropped += 1
                work.task_done()
                raise
            self.stats.processed += 1
            work.task_done()
