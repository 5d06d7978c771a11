"""Benchmark 6, search quality: planted-value worlds (testkit/planted_world.py) searched by the
real engine with every strategy under the same budget.

Each run is a fresh engine (a cold model cache) over one world, with the scripted models of
testkit/planted.py and LangGraph's in-memory checkpointer. Synchronous pieces that LangChain
hands to a worker thread (output parsers, `RunnableLambda`s) run inline instead (`inline_threads`):
their results are the same, but a thread's timing could otherwise change which jobs finish
together and so what the search does next. No thread and no clock decide anything, so the same
seed gives the same table. The run parameters are the defaults except
what the suite fixes per structure (`max_llm_calls`, `max_depth`) and for every run
(`max_paths` and `max_nodes` at their upper bounds, so the call budget is what stops every
strategy), plus each strategy's own overrides (`STRATEGIES`).

The parallel grid runs the default strategy once per `max_concurrency` and rule for work in
flight (`in_flight_rule`), at the suite's budgets and at the service's defaults, so the rule
that lets parallel picks keep their quality, and the most slots that cost none, are read off
one table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver

from agents.engine import Engine
from agents.params import RunParams
from agents.result import RunResult
from agents.state import NodeRecord
from bench.engine_runs import bench_settings
from bench.models import CallCounter
from testkit.fakes import FakeModels
from testkit.planted import PlantedScript, Span, serial_depth
from testkit.planted_structures import STRUCTURES, build_world
from testkit.planted_world import World
from testkit.policy_models import ThroughPolicy

logger = logging.getLogger(__name__)

# What every run of the suite fixes beyond the structure's budget.
SUITE_FIXED: dict[str, Any] = {"max_paths": 50, "max_nodes": 500}

# Strategy name -> run-parameter overrides. `chain` is the seed notebook as shipped (one
# candidate per node: it never branches); `breadth` is the notebook with branching: the
# replanner's proposals all kept, no evaluator, no pruning, shallowest first in proposal order
# (beam with the widest beam and no scores ranks by depth, then by id: first in, first out).
STRATEGIES: dict[str, dict[str, Any]] = {
    "anytime": {},
    "mcts": {"strategy": "mcts"},
    "mcts-noeval": {"strategy": "mcts", "evaluate": False},
    "beam": {"strategy": "beam"},
    "dfs": {"strategy": "dfs"},
    "chain": {"max_candidates": 1, "reserve": False},
    "breadth": {"strategy": "beam", "beam_width": 8, "evaluate": False, "min_score": 0.0},
}
DEFAULT = "mcts"

# What the parallel grid keeps of each run's row.
GRID_ROW_FIELDS = (
    "structure",
    "seed",
    "in_flight_rule",
    "max_concurrency",
    "budget",
    "success",
    "regret",
    "llm_calls",
    "serial_calls",
    "wall_s",
    "stop_reason",
)

# Success this close to concurrency 1's counts as keeping the quality (the parallel grid).
PARALLEL_TOLERANCE = 0.01

# An answer this close to the best counts as finding it: the voter reads the evidence to two
# decimals with noise, so closer answers are a coin toss for any judge, and no better for a
# reader. (It matters in `near_equal`, where a handful of the 27 answers are that close.)
SUCCESS_TOLERANCE = 0.02


@dataclass(frozen=True)
class QualityConfig:
    """Which worlds, strategies and budgets to run."""

    name: str = "full"
    seeds: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
    structures: tuple[str, ...] = tuple(STRUCTURES)
    strategies: tuple[str, ...] = tuple(STRATEGIES)
    curve_budgets: tuple[int, ...] = (20, 30, 45, 60, 90, 120)
    curve_seeds: tuple[int, ...] = (1, 2, 3)
    defaults_seeds: tuple[int, ...] = (1, 2, 3)  # runs at the service's defaults
    # The parallel grid: `max_concurrency` levels, rules for work in flight, and its worlds
    # (more than the suite's: the rules differ by a world or two in a hundred).
    concurrency: tuple[int, ...] = (1, 4, 8, 16)
    in_flight_rules: tuple[str, ...] = ("unobserved", "virtual_loss")
    parallel_seeds: tuple[int, ...] = tuple(range(1, 17))


QUICK = QualityConfig(
    name="quick",
    seeds=(1, 2, 3),
    curve_budgets=(25, 90),
    curve_seeds=(1,),
    defaults_seeds=(1,),
    parallel_seeds=(1, 2, 3),
)


class Row(TypedDict):
    structure: str
    seed: int
    strategy: str
    budget: int
    max_concurrency: int
    in_flight_rule: str
    success: bool
    quality: float
    best: float
    regret: float
    llm_calls: int
    serial_calls: int
    wall_s: float
    paths: int
    nodes_run: int
    deepest: int  # steps on the longest path that ran
    per_depth: list[int]  # steps that ran at each depth, the root's first
    stop_reason: str | None
    chosen: str | None  # the chosen path's world key (which branch the search settled on)
    best_key: str  # where the best answer is
    answered: list[str]  # world keys of every path that got an answer
    best_fate: str  # what the search did with the best answer's step (`best_fate`)
    best_rank: int | None  # its candidate score's rank among its siblings' (1: the top)


class InlineExecutor(ThreadPoolExecutor):
    """An executor that runs each function at once, in the calling thread (a thread pool by
    type only: asyncio accepts nothing else as the default executor)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:  # handed to the awaiting task, as a thread would
            future.set_exception(e)
        return future


