"""Live event buffers: the events of a run executing in this process, for followers to tail.

The store is the record; a buffer only saves local followers a database read per event. A run
that executes elsewhere, or has ended, is read from the store.
"""

from __future__ import annotations

import asyncio

from agents.events import Event
from app.store.base import TERMINAL, StoredEvent

__all__ = ["TERMINAL", "LiveRun"]


class LiveRun:
    """One run owned by this process: its events in order from seq 1, its task, and a
    wake-up for followers."""

    def __init__(self, run_id: str, history: list[StoredEvent]) -> None:
        self.run_id = run_id
        self.events: list[StoredEvent] = list(history)
        self.finished = asyncio.Event()
        self.draining = False
        self.cancelling = False  # a cancel was delivered to the task (once is enough)
        self.lost = False  # another worker took the lease: write nothing more
        self.ended = False  # the terminal event is stored
        self.terminal: Event | None = None  # held back until `finish` stores it with the status
        self.lock = asyncio.Lock()  # one writer at a time keeps seq order == store order
        self._changed = asyncio.Condition()
        self.task: asyncio.Task[None] | None = None

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq if self.events else 0

    @property
    def terminal_sent(self) -> bool:
        return any(e.type in TERMINAL for e in self.events[-1:])

    def lose(self) -> None:
        """The lease is gone: stop the run here without writing anything more."""
        self.lost = True
        task = self.task
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()

    async def push(self, event: StoredEvent) -> None:
        self.events.append(event)
        async with self._changed:
            self._changed.notify_all()

    async def close(self) -> None:
        self.finished.set()
        async with self._changed:
            self._changed.notify_all()

    async def wait_after(self, seq: int, within_s: float) -> list[StoredEvent]:
        """Events with seq > `seq`; waits up to `within_s` for one when there are none yet.
        Returns [] on timeout or when the run ended with nothing more."""
        if self.last_seq <= seq and not self.finished.is_set():
            async with self._changed:
                try:
                    await asyncio.wait_for(
                        self._changed.wait_for(
                            lambda: self.last_seq > seq or self.finished.is_set()
                        ),
                        timeout=within_s,
                    )
                except TimeoutError:
                    return []
        first = self.events[0].seq if self.events else 1
        # Seqs run without gaps, so the event with seq n sits at index n - first.
        return self.events[max(0, seq - first + 1) :]
