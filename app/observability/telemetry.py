"""OpenTelemetry traces: a span per run, per node job, per model call and per tool call.

    invoke_agent plantree                      (the run)
    ├── plantree.plan / execute / expand / respond / vote   (one job, by node)
    │   ├── chat <model>                       (GenAI semantic conventions)
    │   └── execute_tool <name>

Every span carries `plantree.run_id` (and `plantree.node_id` where there is one). Jobs run in
fresh asyncio contexts, so parents are passed explicitly, not through the ambient context.
Traces are exported over OTLP/HTTP only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; otherwise nothing is recorded. A tracer provider
installed by the host process (tests, an auto-instrumentation agent) is used as it is.
"""

from __future__ import annotations

import logging
import os
from uuid import UUID

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from agents import observers
from agents.events import TERMINAL_TYPES, Event
from agents.observers import RunObserver
from calls import observers as call_observers
from calls.readings import ModelCall, ModelReading, ToolCall, ToolReading

logger = logging.getLogger(__name__)

JOB_OF_ROLE: dict[str, str] = {
    "planner": "plan",
    "executor": "execute",
    "replanner": "expand",
    "evaluator": "expand",
    "responder": "respond",
    "voter": "vote",
}
# The event that ends each job, and where it names the job's node.
JOB_END: dict[str, tuple[str, str | None]] = {
    "plan": ("plan", None),
    "node_finished": ("execute", "node_id"),
    "candidates": ("expand", "parent_id"),
    "path_completed": ("respond", "node_id"),
    "vote": ("vote", None),
}
# GenAI semantic conventions' provider names for LangChain's.
PROVIDERS = {"google_genai": "gcp.gemini", "google_vertexai": "gcp.vertex_ai", "openai": "openai"}

JobKey = tuple[str, str, str | None]


