"""The cassandra-driver's futures on asyncio, without a thread per call (hand-written; its
blocking counterpart is ``_blocking``, and the async repository code calls these names).

The driver has no asyncio API: ``Session.execute_async`` sends the request at once and
returns a ``ResponseFuture`` whose callbacks run on the driver's I/O thread when a page (or an
error) arrives. ``_Pager`` registers one callback pair per ``ResponseFuture`` (the driver keeps
callbacks across pages) and hands each page to an ``asyncio.Future`` with
``loop.call_soon_threadsafe``; a waiter already cancelled (the task was cancelled) is left
alone. ``AsyncResultSet`` mirrors the parts of the driver's ``ResultSet`` we use, with
``fetch_next_page`` awaited (``ResponseFuture.start_fetching_next_page`` sends without
blocking).

Where a thread is used, it is the driver's design or set-up only: ``connect`` and
``shutdown`` run ``Cluster.connect``/``Cluster.shutdown`` (blocking by design) in
``asyncio.to_thread`` once per repository; ``schema_agreed`` falls back to the blocking
agreement wait in a thread only when a DDL's own schema refresh (done by the driver in its
executor before the DDL's future completes) did not see agreement; ``prepare`` asks the driver's
executor to prepare on the other hosts, as ``Session.prepare`` does inline.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from cassandra.cluster import ResponseFuture, ResultSet
from cassandra.protocol import PrepareMessage
from cassandra.query import PreparedStatement

_NO_PAGE: Any = object()


def _settle(waiter: asyncio.Future[Any], page: Any, error: BaseException | None) -> None:
    if waiter.done():  # cancelled while the request was in flight
        return
    if error is not None:
        waiter.set_exception(error)
    else:
        waiter.set_result(page)


class _Pager:
    """Delivers every page (or the error) of one ``ResponseFuture`` to the event loop."""

    __slots__ = ("_loop", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop, future: Any) -> None:
        self._loop = loop
        self.waiter: asyncio.Future[Any] = loop.create_future()
        future.add_callbacks(self._on_page, self._on_error)

    def arm(self) -> asyncio.Future[Any]:
        """A fresh waiter for the next page (set before the request for it is sent)."""
        self.waiter = self._loop.create_future()
        return self.waiter

    def _on_page(self, page: Any) -> None:  # the driver's I/O thread, or ours if done
        self._hand_over(page, None)

    def _on_error(self, error: BaseException) -> None:
        self._hand_over(_NO_PAGE, error)

    def _hand_over(self, page: Any, error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            self._loop.call_soon_threadsafe(_settle, self.waiter, page, error)


class AsyncResultSet:
    """One page at a time of a query's result (the driver's ``ResultSet``, awaited)."""

    def __init__(self, future: Any, pager: _Pager, page: Any) -> None:
        self.response_future = future
        self._pager = pager
        self._page = ResultSet(future, page)

    @property
    def current_rows(self) -> Sequence[Any]:
        """The rows of the current page."""
        return self._page.current_rows  # type: ignore[no-any-return]

    @property
    def has_more_pages(self) -> bool:
        return bool(self.response_future.has_more_pages)

    @property
    def column_names(self) -> Sequence[str] | None:
        return self._page.column_names  # type: ignore[no-any-return]

    @property
    def was_applied(self) -> bool:
        """Whether a lightweight transaction (or a conditional batch) applied."""
        return bool(self._page.was_applied)

    def one(self) -> Any:
        """The first row of the current page, or None."""
        return self._page.one()

    async def fetch_next_page(self) -> None:
        """Replace the current page with the next one (empty when there is none)."""
        if not self.response_future.has_more_pages:
            self._page = ResultSet(self.response_future, [])
            return
        waiter = self._pager.arm()
        self.response_future.start_fetching_next_page()
        self._page = ResultSet(self.response_future, await waiter)


async def execute(
    session: Any, statement: Any, parameters: Any = None, *, timeout: float | None = None
) -> AsyncResultSet:
    """``session.execute`` awaited: the first page of the result (driver errors raised)."""
    loop = asyncio.get_running_loop()
    extra = {} if timeout is None else {"timeout": timeout}
    future = session.execute_async(statement, parameters, **extra)
    pager = _Pager(loop, future)
    page = await pager.waiter
    return AsyncResultSet(future, pager, page)


async def prepare(session: Any, query: str) -> Any:
    """``session.prepare`` awaited: the same steps, with the response awaited instead of
    blocked on, and the other hosts prepared by the driver's executor."""
    loop = asyncio.get_running_loop()
    future = ResponseFuture(
        session, PrepareMessage(query=query, keyspace=None), None, session.default_timeout
    )
    pager = _Pager(loop, future)
    future.send_request()
    response = ResultSet(future, await pager.waiter).one()
    cluster = session.cluster
    prepared = PreparedStatement.from_message(
        response.query_id,
        response.bind_metadata,
        response.pk_indexes,
        cluster.metadata,
        query,
        None,
        session._protocol_version,
        response.column_metadata,
        response.result_metadata_id,
        cluster.column_encryption_policy,
    )
    prepared.custom_payload = future.custom_payload
    cluster.add_prepared(response.query_id, prepared)
    if cluster.prepare_on_all_hosts and len(session.get_pools()) > 1:
        session.submit(session.prepare_on_all_hosts, query, future._current_host, None)
    return prepared


async def schema_agreed(session: Any, result: AsyncResultSet | None, wait: float) -> bool:
    """After a DDL (or, with ``result`` None, at set-up): whether every node agrees on the
    schema. The driver already waited for agreement (in its executor) before completing the
    DDL's future; only when that wait saw none, the DDL raised or there was no DDL does this
    wait again, in a thread (set-up only)."""
    if result is not None and result.response_future.is_schema_agreed:
        return True
    control = session.cluster.control_connection
    return bool(await asyncio.to_thread(control.wait_for_schema_agreement, wait_time=wait))


async def refresh_table(session: Any, keyspace: str, table: str) -> None:
    """Reload one table's metadata (the driver waits for agreement first), in a thread
    (set-up only)."""
    await asyncio.to_thread(session.cluster.refresh_table_metadata, keyspace, table)


async def connect(cluster: Any) -> Any:
    """``cluster.connect()`` (blocking by the driver's design) off the loop, once."""
    return await asyncio.to_thread(cluster.connect)


async def shutdown(cluster: Any) -> None:
    """``cluster.shutdown()`` (joins the driver's threads) off the loop."""
    await asyncio.to_thread(cluster.shutdown)
