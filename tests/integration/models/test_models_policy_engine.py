"""Scripted models behind the production call policy in whole engine runs: every attempt is
counted (retries too), cache hits are free, and 429s are reported apart from calls."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.exceptions import ModelAPIError

from agents.engine import Engine
from agents.params import RunParams
from app.settings import Settings
from testkit.fakes import FakeCall, FakeModels, Reply
from testkit.policy_models import ThroughPolicy
from testkit.scenario import Scenario


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Results never reused (agents/reuse.py): a rerun searches again, through the model-call
    cache, which is what these tests are about."""
    return settings.model_copy(update={"result_reuse_s": 0})


def _scenario() -> Scenario:
    return Scenario(
        plan=["Find sources", "Summarise"],
        replans={"Find sources": ["Summarise", "Compare"]},
    )


def _flaky_first(scenario: Scenario) -> Any:
    """Every executor call fails once with a retryable server error, then answers."""
    failed: set[str] = set()

    def script(call: FakeCall) -> Reply:
        if call.role == "executor" and call.prompt not in failed:
            failed.add(call.prompt)
            return ModelAPIError("503 from the provider")
        return scenario.reply(call)

    return script


async def test_retries_are_counted_as_calls(settings: Settings) -> None:
    fakes = FakeModels(_flaky_first(_scenario()))
    engine = Engine(settings=settings, models=ThroughPolicy(fakes, settings), tools=[])

    result = await engine.run("Which sources agree?", RunParams(max_paths=2))

    assert result.status == "done", result.error
    executor_calls = len(fakes.recorder.by_role("executor"))
    assert result.metrics["llm_calls_by_role"]["executor"] == executor_calls
    assert result.metrics["llm_calls"] == len(fakes.recorder.calls)
    assert result.metrics["rate_limited"] == 0


async def test_an_identical_rerun_is_served_by_the_cache_for_free(settings: Settings) -> None:
    fakes = FakeModels(_scenario())
    engine = Engine(settings=settings, models=ThroughPolicy(fakes, settings), tools=[])
    params = RunParams(max_paths=2, max_concurrency=1)

    first = await engine.run("Which sources agree?", params)
    made = len(fakes.recorder.calls)
    again = await engine.run("Which sources agree?", params)

    assert first.metrics["llm_calls"] == made
    assert len(fakes.recorder.calls) == made
    assert again.metrics["llm_calls"] == 0
    assert again.metrics["cache_hits"] == made
