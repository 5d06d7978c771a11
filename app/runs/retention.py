"""Retention: finished runs older than `run_retention_days` are deleted with their events.

Workers sweep (an API-only process deletes nothing): at start-up and then hourly, a batch at a
time, so a large backlog never holds the store's writes up for long. Several workers sweeping
at once is harmless: each run is deleted once, the others find nothing. Unfinished runs are
never touched, however old.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from app.runs.periodic import Periodic
from app.store.protocols import RunStore

logger = logging.getLogger(__name__)

SWEEP_S = 3600.0
BATCH = 500


class Retention:
    """The sweeper of one worker process."""

    def __init__(self, store: RunStore, days: float, *, every_s: float = SWEEP_S) -> None:
        self.store = store
        self.days = days
        self._sweeps = Periodic("lats-retention", every_s, self.sweep, self._sweep_failed)

    async def sweep(self, now: datetime | None = None) -> int:
        """Delete the finished runs older than the retention; how many."""
        cutoff = (now or datetime.now(UTC)) - timedelta(days=self.days)
        total = 0
        while True:
            deleted = await self.store.runs.delete_ended_before(cutoff, BATCH)
            total += deleted
            if deleted < BATCH:
                break
        if total:
            logger.info("retention: %d runs that ended before %s deleted", total, cutoff)
        return total

    async def start(self) -> None:
        """The first sweep (done before this returns), then one every `every_s`."""
        try:
            await self.sweep()
        except Exception as e:
            self._sweep_failed(e)
        self._sweeps.start()

    async def stop(self) -> None:
        await self._sweeps.stop()

    def _sweep_failed(self, e: Exception) -> None:
        logger.warning(
            "retention sweep failed (%s); next in %gs", type(e).__name__, self._sweeps.every_s
        )
