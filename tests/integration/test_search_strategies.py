"""Scores, pruning, strategies, early stop, the cache, and traces, on scripted scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.engine import Engine
from agents.params import RunParams
from app.settings import Settings
from testkit.event_log import EventLog
from testkit.fakes import FakeModels, executed_steps
from testkit.scenario import Scenario, replan_reply
from testkit.trace import tree_from_events
from tests.support.makers import EngineMaker


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Results never reused (agents/reuse.py): a rerun searches again, through the model-call
    cache, which is what these tests are about."""
    return settings.model_copy(update={"result_reuse_s": 0})


# One scenario that makes each strategy's order visible. After A, the replanner offers
# B (the evaluator's favourite), C (weak) and D; B turns out to be a poor path, D a good one.
SCENARIO = Scenario(
    plan=["A"],
    replans={"A": ["B", "C", "D"], "B": ["B1", "B2"], "C": ["C1"], "D": ["D1"]},
    priors={"B": 0.9, "C": 0.3, "D": 0.6, "B1": 0.5, "B2": 0.4, "C1": 0.5, "D1": 0.8},
    values={"A": 0.5, "B": 0.1, "C": 0.3, "D": 0.9, "B1": 0.2, "B2": 0.2, "C1": 0.3, "D1": 0.9},
)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        # Deepest first, siblings in the replanner's order.
        ("dfs", ["A", "B", "B1", "B2", "C", "C1", "D", "D1"]),
        # PUCT: the best prior first (B); B's poor result (0.1) pulls its value to
        # (0.9 + 0.1) / 2, below D's prior 0.6, so D; D's result 0.9 keeps the search under D
        # (D1); then B's subtree, whose value still beats C's prior 0.3; C last.
        ("mcts", ["A", "B", "D", "D1", "B1", "B2", "C", "C1"]),
        # Layer 1 keeps B and D (width 2), layer 2 keeps D1 and B1, best first; the
        # runner-ups (B2, then C and its child) run only once the beam is idle, deepest first.
        ("beam", ["A", "B", "D", "D1", "B1", "B2", "C", "C1"]),
    ],
)
async def test_each_strategy_orders_the_same_tree_its_own_way(
    make_engine: EngineMaker, strategy: str, expected: list[str]
) -> None:
    engine, models = make_engine(SCENARIO)

    result = await engine.run(
        "t",
        RunParams(strategy=strategy, max_concurrency=1, max_paths=10, beam_width=2),  # type: ignore[arg-type]
    )

    assert result.status == "done"
    assert executed_steps(models) == expected


async def test_pruned_candidates_do_not_run_while_live_ones_give_the_paths_wanted(
    make_engine: EngineMaker, events: EventLog
) -> None:
    scenario = Scenario(
        plan=["A"],
        replans={"A": ["good", "weak", "off topic"]},
        priors={"good": 0.8, "weak": 0.1, "off topic": 0.9},
        not_viable={"off topic"},
    )
    engine, models = make_engine(scenario)

    result = await engine.run(
        "t", RunParams(strategy="mcts", min_score=0.2, max_paths=1), sink=events
    )

    pruned = {e.node_id: e.reason for e in events.of("pruned")}
    assert pruned == {
        "n1.2": "score 0.10 below 0.20: judged weak",
        "n1.3": "not viable: judged off topic",
    }
    assert "weak" not in executed_steps(models)
    assert "off topic" not in executed_steps(models)
    assert all("Step to execute: weak" not in c.prompt for c in models.recorder.calls)
    assert result.metrics["nodes_by_status"]["pruned"] == 2
    assert events.of("revived") == []  # the reserve waits for paths still wanted


async def test_a_path_whose_continuations_are_all_pruned_ends_with_an_answer(
    make_engine: EngineMaker, events: EventLog
) -> None:
    scenario = Scenario(plan=["A"], replans={"A": ["x", "y"]}, not_viable={"x", "y"})
    engine, _ = make_engine(scenario)

    result = await engine.run("t", RunParams(strategy="mcts", max_paths=1), sink=events)

    assert result.answer == "answer via A"
    assert result.path == ["n1"]


@pytest.mark.parametrize("strategy", ["dfs", "mcts", "beam"])
async def test_a_favoured_branch_that_dead_ends_makes_the_search_backtrack(
    make_engine: EngineMaker, strategy: str
) -> None:
    scenario = Scenario(
        plan=["A"],
        replans={"A": ["favourite", "fallback"]},
        priors={"favourite": 0.95, "fallback": 0.4},
        fail={"favourite"},
    )
    engine, models = make_engine(scenario)

    result = await engine.run(
        "t",
        RunParams(strategy=strategy, max_concurrency=1, beam_width=1),  # type: ignore[arg-type]
    )

    assert executed_steps(models) == ["A", "favourite", "fallback"]
    assert result.answer == "answer via fallback"


async def test_early_stop_ends_the_search_once_a_path_is_good_enough(
    make_engine: EngineMaker, events: EventLog
) -> None:
    engine, models = make_engine(SCENARIO)

    result = await engine.run(
        "t",
        RunParams(strategy="mcts", max_concurrency=1, max_paths=10, satisfaction=0.85, min_depth=3),
        sink=events,
    )

    assert result.stop_reason == "early_stop"
    assert result.path == ["n1", "n1.3", "n1.3.1"]  # A → D → D1 (value 0.9, three steps)
    assert "B1" not in executed_steps(models)
    assert events.types()[-2:] in (["vote", "done"],)


