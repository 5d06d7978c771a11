"""Benchmark 4, load: N concurrent `/solve` clients against the server as a process.

Per level N (a fresh server each, warmed by one run): throughput (completed runs per minute
of the wave), the latency from an event's creation (`ts`, in the server) to its receipt by the
client, client-side run durations, errors (non-200 answers, transport errors, runs not ending
in `done`), the server's peak RSS and CPU use. Then one extra, unmeasured wave at the most
loaded level runs under py-spy to show what limits it, and one more with the server's data
directory (SQLite run store and checkpointer) on tmpfs, to show what durable writes cost.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

import httpx

from agents.engine import Engine
from agents.events import TERMINAL_TYPES
from app.http.sse import aframes
from app.settings import Settings
from bench.engine_runs import Latency, bench_settings, server_args
from bench.process import ServerProcess
from bench.profile import Profiler, ProfileSummary, summarize
from bench.scenarios import TASK, ScenarioName, params_for, scenario
from bench.stats import Spread, percentile, spread
from testkit.fakes import FakeModels
from testkit.policy_models import ThroughPolicy

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadConfig:
    clients: tuple[int, ...] = (10, 25, 50, 100, 200)
    repetitions: int = 3
    latency: Latency = field(default_factory=Latency)
    scenario: ScenarioName = "small"
    profile: bool = True
    tmpfs: Path | None = Path("/dev/shm")  # None: skip the in-memory data-directory wave
    timeout_s: float = 600.0


class ClientResult(TypedDict):
    status: int
    terminal: str | None
    error: str | None
    started_s: float  # time.monotonic() when the request went out
    duration_s: float
    latencies_s: list[float]
    types: list[str]  # each latency's event type
    events: int


class Wave(TypedDict):
    clients: int
    wall_s: float
    completed: int
    errors: int
    throughput_per_min: float
    event_latency_p50_ms: float
    event_latency_p99_ms: float
    run_p50_s: float
    run_p99_s: float
    events: int
    peak_rss_mib: float
    cpu_util: float  # server CPU seconds per wall second (1.0 = one core busy)


async def solve(client: httpx.AsyncClient, body: dict[str, Any]) -> ClientResult:
    """One `/solve` client: read the SSE stream to its terminal event."""
    started = time.monotonic()
    latencies: list[float] = []
    types: list[str] = []
    terminal: str | None = None
    status = 0
    error: str | None = None
    try:
        async with client.stream("POST", "/solve", json=body) as response:
            status = response.status_code
            if status != 200:
                await response.aread()
            else:
                async for frame in aframes(response.aiter_lines()):
                    received = time.time()
                    event = frame.json()
                    latencies.append(received - datetime.fromisoformat(event["ts"]).timestamp())
                    types.append(event["type"])
                    if event["type"] in TERMINAL_TYPES:
                        terminal = event["type"]
                        break
    except httpx.HTTPError as e:
        error = type(e).__name__
    return {
        "status": status,
        "terminal": terminal,
        "error": error,
        "started_s": started,
        "duration_s": time.monotonic() - started,
        "latencies_s": latencies,
        "types": types,
        "events": len(latencies),
    }


async def wave(server: ServerProcess, n: int, tag: str, config: LoadConfig) -> Wave:
    """N clients at once, each with its own task (so the model cache never answers)."""
    params = params_for(config.scenario).model_dump(exclude_defaults=True)
    limits = httpx.Limits(max_connections=n + 8, max_keepalive_connections=n + 8)
    timeout = httpx.Timeout(30.0, read=config.timeout_s)
    peak = server.rss_kib()
    stop = asyncio.Event()

    async def sample_rss() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, server.rss_kib())
            await asyncio.sleep(0.1)

    sampler = asyncio.create_task(sample_rss())
    cpu_before = server.cpu_s()
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=timeout) as client:
        results = await asyncio.gather(
            *(solve(client, {"task": f"{TASK} [{tag} client {i}]", **params}) for i in range(n))
        )
    wall = time.monotonic() - started
    cpu = server.cpu_s() - cpu_before
    stop.set()
    await sampler
    latencies = [x for r in results for x in r["latencies_s"]]
    durations = [r["duration_s"] for r in results if r["terminal"] == "done"]
    completed = len(durations)
    return {
        "clients": n,
        "wall_s": wall,
        "completed": completed,
        "errors": n - completed,
        "throughput_per_min": completed / wall * 60 if wall > 0 else 0.0,
        "event_latency_p50_ms": percentile(latencies, 50) * 1000,
        "event_latency_p99_ms": percentile(latencies, 99) * 1000,
        "run_p50_s": percentile(durations, 50),
        "run_p99_s": percentile(durations, 99),
        "events": len(latencies),
        "peak_rss_mib": peak / 1024,
        "cpu_util": cpu / wall if wall > 0 else 0.0,
    }


class LevelSummary(TypedDict):
    clients: int
    throughput_per_min: Spread
    event_latency_p50_ms: Spread
    event_latency_p99_ms: Spread
    run_p50_s: Spread
    errors: Spread
    peak_rss_mib: Spread
    cpu_util: Spread


def summarize_level(waves: list[Wave]) -> LevelSummary:
    def s(key: str) -> Spread:
        return spread([float(w[key]) for w in waves])  # type: ignore[literal-required]

    return {
        "clients": waves[0]["clients"],
        "throughput_per_min": s("throughput_per_min"),
        "event_latency_p50_ms": s("event_latency_p50_ms"),
        "event_latency_p99_ms": s("event_latency_p99_ms"),
        "run_p50_s": s("run_p50_s"),
        "errors": s("errors"),
        "peak_rss_mib": s("peak_rss_mib"),
        "cpu_util": s("cpu_util"),
    }


def find_knee(levels: list[LevelSummary], efficiency: float = 0.8) -> int | None:
    """The first level whose throughput falls below `efficiency` x the linear scaling of the
    lightest level (more clients stop buying proportionally more runs): where it saturates."""
    if not levels:
        return None
    base = levels[0]
    per_client = base["throughput_per_min"]["median"] / base["clients"]
    for level in levels[1:]:
        if level["throughput_per_min"]["median"] < efficiency * per_client * level["clients"]:
            return level["clients"]
    return None


async def _tmpfs_wave(config: LoadConfig, n: int, work_dir: Path) -> Wave | None:
    """One wave with the server's SQLite files in memory (no disk syncs)."""
    if config.tmpfs is None or not config.tmpfs.is_dir():
        return None
    data = Path(tempfile.mkdtemp(prefix="bench-tmpfs-", dir=config.tmpfs))
    try:
        args = [*server_args(config.scenario, config.latency), "--data-dir", str(data)]
        async with ServerProcess(args, work_dir / f"load-server-{n}-tmpfs.log") as server:
            await wave(server, 1, f"warm-up tmpfs {n}", config)
            return await wave(server, n, f"N{n} tmpfs", config)
    finally:
        shutil.rmtree(data, ignore_errors=True)


