"""The model limiter's client for one attempt: a permit before it goes out, its outcome after.

`attempt_outcome` (what a finished attempt tells the limiter) is pure; `LimiterSlot` does the
acquiring and releasing, and reports the rate in force after each release.
"""

from __future__ import annotations

from calls import observers
from calls.ratelimit import LimiterStats, ModelLimiter, Outcome, Permit
from calls.retry import is_rate_limit, retry_after_s


def attempt_outcome(error: BaseException | None) -> tuple[Outcome, float | None]:
    """What an attempt that ended with `error` (None: it answered) tells the limiter: the
    outcome and, for a 429, the provider's retry delay."""
    if error is None:
        return "ok", None
    if is_rate_limit(error):
        return "rate_limited", retry_after_s(error)
    return "error", None


class LimiterSlot:
    """One attempt's place under `limiter` (None: no limiter, and the slot does nothing)."""

    def __init__(self, limiter: ModelLimiter | None, model_label: str) -> None:
        self.limiter = limiter
        self.model_label = model_label
        self._permit: Permit | None = None

    async def acquire(self) -> None:
        """Wait for a permit."""
        if self.limiter is not None:
            self._permit = await self.limiter.acquire()

    async def release(self, outcome: Outcome, hint_s: float | None) -> None:
        """Give the permit back with the attempt's outcome (nothing if none was granted)."""
        if self._permit is None or self.limiter is None:
            return
        await self.limiter.release(self._permit, outcome, hint_s)
        observers.rate_limit_changed(self.model_label, self.limiter.stats().rate or 0.0)

    def stats(self) -> LimiterStats | None:
        return self.limiter.stats() if self.limiter is not None else None
