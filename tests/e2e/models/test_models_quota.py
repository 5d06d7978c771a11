"""The call policy at default settings against a provider quota, through the real
langchain-google-genai client and the simulator's quota mode: concurrent runs share the
adaptive rate, finish, use most of the quota and are seldom refused; budgets count every
billed attempt, retries included."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents.engine import Engine
from agents.params import RunParams
from agents.result import RunResult
from app.settings import Settings
from calls.models import SettingsModelFactory
from testkit.fakes import FakeCall
from testkit.gemini_roles import from_scenario
from testkit.gemini_sim import Fault, GeminiSimulator, Quota, SimRequest, SimulatorMaker
from testkit.gemini_sim import Reply as SimReply
from testkit.scenario import Scenario

pytestmark = pytest.mark.e2e

QUOTA_RPS = 6.0


def wide_scenario(depth: int = 3, width: int = 3) -> Scenario:
    """A plan of two steps whose every step (to `depth`) proposes `width` next steps: more
    work than any budget below lets a run finish, so demand stays above the quota."""
    replans: dict[str, list[str]] = {}
    frontier = ["Survey", "Compare"]
    for _ in range(depth):
        nxt: list[str] = []
        for step in frontier:
            children = [f"{step} / {i}" for i in range(1, width + 1)]
            replans[step] = children
            nxt.extend(children)
        frontier = nxt
    return Scenario(plan=["Survey", "Compare"], replans=replans)


def _settings(tmp_path: Any, **overrides: Any) -> Settings:
    # The defaults a user runs with: no fixed rate, default in-flight cap, retries, backoff.
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        model="google_genai:gemini-2.5-flash",
        data_dir=tmp_path / "data",
        **overrides,
    )


def _engine(settings: Settings) -> Engine:
    return Engine(settings=settings, models=SettingsModelFactory(settings), tools=[])


def quota_share(sim: GeminiSimulator, quota: Quota) -> tuple[float, float]:
    """(share of the quota used, share of requests rejected), from the simulator's own log:
    admitted requests over what the bucket could have admitted between the first and the last
    request (its burst plus the refill)."""
    requests = sim.requests
    span = requests[-1].at - requests[0].at
    capacity = quota.burst + quota.rps * span
    return quota.admitted / capacity, quota.rejected / len(requests)


async def test_three_runs_share_a_quota_finish_and_use_most_of_it(
    gemini_sim: SimulatorMaker, tmp_path: Any
) -> None:
    quota = Quota(rps=QUOTA_RPS, burst=int(QUOTA_RPS))
    sim = gemini_sim(from_scenario(wide_scenario()), latency_s=0.2, quota=quota)
    engine = _engine(_settings(tmp_path))
    # Long enough runs that the share measures the steady state, not the first cuts alone.
    params = RunParams(max_paths=8, max_nodes=48)

    results: list[RunResult] = await asyncio.gather(
        *(engine.run(f"Question {i}", params) for i in range(3))
    )

    sim.check()
    assert [r.status for r in results] == ["done"] * 3, [r.error for r in results]
    used, rejected = quota_share(sim, quota)
    assert used >= 0.70, (used, rejected, len(sim.requests))
    assert rejected <= 0.15, (used, rejected, len(sim.requests))
    # Rejections are the limiter's business, not the runs' failures: they are reported apart.
    assert sum(r.metrics["rate_limited"] for r in results) == quota.rejected
    assert sum(r.metrics["llm_calls"] for r in results) == quota.admitted


def _fail_first_attempts() -> Any:
    """An override failing the first attempt of every distinct request with a 503."""
    seen: set[str] = set()

    def override(request: SimRequest, call: FakeCall) -> SimReply | None:
        key = f"{call.role}\x00{request.system}\x00{request.prompt}\x00{request.tool_names}"
        if key in seen:
            return None
        seen.add(key)
        return Fault(503, "first attempts fail")

    return override


@pytest.mark.parametrize("budget", [9, 14])
async def test_a_call_budget_counts_every_billed_attempt_and_is_never_exceeded(
    gemini_sim: SimulatorMaker, tmp_path: Any, budget: int
) -> None:
    sim = gemini_sim(from_scenario(wide_scenario(), override=_fail_first_attempts()))
    engine = _engine(_settings(tmp_path, model_retry_base_delay_s=0.0))
    params = RunParams(max_paths=6, max_llm_calls=budget, max_concurrency=6)

    result = await engine.run("How far does the budget go?", params)

    sim.check()
    billed = [r for r in sim.requests if r.status != 429]
    assert any(r.status == 503 for r in billed)  # retries happened
    assert result.metrics["llm_calls"] == len(billed)  # each attempt counted, retries too
    # Calls are counted before they go out, so even concurrent ones stay within the budget.
    assert len(billed) <= budget


async def test_a_token_budget_overshoots_by_at_most_the_calls_in_flight(
    gemini_sim: SimulatorMaker, tmp_path: Any
) -> None:
    sim = gemini_sim(from_scenario(wide_scenario()), latency_s=0.05)
    engine = _engine(_settings(tmp_path))
    params = RunParams(max_paths=20, max_nodes=200, max_tokens=4000, max_concurrency=6)

    result = await engine.run("How far do the tokens go?", params)

    usage = [r.usage for r in sim.requests if r.usage]
    spent = sum(u["totalTokenCount"] for u in usage)
    assert result.metrics["input_tokens"] + result.metrics["output_tokens"] == spent
    assert result.stop_reason == "budget_tokens"
    largest = max(u["totalTokenCount"] for u in usage)
    # Each call reserves an estimate first; only calls already in flight can pass the line.
    assert spent <= params.max_tokens + params.max_concurrency * largest
