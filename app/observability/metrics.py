"""Prometheus metrics, served at `/metrics` (app/observability/metrics_route.py): runs, the run
queue, model and tool calls, the cache, event latency, HTTP requests and Redis outages.

Model and tool figures come from the readings of every call (a subscriber to the call
observers, through `agents.observers`), run figures from the run's events, queue figures from
the run queue.
With several processes (API replicas, workers), set `PROMETHEUS_MULTIPROC_DIR` to an empty
directory shared by them before they start: each process then writes its values there and
`/metrics` sums them (docs/integrations.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from starlette.types import Message, Receive, Scope, Send

from agents import observers
from agents.events import STATUS_OF_TERMINAL, Event, RunError
from agents.observers import RunObserver
from app.http.asgi import HttpMiddleware
from app.runs.queue import LocalRunQueue, RunQueue
from app.settings import Settings
from calls.readings import ModelReading, ToolReading
from calls.settings import Role

_FAST = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_SLOW = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)

RUNS = Counter("plantree_runs", "Runs that ended, by status.", ["status"])
RUNS_ACTIVE = Gauge("plantree_runs_active", "Runs executing now.", multiprocess_mode="livesum")
RUNS_QUEUED = Gauge(
    "plantree_runs_queued", "Runs waiting for a slot (queue depth).", multiprocess_mode="livesum"
)
QUEUE_WAIT = Histogram(
    "plantree_run_queue_wait_seconds", "Time a run waited for a slot.", buckets=_SLOW
)
RUN_ERRORS = Counter(
    "plantree_run_errors",
    "Runs that failed, by error code (docs/events.md; `worker_lost`: its workers died holding "
    "it too often).",
    ["code"],
)
EVENTS = Counter("plantree_events", "Run events, by type.", ["type"])
EVENT_LATENCY = Histogram(
    "plantree_event_latency_seconds",
    "Time to persist one run event and hand it to its followers.",
    buckets=_FAST,
)
MODEL_CALLS = Counter(
    "plantree_model_calls", "Model calls (cache hits excluded).", ["role", "model"]
)
MODEL_TOKENS = Counter(
    "plantree_model_tokens", "Model tokens, by kind (input, output).", ["role", "model", "kind"]
)
MODEL_ERRORS = Counter(
    "plantree_model_errors", "Model calls that failed.", ["role", "model", "error"]
)
MODEL_RATE_LIMITED = Counter(
    "plantree_model_rate_limited",
    "Model calls refused with 429/RESOURCE_EXHAUSTED.",
    ["role", "model"],
)
MODEL_RETRIES = Counter(
    "plantree_model_retries", "Model call retries, by reason.", ["role", "model", "reason"]
)
MODEL_SECONDS = Histogram(
    "plantree_model_call_seconds", "Model call wall time.", ["role", "model"], buckets=_SLOW
)
RATE_LIMIT = Gauge(
    "plantree_model_rate_limit",
    "The adaptive model rate limit (requests/s).",
    ["model"],
    multiprocess_mode="livemax",
)
REDIS_UP = Gauge(
    "plantree_redis_up",
    "1 while this process reaches the Redis (host:port/db), 0 while it is marked down and "
    'degrading (docs/deploy.md, "When Redis is down").',
    ["redis"],
    multiprocess_mode="livemin",
)
REDIS_OUTAGES = Counter(
    "plantree_redis_outages",
    "Times this process marked the Redis down, by the error that did (refused, reset, "
    "timeout, connection).",
    ["redis", "kind"],
)
CACHE_HITS = Counter("plantree_cache_hits", "Model calls served by the cache.", ["role"])
TOOL_CALLS = Counter("plantree_tool_calls", "Tool calls.", ["tool"])
TOOL_ERRORS = Counter("plantree_tool_errors", "Tool calls that failed.", ["tool", "error"])
TOOL_SECONDS = Histogram(
    "plantree_tool_call_seconds", "Tool call wall time.", ["tool"], buckets=_SLOW
)
HTTP_REQUESTS = Counter(
    "plantree_http_requests", "HTTP requests, by route and status.", ["method", "route", "status"]
)
HTTP_SECONDS = Histogram(
    "plantree_http_request_seconds",
    "HTTP request time (a stream: until it closes).",
    ["method", "route"],
    buckets=_SLOW,
)


class MetricsObserver(RunObserver):
    """Counts what runs do; installed once per process (`agents.observers.add`)."""

    # -- run events ---------------------------------------------------------------------------
    def on_event(self, event: Event, seconds: float) -> None:
        EVENTS.labels(event.type).inc()
        EVENT_LATENCY.observe(seconds)
        status = STATUS_OF_TERMINAL.get(event.type)
        if status is not None:
            RUNS.labels(status).inc()
        if isinstance(event, RunError):
            RUN_ERRORS.labels(event.code).inc()

    def rate_limit_changed(self, model: str, value: float) -> None:
        RATE_LIMIT.labels(model).set(value)

    def model_retried(self, role: Role, model: str, reason: str) -> None:
        MODEL_RETRIES.labels(role, model, reason).inc()
        if reason == "429":
            MODEL_RATE_LIMITED.labels(role, model).inc()

    # -- call readings ------------------------------------------------------------------------
    async def model_ended(self, reading: ModelReading) -> None:
        role, model = reading.call.role, reading.call.model
        if reading.cache_hit:
            CACHE_HITS.labels(role).inc()
            return
        MODEL_CALLS.labels(role, model).inc()
        MODEL_SECONDS.labels(role, model).observe(reading.seconds)
        if reading.error is not None:
            MODEL_ERRORS.labels(role, model, reading.error).inc()
        if reading.rate_limited:
            MODEL_RATE_LIMITED.labels(role, model).inc()
        MODEL_TOKENS.labels(role, model, "input").inc(reading.input_tokens)
        MODEL_TOKENS.labels(role, model, "output").inc(reading.output_tokens)

    async def tool_ended(self, reading: ToolReading) -> None:
        name = reading.call.name
        TOOL_CALLS.labels(name).inc()
        TOOL_SECONDS.labels(name).observe(reading.seconds)
        if not reading.ok:
            TOOL_ERRORS.labels(name, reading.error_kind or "tool_error").inc()


OBSERVER = MetricsObserver()


class PrometheusHealth:
    """The observer of a Redis's outage policy (app/backends/redis_health.py): reports its
    changes as `plantree_redis_up{redis}` and `plantree_redis_outages_total{redis,kind}`."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._up = REDIS_UP.labels(name)
        self._outages = REDIS_OUTAGES
        self._up.set(1)

    def went_down(self, kind: str) -> None:
        self._up.set(0)
        self._outages.labels(self._name, kind).inc()

    def came_up(self) -> None:
        self._up.set(1)


