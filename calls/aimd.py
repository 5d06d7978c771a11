"""The arithmetic of the adaptive model rate, pure (no clock, no I/O): a GCRA token bucket
whose rate follows AIMD feedback. The in-process limiter runs it under a lock; the Redis
limiter runs the same rules in a Lua script (`app.backends.model_limiter_redis`).

Rules (times in seconds, rates in requests per second):

- No adaptive rate at first (`rate is None`): requests go out as fast as the in-flight cap lets
  them, unless a ceiling (`LATS_MODEL_RPS`) is set.
- A grant reserves the next slot of the effective rate `min(rate, ceiling)`, never before
  `cooldown_until`. Bursts of up to `burst` are allowed only while the ceiling is what holds;
  an adaptive rate, being the provider's limit, is paced strictly.
- Every cut starts a new epoch. A 429 (rate limited) pauses everyone until `now + retry_after`
  and, if the request's slot was reserved in the current epoch, cuts the rate to
  `max(floor, beta * current)`, where `current` is the rate in force or, before any cut, the
  rate actually observed. A 429 of a request reserved before the last cut says nothing new
  (its rate is already cut): one cut per round, as TCP does per window.
- A cut also gives up the slots reserved at the old rate: the schedule restarts after the
  pause, and a request still waiting for an old-epoch slot reserves again at the new rate
  (the limiters do so when they wake), so a cut takes effect at once, not a queue later.
- Each success adds `growth * base / rate`, where `base` is the rate after the last cut: the
  rate climbs back linearly at `growth * base` requests/s per second, whatever the quota's
  scale (a free tier of 10 a minute and a paid one of 1000 a minute recover in the same time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_BETA = 0.7
DEFAULT_GROWTH = 0.1
DEFAULT_FLOOR = 1.0 / 60.0  # one request a minute: below any real quota
DEFAULT_RETRY_AFTER_S = 1.0  # a 429 that says nothing about when to come back
WINDOW_S = 1.0  # the span over which the observed request rate is measured


@dataclass
class AimdState:
    """One model's shared rate state; see the module docstring for the rules."""

    ceiling: float | None = None
    burst: int = 1
    beta: float = DEFAULT_BETA
    growth: float = DEFAULT_GROWTH
    floor: float = DEFAULT_FLOOR
    rate: float | None = None
    base: float = 0.0
    tat: float = -math.inf  # theoretical arrival time of the next request (GCRA)
    cooldown_until: float = -math.inf
    epoch: int = 0  # bumped by every cut; a slot belongs to the epoch it was reserved in
    window_start: float = -math.inf
    window_count: int = 0
    observed_prev: float = 0.0
    cuts: int = 0
    grants: int = 0
    rate_limited: int = 0

    def effective_rate(self) -> float | None:
        """The rate in force (None: no limit but the in-flight cap)."""
        rates = [r for r in (self.rate, self.ceiling) if r is not None and r > 0]
        return min(rates) if rates else None

    def observed(self, now: float) -> float:
        """Requests per second granted lately (the last full window, or the current one)."""
        current = self.window_count / max(now - self.window_start, WINDOW_S)
        return max(self.observed_prev, current)

    def reserve(self, now: float, *, again: bool = False) -> float:
        """Reserve the next slot; returns when (>= now) the request may go out. `again`: the
        request's earlier slot was given up by a cut (it is not counted twice)."""
        start = max(now, self.cooldown_until)
        rate = self.effective_rate()
        if rate is not None:
            interval = 1.0 / rate
            adaptive = self.rate is not None and rate == self.rate
            burst = 1 if adaptive else max(1, self.burst)
            start = max(start, self.tat - (burst - 1) * interval)
            self.tat = max(self.tat, start) + interval
        if again:
            return start
        if start - self.window_start >= WINDOW_S:
            if start - self.window_start < 2 * WINDOW_S and self.window_count:
                self.observed_prev = self.window_count / (start - self.window_start)
            else:
                self.observed_prev = 0.0
            self.window_start = start
            self.window_count = 0
        self.window_count += 1
        self.grants += 1
        return start

    def on_rate_limited(self, now: float, epoch: int, retry_after_s: float | None) -> bool:
        """A request whose slot was reserved in `epoch` got a 429: pause, and cut once per
        round. Returns True when the rate was cut."""
        self.rate_limited += 1
        pause = DEFAULT_RETRY_AFTER_S if retry_after_s is None else max(0.0, retry_after_s)
        self.cooldown_until = max(self.cooldown_until, now + pause)
        if epoch != self.epoch:
            return False  # reserved at the old rate; that rate is already cut
        current = self.effective_rate()
        if current is None:
            current = self.observed(now)
        self.rate = max(self.floor, self.beta * current)
        if self.ceiling is not None:
            self.rate = min(self.rate, self.ceiling)
        self.base = self.rate
        self.epoch += 1
        self.tat = max(now, self.cooldown_until)
        self.cuts += 1
        return True

    def on_success(self) -> None:
        """A request went through: grow the adaptive rate additively."""
        if self.rate is None:
            return
        self.rate += self.growth * self.base / self.rate
        if self.ceiling is not None:
            self.rate = min(self.rate, self.ceiling)


def parse_duration_s(value: object) -> float | None:
    """A protobuf JSON duration ("27s", "0.419s") or a number of seconds; None if neither."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if value >= 0 and math.isfinite(value) else None
    if isinstance(value, dict):  # {"seconds": 12, "nanos": 500000000}
        seconds = value.get("seconds", 0)
        nanos = value.get("nanos", 0)
        try:
            total = float(seconds) + float(nanos) / 1e9
        except (TypeError, ValueError):
            return None
        return total if total >= 0 else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.endswith("s"):
        text = text[:-1]
    try:
        seconds = float(text)
    except ValueError:
        return None
    return seconds if seconds >= 0 and math.isfinite(seconds) else None
