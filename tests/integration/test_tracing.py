"""One run's OpenTelemetry spans, captured in memory: structure and GenAI attributes."""

from __future__ import annotations

import logging

import pytest
from langchain_core.tools import tool
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents import observers
from agents.params import RunParams
from app.observability.telemetry import TracingObserver, install_log_ids
from testkit.fakes import FakeCall, Reply
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker

TREE = Scenario(plan=["A"], replans={"A": ["B"]}, tools={"B": ("lookup", {"query": "b"})})


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observers.add(TracingObserver(provider.get_tracer("test")))  # gone after the test
    return exporter


def _parent(span: ReadableSpan, spans: list[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next(s for s in spans if s.context.span_id == span.parent.span_id)


async def test_a_run_is_one_trace_of_run_job_and_call_spans(
    make_engine: EngineMaker, exporter: InMemorySpanExporter
) -> None:
    engine, _ = make_engine(TREE, tools=[lookup])
    result = await engine.run("What is B?", RunParams(max_paths=1, max_concurrency=1))
    spans = list(exporter.get_finished_spans())

    roots = [s for s in spans if s.parent is None]
    assert [s.name for s in roots] == ["invoke_agent plantree"]
    run = roots[0]
    assert run.attributes is not None
    assert run.attributes["plantree.run_id"] == result.run_id
    assert run.attributes["plantree.stop_reason"] == "max_paths"
    assert {s.context.trace_id for s in spans} == {run.context.trace_id}
    assert all((s.attributes or {}).get("plantree.run_id") == result.run_id for s in spans)

    jobs = {
        (s.name, (s.attributes or {}).get("plantree.node_id"))
        for s in spans
        if _parent(s, spans) is run
    }
    assert jobs == {
        ("plantree.plan", None),
        ("plantree.execute", "n1"),
        ("plantree.expand", "n1"),
        ("plantree.execute", "n1.1"),
        ("plantree.expand", "n1.1"),
        ("plantree.respond", "n1.1"),
    }

    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == result.metrics["llm_calls"]
    for chat in chats:
        attrs = chat.attributes or {}
        job = _parent(chat, spans)
        assert job is not None
        assert job.name.startswith("plantree.")
        assert (job.attributes or {}).get("plantree.node_id") == attrs.get("plantree.node_id")
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.request.model"] == "scripted"
    assert (
        sum(int((s.attributes or {})["gen_ai.usage.input_tokens"]) for s in chats)
        == (result.metrics["input_tokens"])
    )
    assert (
        sum(int((s.attributes or {})["gen_ai.usage.output_tokens"]) for s in chats)
        == (result.metrics["output_tokens"])
    )

    (tool_span,) = [s for s in spans if s.name == "execute_tool lookup"]
    assert (tool_span.attributes or {})["gen_ai.tool.name"] == "lookup"
    assert (tool_span.attributes or {})["gen_ai.operation.name"] == "execute_tool"
    tool_job = _parent(tool_span, spans)
    assert tool_job is not None
    assert (tool_job.name, (tool_job.attributes or {})["plantree.node_id"]) == (
        "plantree.execute",
        "n1.1",
    )


async def test_a_failed_step_marks_its_job_span_as_an_error(
    make_engine: EngineMaker, exporter: InMemorySpanExporter
) -> None:
    scenario = Scenario(plan=["A"], replans={"A": ["B", "C"]}, fail={"B"})
    engine, _ = make_engine(scenario)
    await engine.run("q", RunParams(max_paths=1, max_concurrency=1))
    spans = exporter.get_finished_spans()

    failed = [
        s
        for s in spans
        if s.name == "plantree.execute" and (s.attributes or {}).get("plantree.node_id") == "n1.1"
    ]
    assert [s.status.is_ok for s in failed] == [False]


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_log_records_made_during_calls_carry_the_run_and_node_ids(
    make_engine: EngineMaker,
) -> None:
    sdk = logging.getLogger("tests.fake_sdk")
    keep = _Keep()
    sdk.addHandler(keep)
    install_log_ids(sdk)
    scenario = Scenario(plan=["A"])

    def script(call: FakeCall) -> Reply:
        sdk.warning("HTTP Request: POST %s", call.role)  # what a provider SDK logs per call
        return scenario.reply(call)

    try:
        engine, _ = make_engine(script)
        result = await engine.run("q", RunParams(max_paths=1))
    finally:
        sdk.removeHandler(keep)

    lines = {r.getMessage() for r in keep.records}
    assert f"run={result.run_id} node=- HTTP Request: POST planner" in lines
    assert f"run={result.run_id} node=n1 HTTP Request: POST executor" in lines
    assert all(getattr(r, "run_id", None) == result.run_id for r in keep.records)