class WatchedQueue:
    """The run queue, reporting its depth, active runs and each run's wait for a slot."""

    def __init__(self, inner: RunQueue) -> None:
        self._inner = inner

    @property
    def active(self) -> int:
        return self._inner.active

    @property
    def waiting(self) -> int:
        return self._inner.waiting

    @property
    def has_room(self) -> bool:
        return self._inner.has_room

    @property
    def room(self) -> int:
        return self._inner.room

    def _update(self) -> None:
        RUNS_ACTIVE.set(self._inner.active)
        RUNS_QUEUED.set(self._inner.waiting)

    def admit(self, *, force: bool = False) -> None:
        self._inner.admit(force=force)
        self._update()

    def withdraw(self) -> None:
        self._inner.withdraw()
        self._update()

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        asked = time.perf_counter()
        try:
            async with self._inner.slot():
                QUEUE_WAIT.observe(time.perf_counter() - asked)
                self._update()
                yield
        finally:
            self._update()

    def slot(self) -> AbstractAsyncContextManager[None]:
        return self._slot()


class HttpMetrics(HttpMiddleware):
    """ASGI middleware counting requests by route template (never the raw path) and status."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = str(scope.get("method", "GET"))
            HTTP_REQUESTS.labels(method, route, str(status)).inc()
            HTTP_SECONDS.labels(method, route).observe(time.perf_counter() - started)


def exposition() -> bytes:
    """The metrics in Prometheus' text format: this process's, or every process's when
    `PROMETHEUS_MULTIPROC_DIR` is set."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        # prometheus-client leaves this constructor unannotated.
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def watched_queue(settings: Settings) -> WatchedQueue:
    """The service's in-process run queue, reporting to the metrics."""
    return WatchedQueue(LocalRunQueue(settings.max_active_runs, settings.max_queued_runs))


def install(app: FastAPI) -> None:
    """The HTTP middleware and the run observer (`/metrics` is metrics_route.py)."""
    observers.add(OBSERVER)
    app.add_middleware(HttpMetrics)
