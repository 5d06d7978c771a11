"""Benchmark 5, memory: many sequential small runs through HTTP in one server process.

RSS (VmRSS from /proc) is read before the first run and after every `sample_every` runs;
growth is (RSS at the end - RSS before the first run) ÷ RSS before the first run. Each run has
its own task, so the model cache, run store and checkpointer see new data every time, as they
would in service. Repetitions use separate server processes, run side by side (RSS is per
process; the timing of runs is not what this benchmark measures).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import httpx

from bench.engine_runs import Latency, server_args
from bench.process import ServerProcess
from bench.scenarios import TASK, ScenarioName, params_for
from bench.stats import Spread, spread

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemoryConfig:
    runs: int = 1000
    checkpoints: tuple[int, ...] = (0, 250, 500, 1000)
    sample_every: int = 50
    repetitions: int = 3
    # Memory does not depend on how long a call takes: short latency keeps 1000 runs brief.
    latency: Latency = field(default_factory=lambda: Latency(seed=7, low_s=0.001, high_s=0.005))
    scenario: ScenarioName = "tiny"
    limit_growth: float = 0.10
    # One more process with `use_cache=false`: tells bounded caching from a leak.
    no_cache_control: bool = True


class Soak(TypedDict):
    rss_mib: dict[str, float]  # run count -> VmRSS after that many runs
    curve: list[tuple[int, float]]  # (runs, VmRSS MiB) every `sample_every` runs
    peak_rss_mib: float
    growth: float
    failed_runs: int
    seconds: float


async def soak(config: MemoryConfig, log_path: Path, rep: int, *, use_cache: bool = True) -> Soak:
    """One server process, `config.runs` runs one after another."""
    params = params_for(config.scenario, use_cache=use_cache).model_dump(exclude_defaults=True)
    marks = set(config.checkpoints)
    rss: dict[str, float] = {}
    curve: list[tuple[int, float]] = []
    failed = 0
    started = time.monotonic()
    async with (
        ServerProcess(server_args(config.scenario, config.latency), log_path) as server,
        httpx.AsyncClient(base_url=server.url, timeout=60) as client,
    ):

        def sample(done: int) -> None:
            mib = server.rss_kib() / 1024
            if done in marks:
                rss[str(done)] = mib
            if done % config.sample_every == 0 or done in marks:
                curve.append((done, mib))

        sample(0)
        for i in range(1, config.runs + 1):
            body = {"task": f"{TASK} [soak {rep} run {i}]", **params}
            response = await client.post(
                "/solve", json=body, headers={"Accept": "application/json"}
            )
            if response.status_code != 200 or response.json().get("status") != "done":
                failed += 1
            sample(i)
        peak = server.peak_rss_kib() / 1024
    first, last = curve[0][1], curve[-1][1]
    return {
        "rss_mib": rss,
        "curve": curve,
        "peak_rss_mib": peak,
        "growth": (last - first) / first,
        "failed_runs": failed,
        "seconds": time.monotonic() - started,
    }


async def run_memory(config: MemoryConfig, work_dir: Path) -> dict[str, Any]:
    """Every repetition (in parallel server processes); returns the benchmark's JSON."""
    jobs = [
        soak(config, work_dir / f"memory-server-{rep}.log", rep)
        for rep in range(config.repetitions)
    ]
    if config.no_cache_control:
        log = work_dir / "memory-server-no-cache.log"
        jobs.append(soak(config, log, config.repetitions, use_cache=False))
    results = await asyncio.gather(*jobs)
    soaks = list(results[: config.repetitions])
    control = results[config.repetitions] if config.no_cache_control else None
    for rep, result in enumerate(soaks):
        logger.info(
            "memory rep=%s: %s, growth %.1f%%, %s failed",
            rep,
            result["rss_mib"],
            result["growth"] * 100,
            result["failed_runs"],
        )
    at: dict[str, Spread] = {
        str(k): spread([s["rss_mib"][str(k)] for s in soaks]) for k in config.checkpoints
    }
    growth = spread([s["growth"] for s in soaks])
    return {
        "config": {
            "runs": config.runs,
            "checkpoints": list(config.checkpoints),
            "repetitions": config.repetitions,
            "latency": config.latency.describe(),
            "scenario": config.scenario,
            "limit_growth": config.limit_growth,
        },
        "soaks": soaks,
        "no_cache_control": control,
        "rss_mib": at,
        "growth": growth,
        "within_limit": growth["max"] <= config.limit_growth,
    }
