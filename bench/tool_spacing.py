"""Benchmark 15, tools that hold the search back: the 6-path tree with one tool call per step
through a tool that takes one call every `interval_s` (arXiv's politeness spacing is 3 s), at
the defaults, against the plain sequential agent with the same tool.

Each step's executor calls `web_search` once (a distinct query per step, so the tools' cache
never answers) through the production tool runtime (`tools/runtime.py`: spacing, the throttle
notice, single flight) with `LATS_TOOL_MIN_INTERVAL_S` = `interval_s`, the spacing fresh for
each measurement (a quiet tool, as for a first run), so that no run waits for the slot of the
previous measurement's last call. A step whose tool slot is more than two intervals away is
told at once that the tool is rate limited (`throttled` below) and answers without it, as the
runtime does for every run. Models are scripted, 150-350 ms a call, behind the production call
policy; the tool answers at once.

Recorded per configuration (median of the repetitions): wall, the critical-path bound and
their ratio (`bench/critical.py`: the bound counts each step's own time, its tool wait
included), the mean model calls in flight (the model calls' summed latency over the wall),
tool calls made and refused as throttled, completed paths and seconds per completed path.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agents.engine import Engine
from agents.params import RunParams
from bench.critical import critical_path
from bench.engine_runs import EventLog, bench_settings
from bench.models import CountingModels, Delayed, latency_s
from bench.scenarios import TASK, params_for, scenario
from bench.stats import spread
from calls.ratelimit import reset_model_limiters
from testkit.fakes import FakeCall, Reply
from testkit.policy_models import ThroughPolicy
from tools.registry import ToolOverrides, build_tools
from tools.runtime import LimiterRegistry, TtlCache

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolSpacingConfig:
    interval_s: float = 3.0
    repetitions: int = 3
    low_s: float = 0.15
    high_s: float = 0.35
    seed: int = 7


class Busy:
    """The scenario's replies after their latency, summing the latencies (model-busy time)."""

    def __init__(self, delayed: Delayed) -> None:
        self.delayed = delayed
        self.busy_s = 0.0

    async def __call__(self, call: FakeCall) -> Reply:
        d = self.delayed
        self.busy_s += latency_s(d.seed, call.role, call.prompt, d.low_s, d.high_s)
        return await self.delayed(call)


def _steps(name: str) -> list[str]:
    tree = scenario(name)  # type: ignore[arg-type]
    steps = list(tree.plan)
    for children in tree.replans.values():
        steps += children
    return steps


async def _one(
    config: ToolSpacingConfig, label: str, params: RunParams, work: Path
) -> dict[str, Any]:
    reset_model_limiters()
    settings = bench_settings(work, tools=["web_search"], tool_min_interval_s=config.interval_s)
    searched: list[str] = []

    def search(query: str, **_: object) -> list[dict[str, str]]:
        searched.append(query)
        return [{"title": f"On {query}", "href": "https://example.test/r", "body": query}]

    # A tool of its own for each measurement: the process-wide spacing would make a run wait
    # for the slot of the previous measurement's last call.
    tools = build_tools(
        settings,
        overrides=ToolOverrides(web_search_fn=search, cache=TtlCache()),
        limiters=LimiterRegistry(),
    )
    tree = replace(
        scenario("wide"),
        tools={step: ("web_search", {"query": f"about {step}"}) for step in _steps("wide")},
    )
    busy = Busy(Delayed(tree, config.seed, config.low_s, config.high_s))
    models = ThroughPolicy(CountingModels(busy), settings)  # type: ignore[arg-type]
    engine = Engine(settings=settings, models=models, tools=tools)
    log = EventLog()
    began = time.monotonic()
    result = await engine.run(TASK, params, sink=log)
    wall_s = time.monotonic() - began
    timing = critical_path(log)
    throttled = sum(
        1 for e in log if e["type"] == "tool_call" and e.get("error_kind") == "rate_limited"
    )
    paths = max(1, int(result.metrics.get("paths_completed", 0)))
    return {
        "config": label,
        "wall_s": wall_s,
        "bound_s": timing["bound_s"],
        "ratio": timing["ratio"],
        "mean_model_calls_in_flight": busy.busy_s / wall_s,
        "tool_calls": len(searched),
        "throttled": throttled,
        "paths": int(result.metrics.get("paths_completed", 0)),
        "s_per_path": wall_s / paths,
        "status": result.status,
    }


async def run_tool_spacing(config: ToolSpacingConfig, work: Path) -> dict[str, Any]:
    """The defaults and the plain sequential agent, side by side in every repetition."""
    configs = {
        "defaults": params_for("wide", use_cache=False),
        "plain sequential agent": params_for(
            "wide",
            strategy="dfs",
            max_concurrency=1,
            max_candidates=1,
            max_paths=1,
            use_cache=False,
        ),
    }
    rows: list[dict[str, Any]] = []
    for rep in range(config.repetitions):
        for label, params in configs.items():
            row = await _one(config, label, params, work / f"{rep}-{len(rows)}")
            logger.info("tool spacing rep=%d %s: %s", rep, label, row)
            rows.append({"rep": rep, **row})
    cells: dict[str, dict[str, Any]] = {}
    for label in configs:
        mine = [r for r in rows if r["config"] == label]
        cells[label] = {
            key: spread([float(r[key]) for r in mine])
            for key in (
                "wall_s",
                "bound_s",
                "ratio",
                "mean_model_calls_in_flight",
                "tool_calls",
                "throttled",
                "paths",
                "s_per_path",
            )
        }
    plain = cells["plain sequential agent"]["s_per_path"]["median"]
    ours = cells["defaults"]["s_per_path"]["median"]
    return {
        "config": {
            "interval_s": config.interval_s,
            "repetitions": config.repetitions,
            "latency_ms": [config.low_s * 1000, config.high_s * 1000],
        },
        "rows": rows,
        "cells": cells,
        "speedup_per_path": plain / ours if ours else None,
    }


def summary(data: dict[str, Any]) -> list[str]:
    lines = []
    for label, cell in data["cells"].items():
        lines.append(
            f"tool spacing {label:<22} wall {cell['wall_s']['median']:.1f}s  "
            f"wall/bound {cell['ratio']['median']:.2f}  in flight "
            f"{cell['mean_model_calls_in_flight']['median']:.2f}  "
            f"{cell['s_per_path']['median']:.2f}s per path"
        )
    lines.append(f"tool spacing: {data['speedup_per_path']:.2f}x per path")
    return lines
