"""One door to the runs for the integrations (OpenAI-compatible API, MCP server, metrics).

They use the run manager only through this adapter, with the same public methods the run
routes use, so a change in how runs are managed is a change here and nowhere else.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from agents.params import RunParams
from app.manager import RunManager
from app.queue import RunQueue
from app.store.base import RunRecord, RunStatus


@dataclass(frozen=True)
class RunEvent:
    """One numbered event of a run, decoded."""

    seq: int
    type: str
    data: dict[str, Any]


class Runs:
    """Start, follow, read, list and cancel runs."""

    def __init__(self, manager: RunManager) -> None:
        self._manager = manager

    @property
    def active(self) -> int:
        return self._manager.active

    @property
    def queued(self) -> int:
        return self._manager.queued

    def wrap_queue(self, wrap: Callable[[RunQueue], RunQueue]) -> bool:
        """Put `wrap` around the run queue (metrics watch its depth and waits); False when
        this manager has no in-process queue to watch."""
        queue: RunQueue | None = getattr(self._manager, "queue", None)
        if queue is None:
            return False
        self._manager.queue = wrap(queue)
        return True

    async def submit(self, task: str, params: RunParams) -> RunRecord:
        """Queue a run; raises `QueueFull` like the run API."""
        return await self._manager.submit(task, params)

    async def events(
        self, run_id: str, after: int = 0, heartbeat_s: float = 10.0
    ) -> AsyncIterator[RunEvent | None]:
        """The run's events after `after`, live until the terminal one; None on idle ticks."""
        async for event in self._manager.follow(run_id, after, heartbeat_s):
            if event is None:
                yield None
            else:
                yield RunEvent(event.seq, event.type, json.loads(event.data))

    async def wait(self, run_id: str) -> RunRecord:
        return await self._manager.wait(run_id)

    async def get(self, run_id: str) -> RunRecord:
        """The run's record; raises `RunNotFound`."""
        return await self._manager.get(run_id)

    async def tree(self, record: RunRecord) -> list[dict[str, Any]]:
        return await self._manager.tree(record)

    async def list(
        self, *, status: RunStatus | None = None, limit: int = 20, offset: int = 0
    ) -> tuple[list[RunRecord], int | None]:
        """A page of runs, newest first, and the next page's offset (None on the last)."""
        records = await self._manager.store.list_runs(status=status, limit=limit + 1, offset=offset)
        more = len(records) > limit
        return records[:limit], offset + limit if more else None

    async def cancel(self, run_id: str) -> RunRecord:
        return await self._manager.cancel(run_id)
