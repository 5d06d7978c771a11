"""The arithmetic of the adaptive in-flight cap, pure (no clock, no I/O): how many model calls
one process lets out at once, learned from the provider's answers like the rate
(`calls/aimd.py`).

Rules (latencies in seconds):

- The cap starts at `initial` and stays within [`floor`, `ceiling`]; `ceiling` is
  `LATS_MODEL_MAX_IN_FLIGHT`.
- Latency is followed by two moving averages over the answers: a short one (the last ten or
  so) and a long one (the last hundred or so). Calls of every kind (a one-word vote, a long
  answer) are in both alike, so their ratio is about 1 unless the provider slows down as the
  load grows (a gradient, as in Netflix's concurrency limits): that is what the cap reads,
  never one call's latency, which mostly says how long its answer was.
- An answer to a call sent while the cap was full grows the cap by 1/cap: one more call per
  round of `cap` answers, as TCP's congestion window grows. A cap nobody fills does not grow,
  nor does an answer to a call sent before the last cut.
- A 429 cuts the cap to `beta` * cap; latency rising (after `warmup` answers, the short
  average over `tolerance` * the long one, and over it by `MIN_RISE_S` at least) cuts it to
  `slow_beta` * cap. The absolute rise keeps jitter of calls that take microseconds (a
  cache, a scripted model) from cutting the cap: it says nothing about a provider's load,
  and it made a scripted, seeded search depend on the clock. At most one cut per round: an
  answer to a call sent before the last cut says nothing new.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_INITIAL = 16
BETA = 0.7  # after a 429
SLOW_BETA = 0.9  # after latency rose: the short average over `tolerance` * the long one
TOLERANCE = 2.0
SHORT = 0.1  # the short average's weight of each answer
LONG = 0.01  # the long one's
WARMUP = 20  # answers before latency may cut the cap
MIN_RISE_S = 0.05  # the least rise of the short average over the long one that cuts the cap


@dataclass
class ConcurrencyLimit:
    """One process's cap on one model's calls in flight; see the module docstring."""

    ceiling: int
    initial: int = DEFAULT_INITIAL
    floor: int = 1
    beta: float = BETA
    slow_beta: float = SLOW_BETA
    tolerance: float = TOLERANCE
    cap: float = 0.0
    short: float = 0.0  # seconds, moving averages of the answers' latencies
    long: float = 0.0
    answers: int = 0
    round: int = 0  # bumped by every cut; a call belongs to the round it was sent in
    cuts: int = 0

    def __post_init__(self) -> None:
        self.ceiling = max(1, self.ceiling)
        self.floor = max(1, min(self.floor, self.ceiling))
        if not self.cap:
            self.cap = float(max(self.floor, min(self.initial, self.ceiling)))

    @property
    def limit(self) -> int:
        """Calls that may be in flight now."""
        return max(self.floor, min(self.ceiling, math.floor(self.cap)))

    def on_ok(self, latency_s: float, sent_in_round: int, was_full: bool) -> None:
        """A call sent in round `sent_in_round` (when the cap was full or not) answered."""
        self.answers += 1
        if self.answers == 1:
            self.short = self.long = latency_s
        else:
            self.short += SHORT * (latency_s - self.short)
            self.long += LONG * (latency_s - self.long)
        if self.answers > WARMUP and self._slowing():
            self._cut(self.slow_beta, sent_in_round)
        elif was_full and sent_in_round == self.round:
            self.cap = min(float(self.ceiling), self.cap + 1.0 / self.cap)

    def _slowing(self) -> bool:
        return self.short > self.tolerance * self.long and self.short - self.long >= MIN_RISE_S

    def on_rate_limited(self, sent_in_round: int) -> None:
        """A call sent in round `sent_in_round` was answered 429."""
        self._cut(self.beta, sent_in_round)

    def _cut(self, factor: float, sent_in_round: int) -> None:
        if sent_in_round != self.round:
            return  # sent at the old cap; that cap is already cut
        self.cap = max(float(self.floor), self.cap * factor)
        self.round += 1
        self.cuts += 1
