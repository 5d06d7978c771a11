"""An identical request reuses a finished run's result (agents/reuse.py): what counts as
identical, how long a result is kept, what `use_cache=false` does, and which runs are never
kept. Scripted models through the real engine; the kept results live in the engine's cache."""

from __future__ import annotations

import pytest

from agents import reuse
from agents.engine import Engine
from agents.params import RunParams
from agents.state import Recollection
from agents.steering import SteerCommand
from app.settings import Settings
from testkit.fakes import FakeModels
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker

SCENARIO = Scenario(plan=["A"], replans={"A": ["B", "C"], "B": [], "C": []})
PARAMS = RunParams(max_paths=2)


async def test_an_identical_request_reuses_and_any_difference_searches(
    make_engine: EngineMaker,
) -> None:
    engine, models = make_engine(SCENARIO)
    first = await engine.run("t", PARAMS)
    calls = len(models.recorder.calls)

    same = await engine.run("t", PARAMS)
    assert (len(models.recorder.calls), same.reused_from) == (calls, first.run_id)
    again = await engine.run("t", PARAMS)
    assert again.reused_from == first.run_id  # the original run, not the reusing one

    for task, params in (("t?", PARAMS), ("t", RunParams(max_paths=1))):
        other = await engine.run(task, params)
        assert other.reused_from is None
        assert other.metrics["llm_calls"] + other.metrics["cache_hits"] > 0


async def test_a_follow_up_with_other_thread_context_searches(make_engine: EngineMaker) -> None:
    engine, _ = make_engine(SCENARIO)
    known: Recollection = {
        "turns": [{"run_id": "r0", "question": "q0", "answer": "a0"}],
        "evidence": [],
    }
    await engine.run("t", PARAMS)

    follow_up = await engine.run("t", PARAMS, known=known)
    same_follow_up = await engine.run("t", PARAMS, known=known)

    assert follow_up.reused_from is None
    assert same_follow_up.reused_from == follow_up.run_id


async def test_use_cache_false_never_reuses_and_its_result_replaces_the_kept_one(
    make_engine: EngineMaker,
) -> None:
    engine, _ = make_engine(SCENARIO)
    await engine.run("t", PARAMS)

    fresh = await engine.run("t", PARAMS.model_copy(update={"use_cache": False}))
    after = await engine.run("t", PARAMS)

    assert fresh.reused_from is None
    assert fresh.metrics["llm_calls"] > 0
    assert after.reused_from == fresh.run_id


async def test_a_result_older_than_the_setting_is_not_reused(
    make_engine: EngineMaker, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    now = [1_000_000.0]
    monkeypatch.setattr(reuse.time, "time", lambda: now[0])
    engine, _ = make_engine(SCENARIO)
    first = await engine.run("t", PARAMS)

    now[0] += settings.result_reuse_s - 1
    young = await engine.run("t", PARAMS)
    now[0] += 2
    old = await engine.run("t", PARAMS)

    assert young.reused_from == first.run_id
    assert old.reused_from is None


class OneBoost:
    """A steering source with one command: boost the root."""

    async def commands_after(self, run_id: str, after: int) -> list[SteerCommand]:
        return [SteerCommand(id=1, command="boost", node_id="n1")] if after < 1 else []


async def test_a_steered_run_is_never_kept(settings: Settings) -> None:
    steered = Engine(settings=settings, models=FakeModels(SCENARIO), tools=[], commands=OneBoost())
    first = await steered.run("t", PARAMS)
    plain = Engine(settings=settings, models=FakeModels(SCENARIO), tools=[], cache=steered.cache)

    second = await plain.run("t", PARAMS)

    assert first.status == second.status == "done"
    assert second.reused_from is None


async def test_reuse_off_searches_every_time(settings: Settings) -> None:
    engine = Engine(
        settings=settings.model_copy(update={"result_reuse_s": 0}),
        models=FakeModels(SCENARIO),
        tools=[],
    )
    await engine.run("t", PARAMS)

    second = await engine.run("t", PARAMS)

    assert second.reused_from is None
    assert second.metrics["cache_hits"] > 0  # the model-call cache still answers
