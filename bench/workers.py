"""Benchmark 9, shared runs: throughput with one worker process against two, behind one
API-only process, on Postgres + Redis.

Per configuration (a fresh database each): `python -m bench.workers --child api` (the app with
`worker=False`) and 1 or 2 `--child worker` processes (`run_service`, no HTTP), the scripted
models behind the production call policy (`ThroughPolicy`, default settings) with injected
latency. `clients` closed-loop clients each call `/solve` on the API process, one run after
the other, for `duration_s`; throughput counts the runs that ended `done` within that window.
The clients start spread over the first `ramp_s` (not all in one instant), and the event
latency is that of the runs started after the ramp: the steady state. The p99 over every run,
the ramp's included, is reported beside it.
Every event is created on a worker (its `ts`) and received by the client from the API process,
so the event latency measured is the cross-process one: store write, Redis signal, the API
process's read, SSE.

The CPU of the whole deployment is counted per run: the API and worker processes, Postgres,
Redis and the clients (this process). On a small machine these share the cores, which bounds
what a second worker can add: `ceiling` is the speed-up the cores allow, the cores over the
CPU one run costs everywhere, against one worker's throughput. Each configuration is also run
with every worker held to a share of a core (bench/cpu_share.py), as on a slice of its own:
that speed-up says whether anything shared holds the second worker back.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import httpx

from bench import cpu_share
from bench.engine_runs import Latency, add_server_arguments, bench_settings, server_args
from bench.load import ClientResult, solve
from bench.process import ROOT, ServerProcess, proc_cpu_s
from bench.scenarios import TASK, ScenarioName, params_for
from bench.stats import percentile

logger = logging.getLogger(__name__)

POSTGRES_ADMIN_URL = os.environ.get(
    "LATS_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("LATS_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")


@dataclass(frozen=True)
class WorkersConfig:
    workers: tuple[int, ...] = (1, 2)
    clients: int = 100
    duration_s: float = 60.0
    ramp_s: float = 5.0  # the clients' first requests are spread over this long
    latency: Latency = field(default_factory=Latency)
    scenario: ScenarioName = "small"
    # Slots per worker: enough that a worker is bound by its CPU, not by its slot count.
    max_active_runs: int = 32
    max_queued_runs: int = 1000  # every client's run is admitted: errors are failures
    # Each worker's share of a core, per series of configurations; None: the whole machine.
    worker_cpus: tuple[float | None, ...] = (None, 0.4)


class Measured(TypedDict):
    workers: int
    worker_cpus: float | None  # each worker's share of a core; None: unlimited
    clients: int
    duration_s: float
    completed: int
    errors: int
    runs_per_min: float
    event_latency_p50_ms: float
    event_latency_p99_ms: float
    event_latency_p99_all_ms: float  # every run's events, the ramp's included
    events: int
    cpu_util: dict[str, float]  # CPU seconds per wall second, per process
    # CPU seconds per completed run: api, workers, postgres, redis, clients
    cpu_per_run_s: dict[str, float]
    throttled_s: float  # how long the workers' shares held them back in all
    tail_by_type: dict[str, int]  # the slowest 1 % of events, counted by event type
    p99_by_type_ms: dict[str, float]
    load_avg: float  # the machine's 1-minute load average at the end of the window


# -- the processes -------------------------------------------------------------------------------
def _child_args(role: str, config: WorkersConfig, database_url: str) -> list[str]:
    latency = config.latency
    return [
        "--child",
        role,
        "--database-url",
        database_url,
        "--redis-url",
        REDIS_URL,
        *server_args(config.scenario, latency),
        "--max-active-runs",
        str(config.max_active_runs),
        "--max-queued-runs",
        str(config.max_queued_runs),
    ]


async def _child(args: argparse.Namespace) -> None:
    """One process of the deployment: the API (`worker=False`) or a worker."""
    import uvicorn

    from app.main import create_app
    from app.service import run_service
    from bench.models import served_models

    data_dir = Path(f"/tmp/bench-workers-{os.getpid()}")
    settings = bench_settings(
        data_dir,
        database_url=args.database_url,
        redis_url=args.redis_url,
        max_active_runs=args.max_active_runs,
        max_queued_runs=args.max_queued_runs,
    )
    models = served_models(args, settings)
    if args.child == "worker":
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        async with run_service(settings, models=models, tools=[], worker=True):
            _ready(0)
            await stop.wait()
        return
    app = create_app(settings, models=models, tools=[], worker=False)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", log_config=None
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            return
        await asyncio.sleep(0.02)
    _ready(server.servers[0].sockets[0].getsockname()[1])
    await task


def _ready(port: int) -> None:
    sys.stdout.write(json.dumps({"port": port, "pid": os.getpid()}) + "\n")
    sys.stdout.flush()


@contextlib.contextmanager
def fresh_database() -> Any:
    import psycopg

    name = f"lats_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{POSTGRES_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _service_cpu_s() -> dict[str, float]:
    """CPU seconds so far of the machine's Postgres and Redis server processes (every one of
    them: the benchmark's database is the only busy one)."""
    totals = {"postgres": 0.0, "redis": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            if comm == "postgres":
                totals["postgres"] += proc_cpu_s(int(entry.name))
            elif comm == "redis-server":
                totals["redis"] += proc_cpu_s(int(entry.name))
        except (OSError, ValueError):
            continue  # a process that ended while being read
    return totals


@contextlib.asynccontextmanager
async def deployment(
    config: WorkersConfig, workers: int, database_url: str, work_dir: Path, root: Path = ROOT
) -> AsyncIterator[list[ServerProcess]]:
    """The API process and `workers` worker processes of the checkout at `root`, all ready;
    the API first. They start side by side (a start is mostly imports)."""
    procs = [
        ServerProcess(
            _child_args("api", config, database_url),
            work_dir / f"workers-{workers}-api.log",
            module="bench.workers",
            root=root,
        )
    ]
    procs += [
        ServerProcess(
            _child_args("worker", config, database_url),
            work_dir / f"workers-{workers}-worker{i}.log",
            module="bench.workers",
            root=root,
        )
        for i in range(workers)
    ]
    async with contextlib.AsyncExitStack() as stack:
        # Every start runs to its end (none is left half-entered), then the first failure is
        # raised: the stack stops whatever did start.
        entered = await asyncio.gather(
            *(stack.enter_async_context(proc) for proc in procs), return_exceptions=True
        )
        for outcome in entered:
            if isinstance(outcome, BaseException):
                raise outcome
        yield procs


# -- the load ------------------------------------------------------------------------------------
async def _closed_loop(url: str, config: WorkersConfig, tag: str) -> tuple[list[ClientResult], int]:
    """The runs that ended within `duration_s` (and every failed one), and how many ended
    `done` in all, those that ended after the window included (their CPU is counted too)."""
    params = params_for(config.scenario).model_dump(exclude_defaults=True)
    limits = httpx.Limits(
        max_connections=config.clients + 8, max_keepalive_connections=config.clients + 8
    )
    timeout = httpx.Timeout(30.0, read=600.0)
    deadline = time.monotonic() + config.duration_s
    results: list[ClientResult] = []
    ended = 0

    async def client_loop(client: httpx.AsyncClient, i: int) -> None:
        await asyncio.sleep(config.ramp_s * i / config.clients)
        n = 0
        while time.monotonic() < deadline:
            body = {"task": f"{TASK} [{tag} client {i} run {n}]", **params}
            result = await solve(client, body)
            if time.monotonic() <= deadline or result["terminal"] != "done":
                results.append(result)
            if result["terminal"] == "done":
                nonlocal ended
                ended += 1
            n += 1

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:
        await asyncio.gather(*(client_loop(client, i) for i in range(config.clients)))
    return results, ended


async def measure(
    config: WorkersConfig, workers: int, work_dir: Path, worker_cpus: float | None = None
) -> Measured:
    with fresh_database() as database_url, contextlib.ExitStack() as shares:
        async with deployment(config, workers, database_url, work_dir) as procs:
            api = procs[0]
            limited = []
            if worker_cpus is not None:
                for i, proc in enumerate(procs[1:]):
                    share = cpu_share.CpuShare(f"lats-bench-{os.getpid()}-w{i}", worker_cpus)
                    shares.callback(share.close)
                    share.add(proc.pid)
                    limited.append(share)
            warm = WorkersConfig(clients=2, duration_s=0.1, ramp_s=0.0, scenario=config.scenario)
            await _closed_loop(api.url, warm, f"warm-up {workers}")
            cpu_before = [p.cpu_s() for p in procs]
            services_before = _service_cpu_s()
            clients_before = time.process_time()
            throttled_before = sum(share.throttled_s() for share in limited)
            started = time.monotonic()
            results, ended = await _closed_loop(api.url, config, f"workers {workers}")
            steady = [r for r in results if r["started_s"] >= started + config.ramp_s]
            wall = time.monotonic() - started
            cpu = [p.cpu_s() - before for p, before in zip(procs, cpu_before, strict=True)]
            services = {k: v - services_before[k] for k, v in _service_cpu_s().items()}
            clients_cpu = time.process_time() - clients_before
            throttled = sum(share.throttled_s() for share in limited) - throttled_before
            load_avg = os.getloadavg()[0]
    done = [r for r in results if r["terminal"] == "done"]
    every = [x for r in results for x in r["latencies_s"]]
    latencies = [x for r in steady for x in r["latencies_s"]]
    typed = [(x, t) for r in steady for x, t in zip(r["latencies_s"], r["types"], strict=True)]
    names = ["api"] + [f"worker{i}" for i in range(workers)]
    per_run = {
        "api": cpu[0],
        "workers": sum(cpu[1:]),
        **services,
        "clients": clients_cpu,
    }
    return {
        "workers": workers,
        "worker_cpus": worker_cpus,
        "clients": config.clients,
        "duration_s": config.duration_s,
        "completed": len(done),
        "errors": len(results) - len(done),
        "runs_per_min": len(done) / config.duration_s * 60,
        "event_latency_p50_ms": percentile(latencies, 50) * 1000,
        "event_latency_p99_ms": percentile(latencies, 99) * 1000,
        "event_latency_p99_all_ms": percentile(every, 99) * 1000,
        "events": len(latencies),
        "cpu_util": {n: c / wall for n, c in zip(names, cpu, strict=True)},
        "cpu_per_run_s": {k: v / max(1, ended) for k, v in per_run.items()},
        "throttled_s": throttled,
        "tail_by_type": tail_by_type(typed),
        "p99_by_type_ms": p99_by_type_ms(typed),
        "load_avg": load_avg,
    }


def tail_by_type(typed: list[tuple[float, str]]) -> dict[str, int]:
    """Where the tail is: the slowest 1 % of events, counted by event type."""
    if not typed:
        return {}
    line = percentile([x for x, _ in typed], 99)
    return dict(Counter(kind for x, kind in typed if x >= line).most_common())


def p99_by_type_ms(typed: list[tuple[float, str]]) -> dict[str, float]:
    groups: dict[str, list[float]] = {}
    for x, kind in typed:
        groups.setdefault(kind, []).append(x)
    return {k: percentile(v, 99) * 1000 for k, v in sorted(groups.items())}


def ceiling(row: Measured, cores: int) -> float:
    """The speed-up over `row` that `cores` allow: the runs per minute the cores could carry
    at `row`'s CPU per run (every process of the deployment counted), over `row`'s."""
    per_run = sum(row["cpu_per_run_s"].values())
    if per_run <= 0 or row["runs_per_min"] <= 0:
        return 0.0
    return cores / per_run * 60 / row["runs_per_min"]


async def run_workers(config: WorkersConfig, work_dir: Path) -> dict[str, Any]:
    """Each configuration once per CPU share; the speed-up of the most workers over the
    fewest, per share."""
    shares = list(config.worker_cpus)
    reason = cpu_share.unavailable()
    if reason is not None and any(share is not None for share in shares):
        logger.warning("shared runs: no CPU share per worker (%s)", reason)
        shares = [share for share in shares if share is None]
    rows: list[Measured] = []
    speedups: dict[str, float] = {}
    for share in shares:
        series = []
        for workers in config.workers:
            logger.info(
                "shared runs: %d worker process(es) (%s), %d clients",
                workers,
                "whole machine" if share is None else f"{share:g} core each",
                config.clients,
            )
            series.append(await measure(config, workers, work_dir, share))
            logger.info("shared runs: %s", series[-1])
        base = series[0]["runs_per_min"]
        speedups[_share_key(share)] = series[-1]["runs_per_min"] / base if base else 0.0
        rows += series
    whole = [row for row in rows if row["worker_cpus"] is None]
    cores = os.cpu_count() or 1
    return {
        "config": {
            "clients": config.clients,
            "duration_s": config.duration_s,
            "ramp_s": config.ramp_s,
            "latency": config.latency.describe(),
            "scenario": config.scenario,
            "max_active_runs": config.max_active_runs,
        },
        "rows": rows,
        "speedup": speedups.get("whole", 0.0),
        "speedups": speedups,
        "cores": cores,
        "ceiling": ceiling(whole[0], cores) if whole else 0.0,
        "no_share": reason,
    }


def _share_key(share: float | None) -> str:
    return "whole" if share is None else f"{share:g}"


def _share_label(share: float | None) -> str:
    return "" if share is None else f" at {share:g} core each"


def summary(data: dict[str, Any]) -> list[str]:
    lines = [
        f"shared runs, {r['workers']} worker(s){_share_label(r.get('worker_cpus'))}: "
        f"{r['runs_per_min']:.0f} runs/min, errors {r['errors']}, cross-process event latency "
        f"p50 {r['event_latency_p50_ms']:.0f} ms p99 {r['event_latency_p99_ms']:.0f} ms"
        for r in data["rows"]
    ]
    for key, value in data.get("speedups", {"whole": data["speedup"]}).items():
        where = "whole machine" if key == "whole" else f"{key} core per worker"
        lines.append(f"shared runs speed-up ({where}): {value:.2f}x")
    if data.get("ceiling"):
        lines.append(f"shared runs: the {data['cores']} cores allow {data['ceiling']:.2f}x")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.workers", description=__doc__)
    parser.add_argument("--child", choices=("api", "worker"), required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--redis-url", required=True)
    add_server_arguments(parser, max_active_runs=32)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(_child(args))


if __name__ == "__main__":
    main()
