"""Leases: this process's worker identity and the heartbeat that keeps its runs.

A worker owns a run while its lease row says so (`owner`, `lease_until`). The heartbeat renews
the leases of the runs that have a task here, at a third of the lease time (a lease without a
task behind it expires and the run is claimed again); a run that is no longer among them
was taken over after the lease expired (this process stalled or lost the database), so it is
stopped here without another write. The same renewal reports cancel requests, a backstop for
cancel signals that never arrived.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from app.runs.live import LiveRuns, Phase
from app.runs.periodic import Periodic
from app.store.base import Lease
from app.store.protocols import RunStore

logger = logging.getLogger(__name__)


def worker_id() -> str:
    """A new identity per process: host, pid and a random part (pids are reused)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@dataclass(slots=True, eq=False)
class LeaseKeeper:
    """Renews the leases of the runs in `lives` until stopped; a run whose lease is gone is
    lost here, and a cancel request found at renewal is handed to `on_cancel`."""

    store: RunStore
    lease: Lease
    lives: LiveRuns
    on_cancel: Callable[[str], object]
    _beat_lock: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)
    _beats: Periodic = field(init=False)

    def __post_init__(self) -> None:
        # A failed beat is retried at the next; until the lease expires nothing is lost.
        self._beats = Periodic("lats-lease", self.lease.renew_every_s, self.beat, self._beat_failed)

    def start(self) -> None:
        self._beats.start()

    async def stop(self) -> None:
        await self._beats.stop()

    def _beat_failed(self, e: Exception) -> None:
        logger.warning("owner=%s lease renewal failed (%s)", self.lease.owner, type(e).__name__)

    async def beat(self) -> None:
        """Renew now; stop runs whose lease is gone; pass on cancel requests."""
        async with self._beat_lock:
            # Runs registered before the renewal: one created after it is legitimately absent.
            before = [live for live in self.lives if live.holds_lease]
            held_ids = [lv.run_id for lv in before]
            renewed = await self.store.leases.renew(self.lease.owner, self.lease.ttl_s, held_ids)
            held = {h.run_id: h for h in renewed}
        for live in before:
            if not live.holds_lease or live.phase is Phase.DRAINING:
                continue
            if live.run_id not in held:
                logger.warning("run=%s lease lost to another worker; stopping here", live.run_id)
                live.lose()
            elif held[live.run_id].cancel_requested:
                self.on_cancel(live.run_id)
