"""Logging and OpenTelemetry for chatmem (the ``otel`` extra installs the API).

Loggers: one per package under ``chatmem`` (``chatmem.core``, ``chatmem.redis``...). Nothing
above DEBUG on the hot path: a lost race retried is DEBUG, a write that needed many retries is
INFO, giving up and losing the connection to a store are WARNING. The ``chatmem`` logger has a
``NullHandler``, as libraries should: records show once the application configures logging.

When ``opentelemetry-api`` is importable (and ``CHATMEM_OTEL`` is not ``0``), the public
methods of both repository base classes are wrapped once, at import: each call is a CLIENT
span ``chatmem <operation>`` with ``db.system.name`` (the backend), ``db.operation.name`` and
``chatmem.messages``, and feeds three instruments: ``chatmem.operation.duration`` (seconds,
histogram), ``chatmem.messages`` (messages read or written, counter) and ``chatmem.retries``
(lost races retried, counter). Without the API nothing is wrapped: the methods are the plain
functions, so telemetry costs nothing.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import logging
import os
import time
from collections.abc import Callable
from typing import Any

LOGGER = "chatmem"
log = logging.getLogger("chatmem.core")
# A library's records go where the application's logging config sends them; without one,
# Python's last-resort handler would print every WARNING to stderr (the CLI printed a lost
# connection twice: the warning, then its own error line).
logging.getLogger(LOGGER).addHandler(logging.NullHandler())

READS = ("find_by_conversation_id", "find_last", "window_get", "find_conversation_ids_page")
WRITES = ("save_all", "append", "window_add", "delete_by_conversation_id")


def logger_for(module: str) -> logging.Logger:
    """The package logger for a module name: ``chatmem.redis._sync.repository`` ->
    ``chatmem.redis``."""
    parts = module.split(".")
    return logging.getLogger(".".join(parts[:2]) if parts[0] == LOGGER else LOGGER)


class _Telemetry:
    """The tracer and instruments, made on first use (so a provider set after import is
    used: the API hands out proxies until one is set)."""

    def __init__(self) -> None:
        from opentelemetry import metrics, trace

        self.trace = trace
        self._metrics = metrics
        self.tracer = trace.get_tracer("chatmem")
        meter = metrics.get_meter("chatmem")
        self.duration = meter.create_histogram(
            "chatmem.operation.duration", unit="s", description="chatmem repository call time"
        )
        self.messages = meter.create_counter(
            "chatmem.messages", unit="{message}", description="messages read or written"
        )
        self.retries = meter.create_counter(
            "chatmem.retries", unit="{retry}", description="lost races retried"
        )
        self._live = False
        self._checked = float("-inf")  # when the providers were last looked at

    def live(self) -> bool:
        """True once the application set a tracer or meter provider: until then every span
        and instrument is a no-op, so calls skip the wrapping work (an API pulled in by
        another package costs a clock read per call, not a span). The providers are looked
        at once a second until one is set: a provider set after the first call is used from
        a second later at most."""
        if not self._live:
            now = time.monotonic()
            if now - self._checked < 1.0:
                return False
            self._checked = now
            self._live = (
                not isinstance(self.trace.get_tracer_provider(), self.trace.ProxyTracerProvider)
                or type(self._metrics.get_meter_provider()).__name__ != "_ProxyMeterProvider"
            )
        return self._live


_telemetry: _Telemetry | None = None


def _otel_wanted() -> bool:
    """Is the API installed (found, not imported: importing chatmem.core imports nothing
    third-party; the API is imported by the first repository call) and not switched off?"""
    if os.environ.get("CHATMEM_OTEL", "1").strip().lower() in ("0", "false", "off", "no"):
        return False
    try:
        return importlib.util.find_spec("opentelemetry") is not None
    except (ImportError, ValueError):
        return False


ENABLED = _otel_wanted()


def telemetry() -> _Telemetry | None:
    """The instruments, or None when OpenTelemetry is not installed (or switched off)."""
    global _telemetry, ENABLED
    if ENABLED and _telemetry is None:
        try:
            _telemetry = _Telemetry()
        except ImportError:  # an ``opentelemetry`` namespace without the API
            ENABLED = False
    return _telemetry


def _live() -> bool:
    t = telemetry()
    return t is not None and t.live()


def record_retry(what: str, attempt: int) -> None:
    """A lost race about to be retried (``attempt`` is 1 for the first retry)."""
    log.debug("retrying %s after a lost race (retry %d)", what, attempt)
    t = telemetry() if ENABLED else None
    if t is not None:
        t.retries.add(1, {"chatmem.what": what})


def backend_name(cls: type) -> str:
    """``RedisChatMemoryRepository`` -> ``redis`` (the ``db.system.name`` of its spans)."""
    name = cls.__name__.removeprefix("Async")
    for suffix in ("ChatMemoryRepository", "Repository"):
        name = name.removesuffix(suffix)
    return name.lower() or cls.__name__.lower()


def _count(operation: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> int:
    """Messages the call read (its result) or was given to write."""
    if operation in READS:
        return len(result.ids) if hasattr(result, "ids") else len(result or ())
    if operation == "delete_by_conversation_id":
        return 0
    batch = args[1] if len(args) > 1 else kwargs.get("messages", ())
    return len(batch) if isinstance(batch, (list, tuple)) else 1


def _wrap(operation: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    direction = "read" if operation in READS else "written"

    def start(self: Any) -> tuple[_Telemetry, dict[str, str], Any]:
        t = telemetry()
        assert t is not None
        attrs = {"db.system.name": backend_name(type(self)), "db.operation.name": operation}
        span = t.tracer.start_as_current_span(
            f"chatmem {operation}", kind=t.trace.SpanKind.CLIENT, attributes=attrs
        )
        return t, attrs, span

    def finish(t: _Telemetry, attrs: dict[str, str], span: Any, n: int, began: float) -> None:
        span.set_attribute("chatmem.messages", n)
        t.duration.record(time.perf_counter() - began, attrs)
        if n:
            t.messages.add(n, {**attrs, "chatmem.direction": direction})

    def failed(
        t: _Telemetry, attrs: dict[str, str], span: Any, exc: BaseException, began: float
    ) -> None:
        span.set_attribute("error.type", type(exc).__name__)
        t.duration.record(time.perf_counter() - began, {**attrs, "error.type": type(exc).__name__})

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def traced_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not _live():
                return await fn(self, *args, **kwargs)
            t, attrs, cm = start(self)
            with cm as span:
                began = time.perf_counter()
                try:
                    result = await fn(self, *args, **kwargs)
                except BaseException as exc:
                    failed(t, attrs, span, exc, began)
                    raise
                finish(t, attrs, span, _count(operation, args, kwargs, result), began)
                return result

        return traced_async

    @functools.wraps(fn)
    def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _live():
            return fn(self, *args, **kwargs)
        t, attrs, cm = start(self)
        with cm as span:
            began = time.perf_counter()
            try:
                result = fn(self, *args, **kwargs)
            except BaseException as exc:
                failed(t, attrs, span, exc, began)
                raise
            finish(t, attrs, span, _count(operation, args, kwargs, result), began)
            return result

    return traced


def instrument(*classes: type) -> None:
    """Wrap the public repository methods of ``classes`` in spans and metrics (once; a
    no-op without OpenTelemetry)."""
    if not ENABLED:
        return
    for cls in classes:
        if cls.__dict__.get("_chatmem_instrumented"):
            continue
        for operation in (*READS, *WRITES):
            fn = cls.__dict__.get(operation)
            if fn is not None:
                setattr(cls, operation, _wrap(operation, fn))
        cls._chatmem_instrumented = True  # type: ignore[attr-defined]
