"""A run's write riding out a store outage: retried until the store returns, found instead of
repeated when it had landed, given up after the bounded wait."""

from __future__ import annotations

import pytest

from app.store.base import StoreUnavailable
from app.store.outage import NO_WAIT, OutageTooLong, StoreOutage
from testkit.clock import FakeClock


class FlakyStore:
    """Unreachable for its first `down` calls (writes and look-ups alike); the first write
    may still have committed before its reply was lost."""

    def __init__(self, down: int, first_landed: bool = False) -> None:
        self.down = down
        self.first_landed = first_landed
        self.calls = 0
        self.writes = 0
        self.stored: list[int] = []

    def _call(self) -> None:
        self.calls += 1
        if self.calls <= self.down:
            raise StoreUnavailable("the database is unreachable")

    async def write(self) -> int:
        self.writes += 1
        if self.writes == 1 and self.first_landed:
            self.stored.append(1)  # committed, then the reply was lost
        self._call()
        self.stored.append(len(self.stored) + 1)
        return self.stored[-1]

    async def landed(self) -> int | None:
        self._call()
        return self.stored[-1] if self.stored else None


async def test_a_write_is_retried_until_the_store_returns() -> None:
    clock = FakeClock()
    store = FlakyStore(down=3)
    outage = StoreOutage(30, clock=clock, sleep=clock.sleep)

    assert await outage.ride("r1", store.write, store.landed) == 1
    assert store.stored == [1]
    assert store.writes == 2  # the first, and the one after the store answered a look-up
    assert clock.sleeps == [0.25, 0.5, 1.0]


async def test_a_write_that_landed_before_its_reply_was_lost_is_not_written_again() -> None:
    clock = FakeClock()
    store = FlakyStore(down=1, first_landed=True)
    outage = StoreOutage(30, clock=clock, sleep=clock.sleep)

    assert await outage.ride("r1", store.write, store.landed) == 1
    assert store.stored == [1]
    assert store.writes == 1


async def test_a_store_away_longer_than_the_wait_ends_it() -> None:
    clock = FakeClock()
    store = FlakyStore(down=1000)
    outage = StoreOutage(10, clock=clock, sleep=clock.sleep)

    with pytest.raises(OutageTooLong):
        await outage.ride("r1", store.write, store.landed)
    assert clock.now == pytest.approx(1010)
    assert max(clock.sleeps) == 2.0
    assert store.stored == []


async def test_no_wait_gives_up_at_the_first_failure() -> None:
    store = FlakyStore(down=1)

    with pytest.raises(OutageTooLong):
        await NO_WAIT.ride("r1", store.write, store.landed)
    assert store.writes == 1
