"""A worker's CPU per run on Postgres + Redis, side by side with another checkout.

Per measurement (a fresh database each): the deployment of benchmark 9 (bench/workers.py) with
one worker, the checkout's own code in both processes: an API-only process and a worker, the
scripted models behind the production call policy with their injected latency. `clients`
closed-loop clients call `/solve` for `duration_s`. What is counted, per run that ended `done`:

- the worker's CPU (user + system, from /proc): what item "less CPU per run" is about;
- the database's transactions (`pg_stat_database.xact_commit` of the benchmark's database) and
  the Redis server's commands (`INFO stats`, both processes' together): the round trips behind
  that CPU.

`--against DIR` measures another checkout (`git worktree add DIR REV`) alternately with this
one, `--pairs` times; the result is the median of each and the ratio within each pair, so the
machine's noise hits both alike.

    .venv/bin/python -m bench.worker_cpu --against ../before --pairs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from bench.process import ROOT
from bench.stats import Spread, spread
from bench.workers import POSTGRES_ADMIN_URL, REDIS_URL, WorkersConfig, deployment, fresh_database
from bench.workers import _closed_loop as closed_loop

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerCpuConfig:
    """The load of one measurement (`clients` for `duration_s`), how many pairs to make, and
    the checkout measured beside this one."""

    load: WorkersConfig = field(
        default_factory=lambda: WorkersConfig(clients=20, duration_s=20.0, ramp_s=1.0)
    )
    pairs: int = 3
    against: Path | None = None


class Measured(TypedDict):
    tree: str
    ended: int
    worker_cpu_ms_per_run: float
    api_cpu_ms_per_run: float
    transactions_per_run: float
    redis_commands_per_run: float


def _transactions(database: str) -> int:
    import psycopg

    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        row = admin.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()
    return int(row[0]) if row else 0


async def _redis_commands() -> int:
    import redis.asyncio as redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        stats = await client.info("stats")
    finally:
        await client.aclose()
    return int(stats["total_commands_processed"])


async def measure(root: Path, config: WorkerCpuConfig, work_dir: Path) -> Measured:
    """One measurement of the code at `root`."""
    load = config.load
    with fresh_database() as database_url:
        database = database_url.rsplit("/", 1)[1]
        async with deployment(load, 1, database_url, work_dir, root=root) as procs:
            api, worker = procs
            warm = WorkersConfig(clients=2, duration_s=0.5, ramp_s=0.0)
            await closed_loop(api.url, warm, "warm-up")
            await asyncio.sleep(0.5)  # the warm-up's last writes
            cpu0, api0 = worker.cpu_s(), api.cpu_s()
            xact0, redis0 = _transactions(database), await _redis_commands()
            tag = f"{root.name} {uuid.uuid4().hex}"  # tasks no cache has seen
            _, ended = await closed_loop(api.url, load, tag)
            cpu, api_cpu = worker.cpu_s() - cpu0, api.cpu_s() - api0
            xact = _transactions(database) - xact0
            commands = await _redis_commands() - redis0
    runs = max(1, ended)
    return {
        "tree": root.name,
        "ended": ended,
        "worker_cpu_ms_per_run": 1000 * cpu / runs,
        "api_cpu_ms_per_run": 1000 * api_cpu / runs,
        "transactions_per_run": xact / runs,
        "redis_commands_per_run": commands / runs,
    }


def _spreads(rows: list[Measured]) -> dict[str, Spread]:
    keys = [k for k in Measured.__annotations__ if k not in ("tree", "ended")]
    return {k: spread([float(r[k]) for r in rows]) for k in keys}  # type: ignore[literal-required]  # the keys are Measured's own


async def run_worker_cpu(config: WorkerCpuConfig, work_dir: Path) -> dict[str, Any]:
    """`pairs` measurements of this checkout, each after one of `against` when given."""
    mine: list[Measured] = []
    theirs: list[Measured] = []
    for i in range(config.pairs):
        if config.against is not None:
            theirs.append(await measure(config.against, config, work_dir / f"against-{i}"))
            logger.info("against: %s", theirs[-1])
        mine.append(await measure(ROOT, config, work_dir / f"this-{i}"))
        logger.info("this: %s", mine[-1])
    out: dict[str, Any] = {
        "clients": config.load.clients,
        "duration_s": config.load.duration_s,
        "this": _spreads(mine),
        "runs": [m["ended"] for m in mine],
        "load_average": os.getloadavg()[0],
    }
    if config.against is not None:
        out["against"] = {
            "tree": config.against.name,
            **_spreads(theirs),
            "runs": [t["ended"] for t in theirs],
            "ratio": spread(
                [
                    m["worker_cpu_ms_per_run"] / t["worker_cpu_ms_per_run"]
                    for m, t in zip(mine, theirs, strict=True)
                ]
            ),
        }
    return out


def summary(data: dict[str, Any]) -> list[str]:
    """The benchmark's lines in `python -m bench`'s closing summary."""
    this = data["this"]["worker_cpu_ms_per_run"]["median"]
    line = f"worker CPU per run {this:.1f} ms"
    if (against := data.get("against")) is not None:
        theirs = against["worker_cpu_ms_per_run"]["median"]
        line += f" against {theirs:.1f} ms ({against['tree']}): {against['ratio']['median']:.2f}x"
    return [line]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker_cpu", description=__doc__)
    default = WorkerCpuConfig()
    parser.add_argument("--clients", type=int, default=default.load.clients)
    parser.add_argument("--duration", type=float, default=default.load.duration_s)
    parser.add_argument("--pairs", type=int, default=default.pairs)
    parser.add_argument("--against", type=Path, default=None, help="another checkout")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/bench-worker-cpu"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    load = WorkersConfig(clients=args.clients, duration_s=args.duration, ramp_s=1.0)
    config = WorkerCpuConfig(load, args.pairs, args.against)
    out = asyncio.run(run_worker_cpu(config, args.work_dir))
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
