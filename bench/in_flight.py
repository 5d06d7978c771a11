"""Benchmark 14, the in-flight cap: one process's throughput against a provider that serves a
bounded number of calls at once, with the old fixed cap of 16 calls in flight and with the
adaptive cap (`calls/concurrency.py`), side by side.

N clients each run one search after another for `duration_s` (the `small` scenario, a task
of their own, `use_cache=false`: every call reaches the provider) through the engine in this
process, behind the production call policy (`testkit.policy_models.ThroughPolicy`: timeouts,
retries, the adaptive rate and the in-flight cap). The provider is scripted: each call takes
150-350 ms (fixed per call by a hash) and is refused with a 429 while `provider_in_flight`
calls are already in its hands, as a provider's concurrency limit does. Recorded per cap and
client count: runs completed per minute, model calls per second, 429s, the most calls the
provider held at once and the cap the limiter ended with.

The fixed cap is the adaptive one with its ceiling at 16 (it starts at 16 and cannot grow):
the old behaviour.

Then two deployments of two "processes" each (two engines in this process, the clients split
between them, each with a limiter of its own, as two processes have) against the same one
provider: with a cap per process, and with the cap shared through Redis
(`app/backends/in_flight_redis.py`, the local Redis or `LATS_BENCH_REDIS_URL`; left out when
no Redis answers).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.exceptions import ModelRateLimitError

from agents.engine import Engine
from agents.params import RunParams
from app.backends.model_limiter_redis import RedisLimiter
from app.backends.redis import shared_redis
from bench.engine_runs import Latency, bench_settings
from bench.models import CountingModels, Delayed
from bench.scenarios import TASK, scenario
from bench.workers import REDIS_URL
from calls.ratelimit import LimiterSource, ModelLimiter, model_limiter, reset_model_limiters
from testkit.fakes import FakeCall, Reply
from testkit.policy_models import ThroughPolicy

logger = logging.getLogger(__name__)

CAPS = {"fixed 16": 16, "adaptive": 256}  # the ceiling each runs with
RETRY_AFTER_S = 0.2  # what the provider's refusal asks: come back shortly
REPLICAS = 2


@dataclass(frozen=True)
class InFlightConfig:
    clients: tuple[int, ...] = (50, 200)
    duration_s: float = 30.0
    provider_in_flight: int = 64
    latency: Latency = field(default_factory=lambda: Latency(seed=7, low_s=0.15, high_s=0.35))


class Provider:
    """The scripted provider: the scenario's replies after their latency, a 429 beyond
    `limit` calls at once."""

    def __init__(self, delayed: Delayed, limit: int) -> None:
        self.delayed = delayed
        self.limit = limit
        self.held = 0
        self.most = 0
        self.refused = 0

    async def __call__(self, call: FakeCall) -> Reply:
        if self.held >= self.limit:
            self.refused += 1
            await asyncio.sleep(0.005)  # the round trip of a refusal
            refusal = ModelRateLimitError("429 RESOURCE_EXHAUSTED: too many concurrent requests")
            refusal.retry_after = RETRY_AFTER_S  # type: ignore[attr-defined]
            return refusal
        self.held += 1
        self.most = max(self.most, self.held)
        try:
            return await self.delayed(call)
        finally:
            self.held -= 1


def _redis_limiters(prefix: str) -> LimiterSource:
    """Each call a limiter of its own on the Redis at `REDIS_URL`: two processes' limiters."""

    def make(model: str, *, ceiling: float | None, burst: int, max_in_flight: int) -> ModelLimiter:
        return RedisLimiter(
            REDIS_URL,
            model,
            ceiling=ceiling,
            burst=burst,
            max_in_flight=max_in_flight,
            prefix=prefix,
        )

    return make


async def redis_answers() -> bool:
    """Whether the benchmark's Redis is there to share a cap through."""
    try:
        await shared_redis(REDIS_URL).call(lambda client: client.ping())
    except Exception:
        return False
    return True