@pytest.mark.parametrize(
    "params",
    [
        RunParams(strategy="mcts", max_paths=10),  # parallel, the search runs out of work
        RunParams(strategy="mcts", max_paths=3, max_concurrency=1),  # stops with work left
    ],
    ids=["parallel-exhausted", "sequential-max-paths"],
)
async def test_an_identical_rerun_is_served_entirely_from_the_cache(
    make_engine: EngineMaker, params: RunParams
) -> None:
    engine, models = make_engine(SCENARIO)
    first_events, second_events = EventLog(), EventLog()

    first = await engine.run("t", params, sink=first_events)
    calls = len(models.recorder.calls)
    second = await engine.run("t", params, sink=second_events)

    assert len(models.recorder.calls) == calls  # zero model calls the second time
    assert second.metrics["llm_calls"] == 0
    assert second.metrics["cache_hits"] == first.metrics["llm_calls"]
    assert second.answer == first.answer
    assert second.chosen_id == first.chosen_id
    assert [(n["id"], n["step"], n["status"], n["score"]) for n in second.nodes] == [
        (n["id"], n["step"], n["status"], n["score"]) for n in first.nodes
    ]
    assert sorted(first_events.types()) == sorted(second_events.types())


async def test_use_cache_false_bypasses_the_cache(make_engine: EngineMaker) -> None:
    engine, models = make_engine(SCENARIO)
    await engine.run("t", RunParams(strategy="mcts", max_paths=2))
    calls = len(models.recorder.calls)

    again = await engine.run("t", RunParams(strategy="mcts", max_paths=2, use_cache=False))

    assert len(models.recorder.calls) == 2 * calls
    assert again.metrics["cache_hits"] == 0


async def test_a_sqlite_cache_serves_a_new_process(settings: Settings, tmp_path: Path) -> None:
    settings = settings.model_copy(update={"cache_path": tmp_path / "cache.sqlite"})
    params = RunParams(strategy="mcts", max_paths=2, max_concurrency=1)
    first = Engine(settings=settings, models=FakeModels(SCENARIO), tools=[])
    await first.run("t", params)
    models = FakeModels(SCENARIO)
    second = Engine(settings=settings, models=models, tools=[])

    result = await second.run("t", params)

    assert models.recorder.calls == []
    assert result.status == "done"


@pytest.mark.parametrize("strategy", ["dfs", "mcts", "beam"])
@pytest.mark.parametrize(
    ("budget", "reason"),
    [
        ({"max_nodes": 6}, "max_nodes"),
        ({"max_llm_calls": 12}, "budget_llm_calls"),
        ({"max_tokens": 3000}, "budget_tokens"),
        ({"max_paths": 2}, "max_paths"),
    ],
)
async def test_every_strategy_terminates_under_every_budget(
    make_engine: EngineMaker, strategy: str, budget: dict[str, int], reason: str
) -> None:
    # A replanner that never says "complete": only the budget can end the search.
    endless = Scenario(
        plan=["A"],
        replans={},
        values={},
    )

    def script(call):  # type: ignore[no-untyped-def]
        if call.role == "replanner":
            depth = call.prompt.count("\nStep ")
            return replan_reply([f"s{depth}a", f"s{depth}b"])
        return endless.reply(call)

    engine, models = make_engine(script)
    params = {"max_paths": 50, "max_depth": 20, **budget}

    result = await engine.run("t", RunParams(strategy=strategy, **params))  # type: ignore[arg-type]

    assert result.stop_reason == reason
    assert result.status == "done"
    assert len(models.recorder.calls) <= params.get("max_llm_calls", 10_000)


@pytest.mark.parametrize("reserve", [False, True], ids=["pruned", "revived"])
async def test_a_trace_rebuilds_the_live_tree(
    make_engine: EngineMaker, events: EventLog, reserve: bool
) -> None:
    engine, _ = make_engine(SCENARIO)

    params = RunParams(strategy="mcts", max_paths=4, min_score=0.35, reserve=reserve)
    result = await engine.run("t", params, sink=events)
    rebuilt = tree_from_events(e.model_dump(mode="json") for e in events)

    fields = (
        "id",
        "parent_id",
        "depth",
        "step",
        "status",
        "prior",
        "score",
        "value_sum",
        "visits",
        "answer",
        "expanded",
        "complete",
    )
    live = {n["id"]: {f: n[f] for f in fields} for n in result.nodes}
    assert {k: {f: v[f] for f in fields} for k, v in rebuilt.items()} == live
    assert events.of("pruned")  # the trace covers prunes, and with the reserve, revivals
    assert bool(events.of("revived")) is reserve


async def test_tool_results_are_cached_and_use_cache_false_goes_to_the_source(
    make_engine: EngineMaker, settings: Settings
) -> None:
    from tools.registry import ToolOverrides, build_tools
    from tools.runtime import TtlCache

    searched: list[str] = []

    def search(query: str, **_: object) -> list[dict[str, str]]:
        searched.append(query)
        return [{"title": "Result", "href": "https://example.test/r", "body": "a finding"}]

    tools = build_tools(
        settings.model_copy(update={"tools": ["web_search"], "tool_min_interval_s": 0.0}),
        overrides=ToolOverrides(web_search_fn=search, cache=TtlCache()),
    )
    scenario = Scenario(plan=["A"], tools={"A": ("web_search", {"query": "q1"})})
    engine, _ = make_engine(scenario, tools=tools)
    params = RunParams(strategy="mcts", max_concurrency=1)

    first = await engine.run("t", params)
    await engine.run("t", params)
    assert searched == ["q1"]  # the rerun's tool call was served from the result cache

    await engine.run("t", params.model_copy(update={"use_cache": False}))
    assert searched == ["q1", "q1"]
    assert first.sources == [{"title": "Result", "url": "https://example.test/r"}]