@contextlib.contextmanager
def inline_threads() -> Iterator[None]:
    """Within the running loop, `run_in_executor(None, ...)` and `asyncio.to_thread` run
    inline (see the module docstring)."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(InlineExecutor(max_workers=1))
    try:
        yield
    finally:
        # asyncio has no way to give the previous executor back; a fresh pool serves the rest
        # of the process (the previous one's idle threads exit with the interpreter).
        loop.set_default_executor(ThreadPoolExecutor())


def params_for(
    structure: str,
    strategy: str,
    max_llm_calls: int | None = None,
    *,
    suite: bool = True,
    overrides: Mapping[str, Any] | None = None,
) -> RunParams:
    """The run parameters of one strategy on one structure (`suite=False`: the service's
    defaults with only the strategy's own overrides), then `overrides` (the parallel grid's)."""
    shape = STRUCTURES[structure]
    extra = dict(overrides or {})
    if not suite:
        return RunParams.model_validate({**STRATEGIES[strategy], **extra})
    return RunParams.model_validate(
        {
            "max_llm_calls": max_llm_calls or shape.max_llm_calls,
            "max_depth": shape.max_depth,
            **SUITE_FIXED,
            **STRATEGIES[strategy],
            **extra,
        }
    )


def _path_keys(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def best_fate(world: World, nodes: Sequence[NodeRecord], best_key: str) -> tuple[str, int | None]:
    """From the run's tree: what became of the best answer's step (`answered`, `run` without an
    answer, `pending`: proposed and never run, `pruned`, `unproposed`), and the rank of its
    candidate score among its siblings' (1: the replanner's favourite; None: unscored)."""
    record = next((n for n in nodes if world.by_step(n["step"]).key == best_key), None)
    if record is None:
        return "unproposed", None
    if record["answer"] is not None:
        fate = "answered"
    elif record["status"] in ("done", "failed", "running", "cancelled"):
        fate = "run"
    else:
        fate = str(record["status"])  # pending or pruned
    prior = record["prior"]
    if prior is None:
        return fate, None
    siblings = [n["prior"] for n in nodes if n["parent_id"] == record["parent_id"]]
    return fate, 1 + sum(1 for p in siblings if p is not None and p > prior)


def serial_calls(world: World, spans: Sequence[Span], result: RunResult) -> int:
    """Critical path in model calls: the plan, then along the longest answered path each
    node's step and expansion (calls in flight together count once), its answer, the vote."""
    groups: dict[tuple[str, str | None], list[Span]] = defaultdict(list)
    for span in spans:
        groups[(span.job, span.key)].append(span)
    depth = {job: serial_depth(group) for job, group in groups.items()}

    def d(job: str, key: str | None = None) -> int:
        return depth.get((job, key), 0)

    answered = [world.by_step(n["step"]).key for n in result.nodes if n["answer"]]
    ends = answered or [world.by_step(n["step"]).key for n in result.nodes if n["status"] == "done"]
    chains = [
        sum(d("exec", k) + d("expand", k) for k in _path_keys(end)) + d("respond", end)
        for end in ends
    ]
    return d("plan") + max(chains, default=0) + d("vote")


