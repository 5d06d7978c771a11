"""Scripted models with injected latency, for long benchmarks.

The delay of a call is drawn from (seed, role, prompt) by a hash, so the same call sleeps the
same time in every run and every strategy, and runs stay comparable side by side.

The models are testkit's `FakeModels`, with one change: their recorder counts calls but
keeps none. The test recorder keeps every call, and since a scripted model's serialised form
(which LangChain computes per model copy, so per structured call) includes its recorder, each
call would cost time and memory in proportion to all calls before it: quadratic in a
benchmark of thousands of calls, and a leak in the memory soak.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
from dataclasses import dataclass

from app.settings import Settings
from app.startup import model_limiters
from bench.scenarios import scenario
from testkit.fakes import FakeCall, FakeModels, Reply
from testkit.policy_models import ThroughPolicy
from testkit.scenario import Scenario


def latency_s(seed: int, role: str, prompt: str, low_s: float, high_s: float) -> float:
    """A delay in [low_s, high_s], uniform over calls, fixed for one (seed, role, prompt)."""
    digest = hashlib.blake2b(f"{seed}\x00{role}\x00{prompt}".encode(), digest_size=8).digest()
    fraction = int.from_bytes(digest, "big") / 2**64
    return low_s + (high_s - low_s) * fraction


@dataclass
class Delayed:
    """A script for `FakeModels`: the scenario's reply, after the call's injected latency."""

    scenario: Scenario
    seed: int
    low_s: float
    high_s: float

    async def __call__(self, call: FakeCall) -> Reply:
        await asyncio.sleep(latency_s(self.seed, call.role, call.prompt, self.low_s, self.high_s))
        return self.scenario.reply(call)


class CallCounter(list[FakeCall]):
    """Stands in for the recorder's list of calls: counts appends, keeps nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.made = 0

    def append(self, call: FakeCall) -> None:
        self.made += 1

    def __repr__(self) -> str:
        return f"CallCounter(made={self.made})"


class CountingModels(FakeModels):
    """`FakeModels` over a `Delayed` scenario whose recorder only counts calls."""

    def __init__(self, script: Delayed) -> None:
        super().__init__(script)
        self.counter = CallCounter()
        self.recorder.calls = self.counter

    @property
    def calls(self) -> int:
        """Model calls made so far (cache hits never reach the model)."""
        return self.counter.made


def served_models(args: argparse.Namespace, settings: Settings) -> ThroughPolicy:
    """The scripted models a benchmark's server process answers with: the scenario and latency
    of its command line, counted, behind the production call policy (its rate shared through
    Redis when the settings name one)."""
    script = Delayed(
        scenario(args.scenario),
        args.latency_seed,
        args.latency_low_ms / 1000,
        args.latency_high_ms / 1000,
    )
    return ThroughPolicy(CountingModels(script), settings, limiters=model_limiters(settings))
