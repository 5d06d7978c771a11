"""Whole engine runs through the real langchain-google-genai client against the Gemini
simulator: outcomes, and what the provider was sent."""

from __future__ import annotations

import logging
import time
from typing import Any

import jsonschema
import pytest
from langchain_core.tools import BaseTool, tool

from agents.engine import Engine
from agents.params import RunParams
from agents.result import RunResult
from app.settings import Settings
from calls.models import SettingsModelFactory
from testkit.event_log import EventLog
from testkit.gemini_roles import from_scenario, role_of
from testkit.gemini_sim import (
    Fault,
    GeminiSimulator,
    RandomFaults,
    Script,
    SimRequest,
    SimulatorMaker,
    Text,
)
from testkit.gemini_sim import Reply as SimReply
from testkit.scenario import Scenario

pytestmark = pytest.mark.e2e


@tool
def lookup(query: str) -> str:
    """Look a query up in the reference collection."""
    return f"reference facts about {query}"


def _scenario() -> Scenario:
    return Scenario(
        plan=["Find sources", "Summarise"],
        replans={"Find sources": ["Summarise", "Compare"]},
        tools={"Find sources": ("lookup", {"query": "sources"})},
    )


def _thinking(script: Script) -> Script:
    # Gemini 2.5 reports thinking tokens on text replies; the run's metrics must include them.
    def with_thoughts(request: Any) -> Any:
        reply = script(request)
        return Text(reply.text, thoughts_tokens=40) if isinstance(reply, Text) else reply

    return with_thoughts


def _settings(tmp_path: Any, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "model": "google_genai:gemini-2.5-flash",
        "model_retry_base_delay_s": 0.0,
        "model_rps": 200.0,
        "model_burst": 8,
        "data_dir": tmp_path / "data",
        **overrides,
    }
    return Settings(_env_file=None, **values)


async def _run(
    settings: Settings, tools: list[BaseTool], events: EventLog | None = None
) -> RunResult:
    engine = Engine(settings=settings, models=SettingsModelFactory(settings), tools=tools)
    # Early stop on (never reached): every path's end is judged, so the evaluator's structured
    # call goes through the client too.
    params = RunParams(strategy="mcts", max_paths=2, max_concurrency=3, satisfaction=0.99)
    if events is None:
        return await engine.run("What do the sources say?", params)
    return await engine.run("What do the sources say?", params, sink=events)


def _of_role(sim: GeminiSimulator, role: str) -> list[Any]:
    return [r for r in sim.requests if role_of(r) == role]


async def test_a_full_run_completes_through_the_gemini_client(
    gemini_sim: SimulatorMaker, tmp_path: Any, events: EventLog
) -> None:
    sim = gemini_sim(_thinking(from_scenario(_scenario())))

    result = await _run(_settings(tmp_path), [lookup], events)

    sim.check()
    assert result.status == "done", result.error
    assert result.stop_reason == "max_paths"
    assert result.answer in {"answer via Summarise", "answer via Compare"}
    assert events.types().count("vote") == 1
    calls = dict(result.metrics["llm_calls_by_role"])
    assert calls.pop("evaluator", 0) >= 1  # how often it scores is the search's business
    assert calls == {
        "executor": 4,  # Find sources: tool call + answer; Summarise; Compare
        "planner": 1,
        "replanner": 3,
        "responder": 2,
        "voter": 1,
    }
    assert [r.status for r in sim.requests] == [200] * len(sim.requests)
    tool_events = events.of("tool_call")
    assert [(e.name, e.ok) for e in tool_events] == [("lookup", True)]


async def test_token_usage_with_thinking_reaches_the_run_metrics(
    gemini_sim: SimulatorMaker, tmp_path: Any
) -> None:
    sim = gemini_sim(_thinking(from_scenario(_scenario())))

    result = await _run(_settings(tmp_path), [lookup])

    usage = [r.usage for r in sim.requests if r.usage]
    assert result.metrics["input_tokens"] == sum(u["promptTokenCount"] for u in usage)
    assert result.metrics["output_tokens"] == sum(
        u["candidatesTokenCount"] + u.get("thoughtsTokenCount", 0) for u in usage
    )
    assert any(u.get("thoughtsTokenCount") for u in usage)


async def test_the_vote_schema_sent_is_a_json_schema_string_enum(
    gemini_sim: SimulatorMaker, tmp_path: Any
) -> None:
    sim = gemini_sim(from_scenario(_scenario()))

    result = await _run(_settings(tmp_path), [lookup])

    (vote,) = _of_role(sim, "voter")
    schema = vote.response_schema
    assert schema is not None
    jsonschema.Draft202012Validator.check_schema(schema)
    choice = schema["properties"]["choice"]
    assert choice["type"] == "string"  # JSON Schema's lower-case type, not Gemini's "STRING"
    assert sorted(choice["enum"]) == sorted(n["id"] for n in result.nodes if n["answer"])
    assert len(choice["enum"]) == 2
    assert result.chosen_id in choice["enum"]
    jsonschema.validate({"choice": choice["enum"][0]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"choice": "not-a-candidate"}, schema)
    assert vote.generation_config["responseMimeType"] == "application/json"
    assert vote.generation_config["temperature"] == 0.0


