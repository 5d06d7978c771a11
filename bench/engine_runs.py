"""In-process runs of the real engine (LangGraph graph, scheduler, SQLite checkpointer, cache)
with scripted models that sleep for their injected latency, behind the production call policy
at its default settings (`testkit.policy_models.ThroughPolicy`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents.engine import Engine
from agents.events import Event
from agents.params import RunParams
from agents.result import RunResult
from app.settings import Settings
from bench.critical import CriticalPath, critical_path
from bench.models import CountingModels, Delayed
from bench.scenarios import SCENARIOS, TASK, ScenarioName, scenario
from testkit.policy_models import ThroughPolicy


@dataclass(frozen=True)
class Latency:
    """Injected model latency: uniform in [low_s, high_s], fixed per call by `seed`."""

    seed: int = 7
    low_s: float = 0.1
    high_s: float = 0.4

    def describe(self) -> str:
        return f"{self.low_s * 1000:g}-{self.high_s * 1000:g} ms, seed {self.seed}"


def bench_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings for a benchmark: the defaults, without a .env file or tools."""
    values: dict[str, Any] = {
        "model": "google_genai:gemini-2.5-flash",  # never built: scripted models replace it
        "data_dir": data_dir,
        "tools": [],
        **overrides,
    }
    return Settings(_env_file=None, **values)


@dataclass
class Measured:
    """One run: its events (as JSON-like dicts), result and timing."""

    events: list[dict[str, Any]]
    result: RunResult
    timing: CriticalPath
    model_calls: int  # calls that reached the scripted models


class EventLog(list[dict[str, Any]]):
    """An event sink that keeps each event as the JSON the service would send."""

    async def __call__(self, event: Event) -> None:
        self.append(event.model_dump(mode="json"))


@contextlib.asynccontextmanager
async def checkpointer(data_dir: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """The service's default checkpointer: a SQLite file under `data_dir`."""
    await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
    async with aiosqlite.connect(data_dir / "checkpoints.sqlite") as conn:
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        yield saver


class Bench:
    """A fresh engine (so a fresh model cache) over one scenario with injected latency."""

    def __init__(
        self, name: ScenarioName, latency: Latency, settings: Settings, saver: AsyncSqliteSaver
    ) -> None:
        script = Delayed(scenario(name), latency.seed, latency.low_s, latency.high_s)
        self.models = CountingModels(script)
        policy = ThroughPolicy(self.models, settings)
        self.engine = Engine(settings=settings, models=policy, tools=[], checkpointer=saver)

    async def run(self, params: RunParams, task: str = TASK) -> Measured:
        """Run `task` to its end; the model calls it made are those recorded since the start."""
        before = self.models.calls
        log = EventLog()
        result = await self.engine.run(task, params, sink=log)
        return Measured(
            events=list(log),
            result=result,
            timing=critical_path(log),
            model_calls=self.models.calls - before,
        )


def add_server_arguments(parser: argparse.ArgumentParser, *, max_active_runs: int) -> None:
    """The options `server_args` writes (and the slots a served process runs with)."""
    parser.add_argument("--scenario", choices=SCENARIOS, default="small")
    parser.add_argument("--latency-seed", type=int, default=7)
    parser.add_argument("--latency-low-ms", type=float, default=100.0)
    parser.add_argument("--latency-high-ms", type=float, default=400.0)
    parser.add_argument("--max-active-runs", type=int, default=max_active_runs)
    parser.add_argument("--max-queued-runs", type=int, default=1000)


def server_args(scenario: str, latency: Latency) -> list[str]:
    """`python -m bench.serve` arguments for a scenario answered with `latency`."""
    return [
        "--scenario",
        scenario,
        "--latency-seed",
        str(latency.seed),
        "--latency-low-ms",
        str(latency.low_s * 1000),
        "--latency-high-ms",
        str(latency.high_s * 1000),
    ]