async def run_one(
    structure: str,
    seed: int,
    strategy: str,
    budget: int | None,
    work_dir: Path,
    *,
    suite: bool = True,
    overrides: Mapping[str, Any] | None = None,
) -> Row:
    """One run of the real engine on one world; the row says how good its answer was."""
    world = build_world(structure, seed)
    params = params_for(structure, strategy, budget, suite=suite, overrides=overrides)
    script = PlantedScript(world)
    fakes = FakeModels(script)
    fakes.recorder.calls = CallCounter()  # count, keep nothing (see bench/models.py)
    settings = bench_settings(work_dir)
    # Every role's model behind the production call policy, as a user's run has them.
    models = ThroughPolicy(fakes, settings)
    engine = Engine(settings=settings, models=models, tools=[], checkpointer=InMemorySaver())
    started = time.monotonic()
    with inline_threads():
        result = await engine.run(world.task, params, run_id=f"{structure}-{seed}-{strategy}")
    wall = time.monotonic() - started
    best_node = world.best(params.max_depth)
    best = best_node.quality
    fate, rank = best_fate(world, result.nodes, best_node.key)
    chosen = next((n for n in result.nodes if n["id"] == result.chosen_id), None)
    truth = world.by_step(chosen["step"]) if chosen is not None and result.answer else None
    quality = truth.quality if truth is not None else 0.0
    return {
        "structure": structure,
        "seed": seed,
        "strategy": strategy,
        "budget": params.max_llm_calls,
        "max_concurrency": params.max_concurrency,
        "in_flight_rule": params.in_flight_rule,
        "success": truth is not None and quality >= best - SUCCESS_TOLERANCE,
        "quality": round(quality, 4),
        "best": round(best, 4),
        "regret": round(best - quality, 4),
        "llm_calls": int(result.metrics.get("llm_calls", 0)),
        "serial_calls": serial_calls(world, script.spans, result),
        "wall_s": round(wall, 4),
        "paths": int(result.metrics.get("paths_completed", 0)),
        "nodes_run": sum(1 for n in result.nodes if n["status"] in ("done", "failed")),
        "deepest": 1 + max((n["depth"] for n in result.nodes if n["status"] == "done"), default=-1),
        "per_depth": [
            sum(1 for n in result.nodes if n["status"] == "done" and n["depth"] == d)
            for d in range(params.max_depth)
        ],
        "stop_reason": result.stop_reason,
        "chosen": truth.key if truth is not None else None,
        "best_key": best_node.key,
        "answered": sorted(world.by_step(n["step"]).key for n in result.nodes if n["answer"]),
        "best_fate": fate,
        "best_rank": rank,
    }


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else float("nan")


def aggregate(rows: Sequence[Row]) -> dict[str, Any]:
    """Success rate and means of a group of runs (wall: the median)."""
    return {
        "n": len(rows),
        "success": _mean([float(r["success"]) for r in rows]),
        "regret": _mean([r["regret"] for r in rows]),
        "quality": _mean([r["quality"] for r in rows]),
        "llm_calls": _mean([float(r["llm_calls"]) for r in rows]),
        "serial_calls": _mean([float(r["serial_calls"]) for r in rows]),
        "wall_s": round(statistics.median(r["wall_s"] for r in rows), 4),
    }


def summarise(rows: Sequence[Row]) -> dict[str, Any]:
    """Per (structure, strategy) and per strategy over all structures, with the structures a
    strategy solves (succeeds in at least half the seeds)."""
    cells: dict[str, dict[str, Any]] = {}
    for (structure, strategy), mine in _grouped(rows, ("structure", "strategy")).items():
        cells.setdefault(structure, {})[strategy] = aggregate(mine)
    totals: dict[str, Any] = {}
    for (strategy,), mine in _grouped(rows, ("strategy",)).items():
        solved = [s for s, by in cells.items() if by.get(strategy, {}).get("success", 0) >= 0.5]
        totals[strategy] = {**aggregate(mine), "solved": sorted(solved)}
    return {"cells": cells, "totals": totals}


def curve(rows: Sequence[Row]) -> dict[str, list[dict[str, Any]]]:
    """Per strategy, success rate and mean calls at each budget (all structures together)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for (strategy, budget), mine in sorted(_grouped(rows, ("strategy", "budget")).items()):
        out.setdefault(str(strategy), []).append({"budget": budget, **aggregate(mine)})
    return out


def parallel(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Per rule for work in flight and `max_concurrency`, the aggregate of the grid's runs."""
    grouped = _grouped(rows, ("in_flight_rule", "max_concurrency"))
    return [
        {"in_flight_rule": rule, "concurrency": conc, **aggregate(mine)}
        for (rule, conc), mine in sorted(grouped.items())
    ]


def most_slots_keeping_quality(
    cells: Sequence[Mapping[str, Any]], rule: str, tolerance: float = PARALLEL_TOLERANCE
) -> int | None:
    """The largest concurrency whose success under `rule` is within `tolerance` of
    concurrency 1's (None without a concurrency-1 cell)."""
    mine: dict[int, float] = {
        int(c["concurrency"]): float(c["success"]) for c in cells if c["in_flight_rule"] == rule
    }
    if 1 not in mine:
        return None
    return max(c for c, success in mine.items() if success >= mine[1] - tolerance - 1e-9)