async def calls_per_run(scenario_name: ScenarioName) -> int:
    """Model calls one run of the scenario makes (an in-process run with instant replies)."""
    settings = bench_settings(Path(tempfile.mkdtemp(prefix="bench-calls-")))
    models = ThroughPolicy(FakeModels(scenario(scenario_name)), settings)
    engine = Engine(settings=settings, models=models, tools=[])
    try:
        result = await engine.run(TASK, params_for(scenario_name, use_cache=False))
    finally:
        shutil.rmtree(settings.data_dir, ignore_errors=True)
    return int(result.metrics.get("llm_calls", 0))


def policy_defaults() -> dict[str, float]:
    """The call policy's default limits, which the server runs with."""
    defaults = Settings.model_fields
    return {
        name: float(defaults[name].default)
        for name in ("model_max_in_flight", "model_rps", "model_burst", "max_active_runs")
    }


async def run_load(config: LoadConfig, work_dir: Path, results_dir: Path) -> dict[str, Any]:
    """Every level, then the profile and the tmpfs wave; returns the benchmark's JSON."""
    waves: list[Wave] = []
    levels: list[LevelSummary] = []
    profile: ProfileSummary | None = None
    tmpfs: dict[str, Any] | None = None
    for n in config.clients:
        log = work_dir / f"load-server-{n}.log"
        async with ServerProcess(server_args(config.scenario, config.latency), log) as server:
            await wave(server, 1, f"warm-up {n}", config)
            mine = []
            for rep in range(config.repetitions):
                result = await wave(server, n, f"N{n} rep{rep}", config)
                logger.info(
                    "load N=%s rep=%s: %.0f runs/min, p99 %.0f ms, %s errors",
                    n,
                    rep,
                    result["throughput_per_min"],
                    result["event_latency_p99_ms"],
                    result["errors"],
                )
                mine.append(result)
            waves += mine
            levels.append(summarize_level(mine))
            if config.profile and n == max(config.clients):
                out = results_dir / "load_profile.txt"
                async with Profiler(server.pid, out):
                    await wave(server, n, f"N{n} profiled", config)
                profile = summarize(out.read_text())
    knee = find_knee(levels)
    probe = max(config.clients)
    tmpfs_wave = await _tmpfs_wave(config, probe, work_dir)
    if tmpfs_wave is not None:
        same = next(lv for lv in levels if lv["clients"] == probe)
        tmpfs = {
            "clients": probe,
            "wave": tmpfs_wave,
            "disk_throughput_per_min": same["throughput_per_min"]["median"],
        }
    return {
        "config": {
            "clients": list(config.clients),
            "repetitions": config.repetitions,
            "latency": config.latency.describe(),
            "scenario": config.scenario,
            "params": params_for(config.scenario).model_dump(exclude_defaults=True),
            "policy": policy_defaults(),
            "calls_per_run": await calls_per_run(config.scenario),
        },
        "waves": waves,
        "levels": levels,
        "knee_clients": knee,
        "peak_clients": max(levels, key=lambda lv: lv["throughput_per_min"]["median"])["clients"],
        "profile": profile,
        "tmpfs": tmpfs,
    }
