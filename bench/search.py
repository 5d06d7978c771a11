"""Benchmarks 1-3 on the in-process engine: critical path per strategy and concurrency, the
sequential baseline against the defaults, and model calls (with the identical cached rerun).

Every configuration runs once per repetition, one after another, so each repetition puts all
of them side by side under the same machine noise. Each run gets a fresh engine (so a cold
model cache); the defaults' engine then runs the identical task again for the cached rerun.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from agents.params import RunParams, Strategy
from bench.engine_runs import Bench, Latency, Measured, bench_settings, checkpointer
from bench.scenarios import ScenarioName, params_for
from bench.stats import spread

logger = logging.getLogger(__name__)

_DEFAULTS = RunParams(strategy="mcts")
TARGET_RATIO = 1.2
TARGET_SPEEDUP = 3.0  # seconds per completed path: a plain sequential agent's over the defaults'
PLAIN = "plain"  # the row of the plain plan-and-execute agent


@dataclass(frozen=True)
class SearchConfig:
    concurrency: tuple[int, ...] = (1, 2, 4, 8)
    strategies: tuple[Strategy, ...] = ("mcts", "beam", "dfs")
    repetitions: int = 3
    # Model calls of 150-350 ms, as the speed targets are set.
    latency: Latency = field(default_factory=lambda: Latency(seed=7, low_s=0.15, high_s=0.35))
    scenario: ScenarioName = "wide"
    # The reference notebook: one call at a time, newest child first.
    baseline: tuple[Strategy, int] = ("dfs", 1)
    # A plain plan-and-execute agent: one path (no branching), one call at a time.
    plain: bool = True
    defaults: tuple[Strategy, int] = (_DEFAULTS.strategy, _DEFAULTS.max_concurrency)

    def configurations(self) -> list[tuple[Strategy, int]]:
        grid = [(s, c) for s in self.strategies for c in self.concurrency]
        return grid + [x for x in (self.baseline, self.defaults) if x not in grid]


class Row(TypedDict):
    strategy: str
    concurrency: int
    rep: int
    wall_s: float
    bound_s: float
    ratio: float
    work_s: float
    paths: int
    width: int
    llm_calls: int
    calls_by_role: dict[str, int]
    naive_calls: int
    stop_reason: str | None


def tree_width(measured: Measured) -> int:
    """Most nodes that ran at one depth."""
    depths = Counter(n["depth"] for n in measured.result.nodes if n["status"] == "done")
    return max(depths.values(), default=0)


def _row(strategy: str, concurrency: int, rep: int, m: Measured) -> Row:
    metrics = m.result.metrics
    return {
        "strategy": strategy,
        "concurrency": concurrency,
        "rep": rep,
        "wall_s": m.timing["wall_s"],
        "bound_s": m.timing["bound_s"],
        "ratio": m.timing["ratio"],
        "work_s": m.timing["work_s"],
        "paths": m.timing["paths"],
        "width": tree_width(m),
        "llm_calls": int(metrics.get("llm_calls", 0)),
        "calls_by_role": dict(metrics.get("llm_calls_by_role", {})),
        "naive_calls": int(metrics.get("naive_calls", 0)),
        "stop_reason": m.result.stop_reason,
    }


def _select(rows: list[Row], strategy: str, concurrency: int) -> list[Row]:
    return [r for r in rows if r["strategy"] == strategy and r["concurrency"] == concurrency]


def _critical_summary(config: SearchConfig, rows: list[Row]) -> dict[str, Any]:
    width = max((r["width"] for r in rows), default=0)
    cells: list[dict[str, Any]] = []
    for strategy in config.strategies:
        for conc in config.concurrency:
            mine = _select(rows, strategy, conc)
            cells.append(
                {
                    "strategy": strategy,
                    "concurrency": conc,
                    "ratio": spread([r["ratio"] for r in mine]),
                    "wall_s": spread([r["wall_s"] for r in mine]),
                    "bound_s": spread([r["bound_s"] for r in mine]),
                    "work_s": spread([r["work_s"] for r in mine]),
                    "paths": spread([float(r["paths"]) for r in mine]),
                }
            )
    wide_enough = [c for c in cells if c["concurrency"] >= width]
    met = {
        s: all(c["ratio"]["median"] <= TARGET_RATIO for c in wide_enough if c["strategy"] == s)
        for s in config.strategies
    }
    return {"width": width, "target": TARGET_RATIO, "cells": cells, "met": met}


def _per_path(rows: list[Row]) -> list[float]:
    return [r["wall_s"] / r["paths"] for r in rows if r["paths"]]


def _speedups(slower: list[Row], faster: list[Row]) -> list[float]:
    """Seconds per completed path of `slower` over `faster`, within each repetition."""
    by_rep = {r["rep"]: r for r in faster}
    return [
        (s["wall_s"] / s["paths"]) / (f["wall_s"] / f["paths"])
        for s in slower
        if (f := by_rep.get(s["rep"])) is not None and s["paths"] and f["paths"]
    ]


def _sequential_summary(config: SearchConfig, rows: list[Row]) -> dict[str, Any]:
    base = _select(rows, *config.baseline)
    default = _select(rows, *config.defaults)
    plain = _select(rows, PLAIN, 1)
    return {
        "baseline": {"strategy": config.baseline[0], "max_concurrency": config.baseline[1]},
        "defaults": {"strategy": config.defaults[0], "max_concurrency": config.defaults[1]},
        "plain_wall_s": spread([r["wall_s"] for r in plain]),
        "plain_per_path_s": spread(_per_path(plain)),
        "speedup_vs_plain": spread(_speedups(plain, default)),
        "baseline_wall_s": spread([r["wall_s"] for r in base]),
        "defaults_wall_s": spread([r["wall_s"] for r in default]),
        "baseline_per_path_s": spread(_per_path(base)),
        "defaults_per_path_s": spread(_per_path(default)),
        "paths": spread([float(r["paths"]) for r in default]),
        "speedup_per_path": spread(_speedups(base, default)),
        # What any schedule could gain on this tree: all the work over the longest chain.
        "max_speedup": spread([r["work_s"] / r["bound_s"] for r in base if r["bound_s"] > 0]),
    }


def _calls_summary(
    config: SearchConfig, rows: list[Row], reruns: list[dict[str, Any]]
) -> dict[str, Any]:
    default = _select(rows, *config.defaults)
    roles = sorted({role for r in default for role in r["calls_by_role"]})
    per_role = {
        role: spread([r["calls_by_role"].get(role, 0) / r["paths"] for r in default if r["paths"]])
        for role in roles
    }
    by_config = [
        {
            "strategy": s,
            "concurrency": c,
            "llm_calls": spread([float(r["llm_calls"]) for r in _select(rows, s, c)]),
            "naive_calls": spread([float(r["naive_calls"]) for r in _select(rows, s, c)]),
        }
        for s, c in config.configurations()
    ]
    return {
        "defaults": {"strategy": config.defaults[0], "max_concurrency": config.defaults[1]},
        "calls_by_role_per_path": per_role,
        "llm_calls": spread([float(r["llm_calls"]) for r in default]),
        "llm_calls_per_path": spread([r["llm_calls"] / r["paths"] for r in default if r["paths"]]),
        "naive_calls": spread([float(r["naive_calls"]) for r in default]),
        "naive_calls_per_path": spread(
            [r["naive_calls"] / r["paths"] for r in default if r["paths"]]
        ),
        "cached_rerun": {
            "runs": reruns,
            "llm_calls": spread([float(r["llm_calls"]) for r in reruns]),
            "model_calls": spread([float(r["model_calls"]) for r in reruns]),
            "cache_hits": spread([float(r["cache_hits"]) for r in reruns]),
            "wall_s": spread([r["wall_s"] for r in reruns]),
            "all_zero": all(r["llm_calls"] == 0 and r["model_calls"] == 0 for r in reruns),
        },
        "by_config": by_config,
    }


async def run_search(config: SearchConfig, work_dir: Path) -> dict[str, Any]:
    """Benchmarks 1, 2 and 3; returns their JSON under `critical_path`, `sequential`, `calls`."""
    rows: list[Row] = []
    reruns: list[dict[str, Any]] = []
    settings = bench_settings(work_dir)
    async with checkpointer(work_dir) as saver:
        for rep in range(config.repetitions):
            for strategy, conc in config.configurations():
                bench = Bench(config.scenario, config.latency, settings, saver)
                params = params_for(config.scenario, strategy=strategy, max_concurrency=conc)
                measured = await bench.run(params)
                row = _row(strategy, conc, rep, measured)
                rows.append(row)
                logger.info(
                    "search rep=%s %s@%s: wall %.2fs bound %.2fs ratio %.2f, %s paths",
                    rep,
                    strategy,
                    conc,
                    row["wall_s"],
                    row["bound_s"],
                    row["ratio"],
                    row["paths"],
                )
                if (strategy, conc) == config.defaults and config.plain:
                    # Side by side with the defaults: one path, one call at a time.
                    alone = Bench(config.scenario, config.latency, settings, saver)
                    plain = params_for(
                        config.scenario,
                        strategy="dfs",
                        max_concurrency=1,
                        max_candidates=1,
                        max_paths=1,
                    )
                    rows.append(_row(PLAIN, 1, rep, await alone.run(plain)))
                    logger.info("search rep=%s plain agent: wall %.2fs", rep, rows[-1]["wall_s"])
                if (strategy, conc) == config.defaults:
                    again = await bench.run(params)
                    reruns.append(
                        {
                            "rep": rep,
                            "llm_calls": int(again.result.metrics.get("llm_calls", 0)),
                            "model_calls": again.model_calls,
                            "cache_hits": int(again.result.metrics.get("cache_hits", 0)),
                            "wall_s": again.timing["wall_s"],
                            "same_answer": again.result.answer == measured.result.answer,
                            "reused": again.result.reused_from == measured.result.run_id,
                        }
                    )
    base = {
        "scenario": config.scenario,
        "latency": config.latency.describe(),
        "repetitions": config.repetitions,
        "params": params_for(config.scenario).model_dump(exclude_defaults=True),
    }
    return {
        "config": {
            **base,
            "concurrency": list(config.concurrency),
            "strategies": list(config.strategies),
        },
        "rows": rows,
        "critical_path": _critical_summary(config, rows),
        "sequential": _sequential_summary(config, rows),
        "calls": _calls_summary(config, rows, reruns),
    }
