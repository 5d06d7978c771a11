"""Whole engine runs on the bundled local model (SmolLM2-135M via llama.cpp): offline, no key,
every stage a real model call. The answers are weak; what is tested is that the stages run."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from langchain_core.tools import tool

from agents.engine import Engine
from agents.params import RunParams
from agents.result import RunResult
from app.settings import Settings
from calls.local_model import local_stats
from calls.models import SettingsModelFactory
from testkit.event_log import EventLog

# Real llama.cpp runs of a few paths: minutes on a loaded 2-core machine.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

logger = logging.getLogger(__name__)

TASK = "Why are honey bees important, and what threatens them?"


@tool
def encyclopedia(query: str) -> str:
    """Look a topic up in an offline encyclopedia."""
    return (
        "Honey bees (Apis mellifera) live in colonies of 20,000-80,000 workers. They pollinate "
        "crops and make honey from nectar. Colony collapse disorder was reported from 2006."
    )


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "LATS_MODEL"):
        monkeypatch.delenv(name, raising=False)


async def _run(tmp_path: Any, events: EventLog, **params: Any) -> RunResult:
    # No model configured and no key: the factory picks the local model by itself. The seed
    # (LATS_LOCAL_SEED, 0 by default) makes the run repeatable.
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")
    factory = SettingsModelFactory(settings)
    factory.check()
    assert factory.model_string("planner") == "local"
    engine = Engine(settings=settings, models=factory, tools=[encyclopedia])
    before = local_stats()
    started = time.monotonic()
    defaults: dict[str, Any] = {
        "strategy": "mcts",
        "max_paths": 2,
        "max_depth": 2,
        "max_plan_steps": 3,
        "max_candidates": 2,
        "max_concurrency": 2,
    }
    run_params = RunParams(**{**defaults, **params})
    result = await engine.run(TASK, run_params, sink=events)
    wall = time.monotonic() - started
    after = local_stats()
    tokens = after.completion_tokens - before.completion_tokens
    seconds = after.seconds - before.seconds
    logger.info(
        "local run: %.1fs wall, %d calls, %d output tokens, %.1f tokens/s",
        wall,
        after.calls - before.calls,
        tokens,
        tokens / seconds if seconds else 0.0,
    )
    return result


async def test_a_full_run_plans_uses_tools_replans_and_answers_offline(
    no_keys: None, tmp_path: Any, events: EventLog
) -> None:
    # The evaluator is off here: its pruning leaves a 135M model one path nearly every time.
    # Whether the model branches at all is its own decision (it may judge the first step's
    # results enough): with two answers the local model votes, with one the vote is skipped.
    # The voter's schema-bound reply is also pinned in tests/integration/models.
    result = await _run(tmp_path, events, evaluate=False)

    assert result.status == "done", result.error
    assert result.answer
    calls = result.metrics["llm_calls_by_role"]
    assert {"planner", "executor", "replanner", "responder"} <= set(calls)
    assert 1 <= result.metrics["paths_completed"] <= 2
    assert result.metrics["tool_calls"] >= 1
    assert result.metrics["input_tokens"] > 0
    assert result.metrics["output_tokens"] > 0
    (vote,) = events.of("vote")
    assert vote.chosen_id in vote.candidates
    if result.metrics["paths_completed"] == 2:
        assert vote.method == "llm"
        assert calls["voter"] >= 1
    else:
        assert vote.method == "single"
        assert "voter" not in calls
    assert any(e.name == "encyclopedia" and e.ok for e in events.of("tool_call"))
    # Each answer records the model's mean token log-probability (docs/models.md).
    answered = [n for n in result.nodes if n["answer"] is not None]
    confidences = [n.get("confidence") for n in answered]
    assert confidences
    assert all(c is not None and -50 < c <= 0 for c in confidences), confidences


async def test_a_run_with_the_evaluator_completes_offline(
    no_keys: None, tmp_path: Any, events: EventLog
) -> None:
    # Early stop on: a path's end is judged by the evaluator. One path is the cheapest run
    # that calls it; the first test checks the other roles.
    result = await _run(tmp_path, events, max_paths=1, satisfaction=0.99)

    assert result.status == "done", result.error
    assert result.answer
    calls = result.metrics["llm_calls_by_role"]
    assert {"planner", "executor", "replanner", "evaluator", "responder"} <= set(calls)
    assert events.types()[-1] == "done"