class TracingObserver(RunObserver):
    """Turns run events and calls into spans (installed with `agents.observers.add`)."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self._runs: dict[str, Span] = {}
        self._jobs: dict[JobKey, Span] = {}
        self._calls: dict[UUID, Span] = {}

    # -- spans ----------------------------------------------------------------------------------
    def _run(self, run_id: str) -> Span:
        span = self._runs.get(run_id)
        if span is None:
            span = self.tracer.start_span(
                "invoke_agent plantree",
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "plantree",
                    "gen_ai.conversation.id": run_id,
                    "plantree.run_id": run_id,
                },
            )
            self._runs[run_id] = span
        return span

    def _job(self, run_id: str, kind: str, node_id: str | None) -> Span:
        key = (run_id, kind, node_id)
        span = self._jobs.get(key)
        if span is None:
            attributes = {"plantree.run_id": run_id, "plantree.job": kind}
            if node_id is not None:
                attributes["plantree.node_id"] = node_id
            span = self.tracer.start_span(
                f"plantree.{kind}",
                context=trace.set_span_in_context(self._run(run_id)),
                attributes=attributes,
            )
            self._jobs[key] = span
        return span

    def _end_job(self, key: JobKey, failed: bool = False) -> None:
        span = self._jobs.pop(key, None)
        if span is not None:
            if failed:
                span.set_status(Status(StatusCode.ERROR, "the step failed"))
            span.end()

    # -- RunObserver ----------------------------------------------------------------------------
    def on_event(self, event: Event, seconds: float) -> None:
        run_id = event.run_id
        data = event.model_dump()
        if event.type == "node_started":
            self._job(run_id, "execute", data["node_id"])
        elif event.type in JOB_END:
            kind, field = JOB_END[event.type]
            node_id = data[field] if field else None
            self._end_job((run_id, kind, node_id), failed=data.get("status") == "failed")
        elif event.type in TERMINAL_TYPES:
            self._finish_run(run_id, event.type, data)

    def _finish_run(self, run_id: str, kind: str, data: dict[str, object]) -> None:
        for key in [k for k in self._jobs if k[0] == run_id]:
            self._end_job(key)  # jobs cut short by the run's end
        span = self._run(run_id)
        span.set_attribute("plantree.outcome", kind)
        span.set_attribute("plantree.stop_reason", str(data.get("stop_reason")))
        metrics = data.get("metrics")
        if isinstance(metrics, dict):
            span.set_attribute("gen_ai.usage.input_tokens", int(metrics.get("input_tokens", 0)))
            span.set_attribute("gen_ai.usage.output_tokens", int(metrics.get("output_tokens", 0)))
        if kind == "error":
            span.set_attribute("error.type", str(data.get("code")))
            span.set_status(Status(StatusCode.ERROR, str(data.get("message"))))
        span.end()
        del self._runs[run_id]

    # -- call readings --------------------------------------------------------------------------
    async def model_started(self, call: ModelCall) -> None:
        parent = self._job(call.run_id, JOB_OF_ROLE.get(call.role, call.role), call.node_id)
        attributes: dict[str, str] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": call.model,
            "gen_ai.provider.name": PROVIDERS.get(call.provider, call.provider),
            "plantree.role": call.role,
            "plantree.run_id": call.run_id,
        }
        if call.node_id is not None:
            attributes["plantree.node_id"] = call.node_id
        self._calls[call.key] = self.tracer.start_span(
            f"chat {call.model}",
            context=trace.set_span_in_context(parent),
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )

    async def model_ended(self, reading: ModelReading) -> None:
        span = self._calls.pop(reading.call.key, None)
        if span is None:
            return
        span.set_attribute("plantree.cache_hit", reading.cache_hit)
        span.set_attribute("gen_ai.usage.input_tokens", reading.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", reading.output_tokens)
        if reading.error is not None:
            span.set_attribute("error.type", "429" if reading.rate_limited else reading.error)
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    async def tool_started(self, call: ToolCall) -> None:
        parent = self._job(call.run_id, "execute", call.node_id)
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "plantree.run_id": call.run_id,
        }
        if call.node_id is not None:
            attributes["plantree.node_id"] = call.node_id
        if call.call_id:
            attributes["gen_ai.tool.call.id"] = call.call_id
        self._calls[call.key] = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=trace.set_span_in_context(parent),
            attributes=attributes,
        )

    async def tool_ended(self, reading: ToolReading) -> None:
        span = self._calls.pop(reading.call.key, None)
        if span is None:
            return
        if not reading.ok:
            span.set_attribute("error.type", reading.error_kind or "tool_error")
            span.set_status(Status(StatusCode.ERROR))
        span.end()


class RunIds(logging.Filter):
    """Puts the run and node ids on log records made during a run's model and tool calls
    (the SDKs' own lines included): as `run_id`/`node_id` attributes for structured handlers,
    and as a `run=… node=…` prefix when the text does not name the run already."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = call_observers.current_ids()
        if ids is not None and not hasattr(record, "run_id"):
            record.run_id, record.node_id = ids[0], ids[1] or "-"
            if isinstance(record.msg, str) and "run=" not in record.msg:
                record.msg = f"run={ids[0]} node={ids[1] or '-'} {record.msg}"
        return True


def install_log_ids(logger_: logging.Logger | None = None) -> None:
    """Add `RunIds` to the handlers of `logger_` (default: the root logger), once each."""
    for handler in (logger_ or logging.getLogger()).handlers:
        if not any(isinstance(f, RunIds) for f in handler.filters):
            handler.addFilter(RunIds())


def flush(timeout_ms: int = 5000) -> None:
    """Export the spans still buffered (at shutdown: uvicorn ends the process by re-raising
    SIGTERM, so exit handlers do not run)."""
    provider = trace.get_tracer_provider()
    force_flush = getattr(provider, "force_flush", None)
    if callable(force_flush):
        force_flush(timeout_ms)


def otlp_configured() -> bool:
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _provider_installed() -> bool:
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def install() -> TracingObserver | None:
    """Trace runs when an OTLP endpoint is configured (or a provider is already installed);
    once per process. Log records made during calls get the run and node ids either way."""
    install_log_ids()
    tracing = [o for o in observers.installed() if isinstance(o, TracingObserver)]
    if tracing:
        return tracing[0]
    if not _provider_installed():
        if not otlp_configured():
            return None
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        named = "OTEL_SERVICE_NAME" in os.environ or "service.name=" in os.environ.get(
            "OTEL_RESOURCE_ATTRIBUTES", ""
        )  # the environment's name wins over ours
        resource = Resource.create({} if named else {"service.name": "plantree"})
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        logger.info("exporting traces over OTLP")
    observer = TracingObserver(trace.get_tracer("plantree"))
    observers.add(observer)
    return observer
