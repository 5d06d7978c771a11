"""A fake monotonic clock for code that takes `clock` and `sleep`: time moves only when the
code sleeps or a test moves it."""

from __future__ import annotations


class FakeClock:
    """Monotonic time that moves only by `sleep` (when `advance_on_sleep`) or by hand."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.advance_on_sleep = True

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.advance_on_sleep:
            self.now += seconds
