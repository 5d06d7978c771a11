"""Benchmark 6, the quota sweep: concurrent runs at DEFAULT settings through the real
langchain-google-genai client and the call policy, against the Gemini simulator in quota mode
(2, 6 and 20 requests/s). Reports the share of the quota used and of requests rejected, from
the simulator's own log.

The simulator answers in 150-350 ms (fixed per request by a hash, as the other benchmarks'
scripted models do) and refuses requests beyond its token bucket with Gemini's 429
RESOURCE_EXHAUSTED body and a RetryInfo delay.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.engine import Engine
from agents.params import RunParams
from app.settings import Settings
from bench.scenarios import TASK, scenario
from bench.stats import spread
from calls.models import SettingsModelFactory
from calls.ratelimit import reset_model_limiters
from testkit.gemini_roles import from_scenario
from testkit.gemini_sim import Delayed, GeminiSimulator, Quota, Script, SimRequest
from testkit.gemini_sim import Reply as SimReply

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class QuotaConfig:
    quotas_rps: tuple[float, ...] = (2.0, 6.0, 20.0)
    runs: int = 3  # concurrent runs sharing the quota
    repetitions: int = 1
    low_s: float = 0.15
    high_s: float = 0.35
    max_paths: int = 6


def _latency(request: SimRequest, low_s: float, high_s: float) -> float:
    digest = hashlib.blake2b(request.system.encode() + request.prompt.encode(), digest_size=8)
    return low_s + (high_s - low_s) * int.from_bytes(digest.digest(), "big") / 2**64


def delayed(script: Script, low_s: float, high_s: float) -> Script:
    """`script`, each reply after its request's latency."""

    def answer(request: SimRequest) -> SimReply:
        return Delayed(script(request), _latency(request, low_s, high_s))

    return answer


def quota_shares(sim: GeminiSimulator, quota: Quota) -> dict[str, float]:
    """Share of the quota used (admitted over what the bucket could admit between the first
    and the last request) and share of requests rejected."""
    requests = sim.requests
    span = requests[-1].at - requests[0].at if requests else 0.0
    capacity = quota.burst + quota.rps * span
    return {
        "used": quota.admitted / capacity if capacity else 0.0,
        "rejected": quota.rejected / len(requests) if requests else 0.0,
        "span_s": span,
        "requests": float(len(requests)),
    }


async def _point(rps: float, config: QuotaConfig, data_dir: Path) -> dict[str, Any]:
    quota = Quota(rps=rps, burst=max(1, round(rps)))
    script = delayed(from_scenario(scenario("wide")), config.low_s, config.high_s)
    reset_model_limiters()  # each point starts from a fresh adaptive rate
    with GeminiSimulator(script, quota=quota) as sim:
        # The SDK reads the base URL when a client is built; the factory builds one per role.
        os.environ["GOOGLE_GEMINI_BASE_URL"] = sim.base_url
        os.environ.setdefault("GOOGLE_API_KEY", "simulated-key")
        settings = Settings(
            _env_file=None,
            model="google_genai:gemini-2.5-flash",
            tools=[],
        )
        engine = Engine(settings=settings, models=SettingsModelFactory(settings), tools=[])
        params = RunParams(strategy="mcts", max_paths=config.max_paths)
        started = time.monotonic()
        results = await asyncio.gather(
            *(engine.run(f"{TASK} (run {i})", params) for i in range(config.runs))
        )
        wall = time.monotonic() - started
    shares = quota_shares(sim, quota)
    done = sum(1 for r in results if r.status == "done")
    logger.info(
        "quota %g/s: used %.0f%%, rejected %.1f%%, %d/%d runs done in %.1fs",
        rps,
        shares["used"] * 100,
        shares["rejected"] * 100,
        done,
        config.runs,
        wall,
    )
    return {
        "rps": rps,
        **shares,
        "wall_s": wall,
        "runs_done": done,
        "rate_limited": sum(int(r.metrics.get("rate_limited", 0)) for r in results),
        "llm_calls": sum(int(r.metrics.get("llm_calls", 0)) for r in results),
    }


async def run_quota(config: QuotaConfig, work: Path) -> dict[str, Any]:
    """The sweep: every quota, `repetitions` times."""
    for noisy in ("httpx2", "google_genai.models"):  # a line per request otherwise
        logging.getLogger(noisy).setLevel(logging.WARNING)
    points: list[dict[str, Any]] = []
    for rps in config.quotas_rps:
        reps = [
            await _point(rps, config, work / f"quota-{rps:g}-{rep}")
            for rep in range(config.repetitions)
        ]
        points.append(
            {
                "rps": rps,
                "used": spread([r["used"] for r in reps]),
                "rejected": spread([r["rejected"] for r in reps]),
                "wall_s": spread([r["wall_s"] for r in reps]),
                "runs_done": min(r["runs_done"] for r in reps),
                "reps": reps,
            }
        )
    return {
        "runs": config.runs,
        "latency_ms": [config.low_s * 1000, config.high_s * 1000],
        "points": points,
    }


def summary(data: dict[str, Any]) -> list[str]:
    """One line per quota for the console."""
    return [
        f"quota {p['rps']:>4g}/s: used {p['used']['median'] * 100:.0f}%, rejected "
        f"{p['rejected']['median'] * 100:.1f}%, {p['runs_done']}/{data['runs']} runs done, "
        f"wall {p['wall_s']['median']:.1f}s"
        for p in data["points"]
    ]
