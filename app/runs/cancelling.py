"""Cancelling a run from any process.

Only the run's owner writes its end. A cancel for a run this process owns cancels its task; for
any other run the request is stored as a flag (so it is never lost) and signalled to the owner,
whose listener cancels the task. A run nobody owns (still waiting for a worker, or its worker
died) is claimed here and ended here, as its new owner.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from agents.errors import RunNotFound
from app.runs.execution import RunDriver
from app.runs.following import Broken, Follower
from app.runs.live import LiveRuns
from app.runs.signals import LocalSignals
from app.store.base import FINISHED, Lease
from app.store.protocols import RunStore

logger = logging.getLogger(__name__)


@dataclass(slots=True, kw_only=True, eq=False)
class Canceller:
    """Stops runs wherever they execute; a run nobody holds is claimed under `lease`."""

    store: RunStore
    lease: Lease
    lives: LiveRuns
    signals: LocalSignals
    driver: RunDriver
    follower: Follower

    async def cancel(self, run_id: str, wait_s: float) -> None:
        """Cancel `run_id` and wait (up to `wait_s`) until its end is stored."""
        record = await self.store.runs.get(run_id)
        if record is None:
            raise RunNotFound(f"no run {run_id}")
        if record.status in FINISHED:
            return
        live = self.lives.get(run_id)
        if live is not None and self.lives.cancel(run_id):
            await live.wait_closed()
            # A run that reached its wait for an answer before the cancel landed is stored
            # waiting, with no owner: ended below like any run nobody holds.
            record = await self.store.runs.get(run_id)
            if record is None or record.status in FINISHED or record.awaiting is None:
                return
        await self.store.leases.request_cancel(run_id)
        await self.signals.publish_cancel(run_id)
        claimed = await self.store.leases.claim(run_id, self.lease.owner, self.lease.ttl_s)
        if claimed is not None:
            logger.info("run=%s had no live owner; ended here as cancelled", run_id)
            orphan = self.lives.detached(run_id)
            await self.driver.end_cancelled(orphan, self.driver.writer(orphan))
            return
        # The owner ends it; its terminal event tells when.
        last = await self.store.events.last_seq(run_id)
        try:
            async with asyncio.timeout(wait_s):
                async for item in self.follower.follow(run_id, last):
                    if isinstance(item, Broken) and item.cause is not None:
                        raise item.cause
        except TimeoutError:
            logger.warning("run=%s cancel requested; its owner has not ended it yet", run_id)
