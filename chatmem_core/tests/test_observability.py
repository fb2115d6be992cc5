"""Spans, metrics and logs: a window add and read traced on SQLite and on the run's
``--backend`` (a server backend in the integrations sessions), captured with the
OpenTelemetry SDK's in-memory exporter and reader; nothing wrapped without the API."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    ConcurrencyError,
    MessageWindowChatMemory,
    UserMessage,
    async_repository_from_url,
    repository_from_url,
)
from chatmem.core.backend import BaseChatMemoryRepository, retry

sdk = pytest.importorskip("opentelemetry.sdk", reason='needs pip install "chatmem[otel]" sdk')

from opentelemetry import metrics, trace  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

_SPANS = InMemorySpanExporter()
_METRICS = InMemoryMetricReader()


@pytest.fixture(scope="module", autouse=True)
def providers() -> None:
    """Global providers can be set once per process: this module sets them."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(_SPANS))
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[_METRICS]))
    from chatmem.core import _observe

    if _observe._telemetry is not None:  # earlier tests' calls found no provider: look again
        _observe._telemetry._checked = float("-inf")


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _SPANS.clear()
    yield _SPANS


def _points(name: str) -> list[Any]:
    data = _METRICS.get_metrics_data()
    assert data is not None
    return [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
    ]


def _window_turn(repo: BaseChatMemoryRepository) -> None:
    memory = MessageWindowChatMemory(repo, max_messages=4)
    memory.add("otel", [UserMessage("hello"), AssistantMessage("hi there")])
    assert [m.text for m in memory.get("otel")] == ["hello", "hi there"]


def _check(spans: InMemorySpanExporter, system: str) -> None:
    by_name = {s.name: s for s in spans.get_finished_spans()}
    add, read = by_name["chatmem window_add"], by_name["chatmem window_get"]
    for span in (add, read):
        assert span.kind == trace.SpanKind.CLIENT
        assert span.attributes is not None
        assert span.attributes["db.system.name"] == system
        assert span.end_time is not None and span.start_time is not None
        assert span.end_time >= span.start_time
    assert add.attributes is not None and add.attributes["chatmem.messages"] == 2
    assert read.attributes is not None and read.attributes["chatmem.messages"] == 2
    durations = {
        (p.attributes["db.system.name"], p.attributes["db.operation.name"]): p
        for p in _points("chatmem.operation.duration")
    }
    assert durations[(system, "window_add")].count >= 1
    assert durations[(system, "window_get")].sum > 0
    counted = {
        (p.attributes["db.system.name"], p.attributes["chatmem.direction"]): p.value
        for p in _points("chatmem.messages")
    }
    assert counted[(system, "written")] >= 2 and counted[(system, "read")] >= 2


def test_window_add_and_read_are_traced_on_sqlite(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    repo = repository_from_url(f"sqlite:///{tmp_path / 'otel.db'}")
    try:
        _window_turn(repo)
    finally:
        repo.close()  # type: ignore[attr-defined]
    _check(spans, "jdbc")


def test_window_add_and_read_are_traced_on_the_runs_backend(
    spans: InMemorySpanExporter, repository: BaseChatMemoryRepository
) -> None:
    _window_turn(repository)
    from chatmem.core._observe import backend_name

    _check(spans, backend_name(type(repository)))


def test_async_twin_calls_are_traced(spans: InMemorySpanExporter) -> None:
    async def main() -> None:
        memory = AsyncMessageWindowChatMemory(await async_repository_from_url("memory:"))
        await memory.add("otel", [UserMessage("hello"), AssistantMessage("hi there")])
        assert len(await memory.get("otel")) == 2

    asyncio.run(main())
    _check(spans, "inmemory")


def test_a_failed_call_is_recorded_with_its_error_type(
    spans: InMemorySpanExporter, repository: BaseChatMemoryRepository
) -> None:
    with pytest.raises(ValueError):
        repository.save_all("", [UserMessage("x")])
    (span,) = [s for s in spans.get_finished_spans() if s.name == "chatmem save_all"]
    assert span.attributes is not None
    assert span.attributes["error.type"] == "InvalidArgumentError"


def test_retries_are_counted_and_giving_up_is_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with (
        caplog.at_level(logging.DEBUG, logger="chatmem"),
        pytest.raises(ConcurrencyError),
    ):
        retry(lambda: None, attempts=3, what="test write", max_sleep=0.001)
    points = _points("chatmem.retries")
    retried = [p for p in points if p.attributes["chatmem.what"] == "test write"]
    assert retried and retried[0].value == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and "test write gave up after 3 tries" in warnings[0].getMessage()
    assert all(r.name.startswith("chatmem") for r in caplog.records)


def test_without_opentelemetry_nothing_is_wrapped() -> None:
    code = (
        "import chatmem.core as c\n"
        "import chatmem.core.backend as b\n"
        "fn = b.BaseChatMemoryRepository.__dict__['window_add']\n"
        "assert not hasattr(fn, '__wrapped__'), fn\n"
        "print('plain')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"CHATMEM_OTEL": "0", "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "plain", done.stderr
    wrapped = BaseChatMemoryRepository.__dict__["window_add"]
    assert hasattr(wrapped, "__wrapped__")  # here the API is installed: wrapped once
