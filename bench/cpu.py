"""CPU-seconds per small run: `runs` in-process runs of the real engine (graph, scheduler,
in-memory checkpointing off, the model cache off) with scripted models that answer at once,
behind the production call policy at its default settings (`testkit.policy_models.
ThroughPolicy`), `concurrent` at a time. The process's heap is frozen after the warm-up runs,
as the service does once started (`app/heap.py`). `resource.getrusage` around the runs gives
user + system CPU of the process; divided by the runs, that is what one run costs the event
loop's core.

    .venv/bin/python -m bench.cpu --runs 200

`--against DIR` measures another checkout (e.g. an older commit, `git worktree add`) side by
side: each measurement is a fresh process, the two trees alternate, and the result is the
median of `--pairs` pairs and the ratio within each pair (so machine noise hits both alike).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.engine import Engine
from agents.params import RunParams
from app.heap import freeze_startup_heap
from bench.engine_runs import bench_settings
from bench.process import ROOT
from bench.scenarios import TASK, ScenarioName, params_for, scenario
from bench.stats import spread
from testkit.fakes import FakeModels
from testkit.policy_models import ThroughPolicy


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(
    runs: int, concurrent: int, name: ScenarioName, data_dir: Path, warmup: int = 5
) -> dict[str, Any]:
    """CPU-seconds and wall seconds per run over `runs` runs of scenario `name`."""
    settings = bench_settings(data_dir)
    models = ThroughPolicy(FakeModels(scenario(name)), settings)
    engine = Engine(settings=settings, models=models, tools=[])
    params: RunParams = params_for(name, use_cache=False)
    semaphore = asyncio.Semaphore(concurrent)

    async def one(i: int) -> str:
        async with semaphore:
            result = await engine.run(f"{TASK} #{i}", params)
            return result.status

    for i in range(warmup):  # imports, first compilations
        await one(-1 - i)
    freeze_startup_heap()
    cpu0, wall0 = _cpu_s(), time.monotonic()
    statuses = await asyncio.gather(*(one(i) for i in range(runs)))
    cpu, wall = _cpu_s() - cpu0, time.monotonic() - wall0
    return {
        "scenario": name,
        "runs": runs,
        "concurrent": concurrent,
        "done": statuses.count("done"),
        "cpu_s_per_run": cpu / runs,
        "wall_s_per_run": wall / runs,
    }


@dataclass(frozen=True)
class CpuConfig:
    runs: int = 150
    concurrent: int = 10
    scenario: ScenarioName = "small"
    pairs: int = 3  # measurements per tree (each a fresh process)
    against: Path | None = None  # another checkout, measured alternately


def _in_process(tree: Path, config: CpuConfig) -> dict[str, Any]:
    """One measurement of the code in `tree`, in a fresh interpreter."""
    args = [sys.executable, "-m", "bench.cpu", "--runs", str(config.runs)]
    args += ["--concurrent", str(config.concurrent), "--scenario", config.scenario]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run_cpu(config: CpuConfig) -> dict[str, Any]:
    """`pairs` measurements of this checkout (alternating with `against`, when given)."""
    mine: list[float] = []
    theirs: list[float] = []
    for _ in range(config.pairs):
        if config.against is not None:
            theirs.append(_in_process(config.against, config)["cpu_s_per_run"])
        mine.append(_in_process(ROOT, config)["cpu_s_per_run"])
    out: dict[str, Any] = {
        "runs": config.runs,
        "concurrent": config.concurrent,
        "scenario": config.scenario,
        "cpu_s_per_run": spread(mine),
        "load_average": os.getloadavg()[0],
    }
    if config.against is not None:
        out["against"] = {
            "tree": config.against.name,
            "cpu_s_per_run": spread(theirs),
            "ratio": spread([m / t for m, t in zip(mine, theirs, strict=True)]),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu", description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--concurrent", type=int, default=10)
    parser.add_argument("--scenario", default="small", choices=["wide", "small", "tiny"])
    parser.add_argument("--against", type=Path, default=None, help="another checkout")
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.against is not None:
        config = CpuConfig(args.runs, args.concurrent, args.scenario, args.pairs, args.against)
        out = run_cpu(config)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
            out = asyncio.run(measure(args.runs, args.concurrent, args.scenario, Path(tmp)))
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