def _grouped(rows: Sequence[Row], keys: Sequence[str]) -> dict[tuple[Any, ...], list[Row]]:
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        plain: Mapping[str, Any] = row
        groups[tuple(plain[k] for k in keys)].append(row)
    return dict(groups)


@contextlib.contextmanager
def quiet_runs() -> Iterator[None]:
    """The engine's per-run info lines (and LangChain's note of each budget refusal) held back:
    the suite makes hundreds of searches and its own progress lines say enough."""
    levels = {"agents": logging.WARNING, "langchain_core.callbacks.manager": logging.ERROR}
    before = {name: logging.getLogger(name).level for name in levels}
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    try:
        yield
    finally:
        for name, level in before.items():
            logging.getLogger(name).setLevel(level)


async def run_quality(config: QualityConfig, work_dir: Path) -> dict[str, Any]:
    """The suite at each structure's budget, then the budget curve; JSON-ready results."""
    with quiet_runs():
        return await _run_quality(config, work_dir)


async def _run_quality(config: QualityConfig, work_dir: Path) -> dict[str, Any]:
    rows: list[Row] = []
    for structure in config.structures:
        for seed in config.seeds:
            for strategy in config.strategies:
                rows.append(await run_one(structure, seed, strategy, None, work_dir))
        logger.info("quality %s: %s runs", structure, len(config.seeds) * len(config.strategies))
    curve_rows: list[Row] = []
    for budget in config.curve_budgets:
        for structure in config.structures:
            for seed in config.curve_seeds:
                for strategy in config.strategies:
                    curve_rows.append(await run_one(structure, seed, strategy, budget, work_dir))
        logger.info("quality curve: budget %s done", budget)
    default_rows = [
        await run_one(structure, seed, strategy, None, work_dir, suite=False)
        for structure in config.structures
        for seed in config.defaults_seeds
        for strategy in config.strategies
    ]
    logger.info("quality at the defaults: %s runs", len(default_rows))
    shipped = RunParams()
    grids = {
        "suite": await _parallel_grid(config, work_dir, suite=True),
        "defaults": await _parallel_grid(config, work_dir, suite=False),
    }
    return {
        "config": {
            "mode": config.name,
            "seeds": list(config.seeds),
            "structures": {
                name: {
                    "max_llm_calls": STRUCTURES[name].max_llm_calls,
                    "max_depth": STRUCTURES[name].max_depth,
                    "about": STRUCTURES[name].about,
                    "judges": vars(STRUCTURES[name].judges),
                }
                for name in config.structures
            },
            "strategies": {name: STRATEGIES[name] for name in config.strategies},
            "fixed": SUITE_FIXED,
            "tolerance": SUCCESS_TOLERANCE,
            "default": DEFAULT,
            "curve_budgets": list(config.curve_budgets),
            "curve_seeds": list(config.curve_seeds),
            "defaults_seeds": list(config.defaults_seeds),
            "concurrency": list(config.concurrency),
            "parallel_seeds": list(config.parallel_seeds),
            "in_flight_rules": list(config.in_flight_rules),
            "default_concurrency": shipped.max_concurrency,
            "default_in_flight_rule": shipped.in_flight_rule,
            "parallel_tolerance": PARALLEL_TOLERANCE,
        },
        "rows": rows,
        **summarise(rows),
        "curve": curve(curve_rows),
        "curve_rows": curve_rows,
        "at_defaults": {"rows": default_rows, **summarise(default_rows)},
        "parallel": grids,
    }


async def _parallel_grid(config: QualityConfig, work_dir: Path, *, suite: bool) -> dict[str, Any]:
    """The default strategy at each level and rule, at the suite's budgets (`suite`) or at the
    service's defaults."""
    rows = [
        await run_one(
            structure,
            seed,
            DEFAULT,
            None,
            work_dir,
            suite=suite,
            overrides={"max_concurrency": conc, "in_flight_rule": rule},
        )
        for rule in config.in_flight_rules
        for conc in config.concurrency
        for structure in config.structures
        for seed in config.parallel_seeds
    ]
    logger.info("quality, parallel grid (%s): %s runs", "suite" if suite else "defaults", len(rows))
    cells = parallel(rows)
    most = {rule: most_slots_keeping_quality(cells, rule) for rule in config.in_flight_rules}
    # Per run only what the cells and a paired comparison of the rules read: the grid has
    # 1,500 runs and the full rows would triple the results file.
    plain: list[Mapping[str, Any]] = list(rows)
    kept = [{k: row[k] for k in GRID_ROW_FIELDS} for row in plain]
    return {"cells": cells, "most_slots": most, "rows": kept}
