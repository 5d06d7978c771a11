"""Riding out a store outage: a run's write waits while the store is unreachable, for a
bounded time (`LATS_STORE_OUTAGE_S`), and lands once when it returns.

A write that failed on a dropped connection may have committed before the reply was lost, so
before it is sent again the store is asked whether it landed (`landed`): the run's history has
one writer, so an event after the last one it knows, with the same payload, is that write.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from app.store.base import StoreUnavailable

logger = logging.getLogger(__name__)
T = TypeVar("T")

FIRST_RETRY_S = 0.25
MAX_RETRY_S = 2.0


class OutageTooLong(StoreUnavailable, code="store_unavailable"):
    """The store stayed unreachable longer than a run's writes may wait for it."""


@dataclass(frozen=True, slots=True)
class StoreOutage:
    """How long a run's writes wait for an unreachable store (`within_s`; 0: not at all),
    retrying with a backoff of `FIRST_RETRY_S` doubling to `MAX_RETRY_S`."""

    within_s: float = 0.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def ride(
        self,
        run_id: str,
        write: Callable[[], Awaitable[T]],
        landed: Callable[[], Awaitable[T | None]],
    ) -> T:
        """`write()`'s result, retried while the store is unreachable; `landed()` says
        whether an attempt whose outcome is unknown was stored after all (its result, or
        None). Raises `OutageTooLong` once `within_s` has passed without the store."""
        try:
            return await write()
        except StoreUnavailable as e:
            first = e
        deadline = self.clock() + self.within_s
        logger.warning(
            "run=%s store unreachable (%s); writes paused for up to %.0fs",
            run_id,
            first,
            self.within_s,
        )
        delay = FIRST_RETRY_S
        while self.clock() < deadline:
            await self.sleep(min(delay, max(0.0, deadline - self.clock())))
            delay = min(delay * 2, MAX_RETRY_S)
            try:
                found = await landed()
                if found is not None:
                    logger.info("run=%s store back; the paused write had landed", run_id)
                    return found
                result = await write()
            except StoreUnavailable:
                continue
            logger.info("run=%s store back; writes resumed", run_id)
            return result
        raise OutageTooLong(
            f"the store was unreachable for more than {self.within_s:.0f}s"
        ) from first


# Writes that do not wait: the first failure is the outage's end (tests, tools).
NO_WAIT = StoreOutage()
