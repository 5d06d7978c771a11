"""The planted-value suite through the real engine: the same seed gives the same table, and
the responder and voter never see the world's hidden numbers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agents.engine import Engine
from bench.engine_runs import bench_settings
from bench.quality import QualityConfig, params_for, run_one, run_quality
from testkit.fakes import FakeModels
from testkit.planted import PlantedScript
from testkit.planted_structures import build_world

TINY = QualityConfig(
    name="test",
    seeds=(1,),
    structures=("subgoal", "corridor"),
    strategies=("mcts", "breadth"),
    curve_budgets=(24,),
    curve_seeds=(1,),
    concurrency=(1, 4),
    parallel_seeds=(1,),
)


def _without_wall(value: Any) -> Any:
    """`value` with every `wall_s` left out: the only thing the clock decides."""
    if isinstance(value, dict):
        return {k: _without_wall(v) for k, v in value.items() if k != "wall_s"}
    if isinstance(value, list):
        return [_without_wall(v) for v in value]
    return value


async def test_the_same_seeds_give_the_same_table(tmp_path: Path) -> None:
    first = await run_quality(TINY, tmp_path)
    second = await run_quality(TINY, tmp_path)

    assert _without_wall(first) == _without_wall(second)
    assert len(first["rows"]) == 4
    assert len(first["curve_rows"]) == 4
    assert set(first["totals"]) == {"mcts", "breadth"}
    for grid in first["parallel"].values():  # at the suite's budgets, at the defaults
        assert len(grid["rows"]) == 2 * 2 * 2  # structures, levels, rules
        assert {(c["in_flight_rule"], c["concurrency"]) for c in grid["cells"]} == {
            (rule, conc) for rule in ("unobserved", "virtual_loss") for conc in (1, 4)
        }


async def test_a_single_chain_falls_into_the_deceptive_trap(tmp_path: Path) -> None:
    row = await run_one("deceptive", 1, "chain", None, tmp_path)

    assert row["paths"] == 1
    assert not row["success"]
    assert row["regret"] > 0.4  # the trap's answers are at most 0.4, the best 0.9
    # One branch: every call waits for the one before (the replanner's scores stand for the
    # path's progress, so no judgement runs beside it).
    assert row["nodes_run"] + 2 <= row["serial_calls"] == row["llm_calls"]


async def test_the_responder_and_voter_never_see_a_hidden_number(tmp_path: Path) -> None:
    world = build_world("noisy", 1)
    models = FakeModels(PlantedScript(world))
    engine = Engine(settings=bench_settings(tmp_path), models=models, tools=[])
    hidden = {repr(x) for n in world.walk() for x in (n.value, n.quality)}

    result = await engine.run(world.task, params_for("noisy", "breadth"))

    assert result.status == "done"
    seen = models.recorder.by_role("responder") + models.recorder.by_role("voter")
    assert models.recorder.by_role("voter")
    assert len(seen) > 2
    for call in seen:
        assert not set(re.findall(r"\d+\.\d+", call.prompt)) & hidden
        assert not re.search(r"\br\.\d", call.prompt)  # no world keys