async def _point(
    config: InFlightConfig,
    ceiling: int,
    clients: int,
    work: Path,
    *,
    replicas: int = 1,
    shared: bool = False,
) -> dict[str, Any]:
    reset_model_limiters()
    settings = bench_settings(
        work / f"{ceiling}-{clients}-{replicas}-{shared}",
        model_max_in_flight=ceiling,
        model_retry_base_delay_s=0.05,
        max_active_runs=clients,
    )
    latency = config.latency
    provider = Provider(
        Delayed(scenario("small"), latency.seed, latency.low_s, latency.high_s),
        config.provider_in_flight,
    )
    fakes = CountingModels(provider)  # type: ignore[arg-type]
    limiters = _redis_limiters(f"bench:in-flight:{uuid.uuid4().hex}") if shared else model_limiter
    # One engine per "process", each with a limiter of its own: in-process ones by their names;
    # shared ones under one model name, a limiter object each (`_redis_limiters`).
    policies = [
        ThroughPolicy(
            fakes, settings, name="in-flight" if shared else f"in-flight-{i}", limiters=limiters
        )
        for i in range(replicas)
    ]
    engines = [Engine(settings=settings, models=policy, tools=[]) for policy in policies]
    params = RunParams(strategy="mcts", max_paths=2, use_cache=False)
    stop_at = time.monotonic() + config.duration_s
    done = failed = 0

    async def client(engine: Engine) -> None:
        nonlocal done, failed
        while time.monotonic() < stop_at:
            result = await engine.run(f"{TASK} ({uuid.uuid4().hex})", params)
            if result.status == "done":
                done += 1
            else:
                failed += 1

    began = time.monotonic()
    await asyncio.gather(*(client(engines[i % replicas]) for i in range(clients)))
    wall_s = time.monotonic() - began
    caps = [policy.limiter.stats().max_in_flight for policy in policies]
    if shared:
        await _forget(policies)
    return {
        "cap": _cap_name(ceiling, replicas, shared),
        "ceiling": ceiling,
        "replicas": replicas,
        "shared": shared,
        "clients": clients,
        "wall_s": round(wall_s, 2),
        "runs_done": done,
        "runs_failed": failed,
        "runs_per_min": round(done / wall_s * 60, 1),
        "calls_per_s": round(fakes.calls / wall_s, 1),
        "rate_limited": provider.refused,
        "provider_most_in_flight": provider.most,
        "cap_at_end": sum(caps) if not shared else caps[0],
    }


async def _forget(policies: list[ThroughPolicy]) -> None:
    """Delete a shared point's keys from the benchmark's Redis."""
    limiter = policies[0].limiter
    assert isinstance(limiter, RedisLimiter)
    keys = limiter.keys()
    await shared_redis(REDIS_URL).call(lambda client: client.delete(*keys))


def _cap_name(ceiling: int, replicas: int, shared: bool) -> str:
    name = "adaptive" if ceiling > 16 else "fixed 16"
    if replicas == 1:
        return name
    return f"{name}, {replicas} processes, " + ("shared" if shared else "one cap each")


async def run_in_flight(config: InFlightConfig, work: Path) -> dict[str, Any]:
    """Every client count with each cap, side by side; bench/results/in_flight.json."""
    # A short point first, not kept: the first runs of a process pay for its imports and
    # LangChain's per-model set-up, which would count against whichever cap ran first.
    warm = InFlightConfig(clients=(4,), duration_s=2.0, provider_in_flight=8)
    await _point(warm, CAPS["fixed 16"], 4, work / "warm-up")
    points = []
    for clients in config.clients:
        for name, ceiling in CAPS.items():
            logger.info("in-flight: %s cap, %d clients", name, clients)
            points.append(await _point(config, ceiling, clients, work))
    if await redis_answers():
        for clients in config.clients:
            for shared in (False, True):
                logger.info(
                    "in-flight: %d processes, shared %s, %d clients", REPLICAS, shared, clients
                )
                points.append(
                    await _point(
                        config, CAPS["adaptive"], clients, work, replicas=REPLICAS, shared=shared
                    )
                )
    return {
        "config": {
            "clients": list(config.clients),
            "duration_s": config.duration_s,
            "provider_in_flight": config.provider_in_flight,
            "latency_ms": [config.latency.low_s * 1000, config.latency.high_s * 1000],
        },
        "points": points,
    }


def summary(data: dict[str, Any]) -> list[str]:
    return [
        f"in-flight {p['cap']:<8} {p['clients']:>3} clients: {p['runs_per_min']:.0f} runs/min, "
        f"{p['calls_per_s']:.0f} calls/s, {p['rate_limited']} 429s, provider held at most "
        f"{p['provider_most_in_flight']}, cap at the end {p['cap_at_end']}"
        for p in data["points"]
    ]