async def test_the_executor_declares_its_tools_and_returns_their_results(
    gemini_sim: SimulatorMaker, tmp_path: Any
) -> None:
    sim = gemini_sim(from_scenario(_scenario()))

    await _run(_settings(tmp_path), [lookup])

    executor_calls = _of_role(sim, "executor")
    assert executor_calls
    for request in executor_calls:
        (declaration,) = request.function_declarations
        assert declaration["name"] == "lookup"
        assert declaration["description"] == "Look a query up in the reference collection."
        assert declaration["parameters"]["required"] == ["query"]
    returned = [fr for r in executor_calls for fr in r.function_responses]
    assert [fr["name"] for fr in returned] == ["lookup"]
    assert "reference facts about sources" in str(returned[0]["response"])
    assert all(not r.function_declarations for r in _of_role(sim, "planner"))


async def test_a_run_completes_when_a_fifth_of_calls_fail_with_429_or_503(
    gemini_sim: SimulatorMaker, tmp_path: Any
) -> None:
    sim = gemini_sim(
        from_scenario(_scenario()), faults=RandomFaults(0.2, statuses=(429, 503), seed=5)
    )

    result = await _run(_settings(tmp_path, model_max_retries=4), [lookup])

    sim.check()
    assert result.status == "done", result.error
    assert result.answer in {"answer via Summarise", "answer via Compare"}
    faults = [r for r in sim.requests if r.status != 200]
    assert faults, "the seed should inject at least one fault"
    assert {r.status for r in faults} <= {429, 503}
    assert len(faults) / len(sim.requests) < 0.5


def _refusing(role: str, fault: Fault) -> Script:
    """The scenario's replies, but every call of `role` answered with `fault`."""
    scripted = from_scenario(_scenario())

    def script(request: Any) -> Any:
        return fault if role_of(request) == role else scripted(request)

    return script


async def test_a_400_is_not_retried_and_the_run_fails_clearly(
    gemini_sim: SimulatorMaker, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    rejected = Fault(400, "Invalid value at 'generation_config.response_json_schema'")
    sim = gemini_sim(_refusing("planner", rejected))

    with caplog.at_level(logging.WARNING):
        result = await _run(_settings(tmp_path, model_max_retries=4), [lookup])

    assert result.status == "failed"
    assert result.error == {"code": "plan", "message": "the planner produced no usable plan"}
    assert [r.status for r in sim.requests] == [400]
    assert "planner model call was rejected by the provider (HTTP 400; not retried)" in (
        caplog.text
    )


async def test_a_400_on_the_vote_falls_back_without_a_retry(
    gemini_sim: SimulatorMaker, tmp_path: Any
) -> None:
    sim = gemini_sim(_refusing("voter", Fault(400, "schema rejected")))

    result = await _run(_settings(tmp_path, model_max_retries=4), [lookup])

    assert result.status == "done"
    assert [r.status for r in _of_role(sim, "voter")] == [400]


async def test_an_identical_rerun_after_a_stop_with_calls_in_flight_makes_no_model_call(
    gemini_sim: SimulatorMaker, tmp_path: Any
) -> None:
    """Three branches, each step calling a tool; `max_paths` 1 stops the search while the
    other branches' calls are in flight, so a replay could take another turn than the first
    run. The rerun reuses the first run's result (agents/reuse.py): no model call, whatever
    the timing; `use_cache=false` searches again."""
    scenario = Scenario(
        plan=["Find sources"],
        replans={"Find sources": ["Summarise", "Compare", "Contrast"]},
        tools={step: ("lookup", {"query": step}) for step in ("Summarise", "Compare", "Contrast")},
    )
    replies = from_scenario(scenario)

    def contrast_is_slow(request: SimRequest) -> SimReply:
        if "Step to execute: Contrast" in request.prompt:
            time.sleep(0.5)  # still in flight when the first path completes
        return replies(request)

    sim = gemini_sim(contrast_is_slow, latency_s=0.05)
    settings = _settings(tmp_path)
    engine = Engine(settings=settings, models=SettingsModelFactory(settings), tools=[lookup])
    params = RunParams(strategy="mcts", max_paths=1, max_concurrency=4)
    task = "What do the sources say?"

    first = await engine.run(task, params)
    sent = len(sim.requests)
    events = EventLog()
    second = await engine.run(task, params, sink=events)
    reused = len(sim.requests)
    fresh = await engine.run(task, params.model_copy(update={"use_cache": False}))

    assert first.status == "done", first.error
    assert first.stop_reason == "max_paths"
    assert first.metrics["tool_calls"] >= 2
    assert first.metrics["jobs_after_stop"] >= 1  # work was in flight at the stop
    assert reused == sent  # the rerun sent the provider nothing
    assert second.metrics["llm_calls"] == 0
    assert second.reused_from == first.run_id
    assert (second.answer, second.chosen_id, second.citations) == (
        first.answer,
        first.chosen_id,
        first.citations,
    )
    assert events.types() == ["run_started", "done"]
    assert fresh.reused_from is None
    assert fresh.metrics["llm_calls"] > 0
    assert len(sim.requests) > reused
