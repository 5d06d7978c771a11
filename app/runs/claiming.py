"""Claiming: a worker takes runs that no live worker holds.

Those are runs queued by an API-only process, runs given back by a draining process, and runs
whose owner stopped renewing its lease (it died). A worker claims only while it has a free
execution slot, so runs wait in the store for whichever worker frees up first. It claims when
signalled that a run is waiting and, to take over expired leases, on a sweep every third of
the lease time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from app.runs.queue import RunQueue
from app.runs.signals import LocalSignals
from app.store.base import Lease, RunRecord
from app.store.protocols import RunStore

logger = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class Claimer:
    """The worker's intake loop: each run claimed under `lease` is handed to `adopt`."""

    store: RunStore
    lease: Lease
    queue: RunQueue
    signals: LocalSignals
    adopt: Callable[[RunRecord], Awaitable[None]]
    _task: asyncio.Task[None] | None = field(init=False, default=None)

    async def start(self) -> None:
        """Claim what is claimable now (start-up resumption), then keep claiming."""
        await self.claim_free()
        self._task = asyncio.create_task(self._loop(), name="lats-claim")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def slot_freed(self) -> None:
        """A local run ended: maybe a waiting run can come here."""
        self.signals.run_queued()

    async def claim_free(self) -> int:
        """Claim runs while there is room, as many at a time as there is room for (fewer
        found than asked for: none is left); how many."""
        owner = self.lease.owner
        claimed = 0
        while (room := self.queue.room) > 0:
            records = await self.store.leases.claim_some(owner, self.lease.ttl_s, room)
            for record in records:
                logger.info("run=%s claimed by owner=%s (was %s)", record.id, owner, record.status)
                await self.adopt(record)
            claimed += len(records)
            if len(records) < room:
                break
        return claimed

    async def _loop(self) -> None:
        while True:
            await self.signals.wait_queued(self.lease.renew_every_s)
            try:
                await self.claim_free()
            except Exception as e:
                logger.warning(
                    "owner=%s claiming failed (%s); retrying", self.lease.owner, type(e).__name__
                )
