"""The runs this process owns, live: each one's lifecycle as a state machine, its events for
followers to tail, and the one registry that holds them.

A live run moves through named phases; only the transitions below are legal, and an illegal
one raises (it is a bug, not a state to recover from):

    queued ──► running ──► ended ──► closed
      │           │          ▲
      │           ├─► cancelling ─┤
      │           ├─► draining ───┼──► closed   (given back to the store, nothing ended here)
      │           ├─► paused ─────┼──► closed   (waits in the store for a caller's answer)
      └───────────┴─► lost ───────┴──► closed   (another worker holds the lease: write nothing)

`queued` waits for an execution slot; `cancelling` and `draining` have delivered a stop to the
task; `paused` means the run's wait for an answer (its plan's approval) is stored, with the
event it stopped on, and its lease is freed (a cancelling or draining run may still store the
pause it reached just before the stop landed); `ended` means the terminal event is stored;
`closed` means the task is over and the run left the registry. A cancel wins over a drain (a
cancelling run is not given back), and a lost lease wins over everything not yet ended.

The store is the record; the event buffer only saves local followers a database read per event.
A run that executes elsewhere, or has ended, is read from the store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from enum import StrEnum

from app.store.base import StoredEvent

logger = logging.getLogger(__name__)


class Phase(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"
    DRAINING = "draining"
    LOST = "lost"
    PAUSED = "paused"
    ENDED = "ended"
    CLOSED = "closed"


_NEXT: dict[Phase, frozenset[Phase]] = {
    Phase.QUEUED: frozenset(
        {Phase.RUNNING, Phase.CANCELLING, Phase.DRAINING, Phase.LOST, Phase.ENDED, Phase.CLOSED}
    ),
    Phase.RUNNING: frozenset(
        {Phase.CANCELLING, Phase.DRAINING, Phase.LOST, Phase.PAUSED, Phase.ENDED, Phase.CLOSED}
    ),
    Phase.CANCELLING: frozenset({Phase.LOST, Phase.PAUSED, Phase.ENDED, Phase.CLOSED}),
    # A drained task may still store the end (or pause) it reached just before the stop landed.
    Phase.DRAINING: frozenset({Phase.LOST, Phase.PAUSED, Phase.ENDED, Phase.CLOSED}),
    Phase.LOST: frozenset({Phase.CLOSED}),
    Phase.PAUSED: frozenset({Phase.CLOSED}),
    Phase.ENDED: frozenset({Phase.CLOSED}),
    Phase.CLOSED: frozenset(),
}


class IllegalTransition(RuntimeError):
    """A live run was asked to move where its lifecycle does not go."""


class LiveRun:
    """One run owned by this process: its phase, its events in order from seq 1, its task,
    and a wake-up for followers. Only the registry (`LiveRuns`) makes one and closes it."""

    def __init__(self, run_id: str, history: list[StoredEvent]) -> None:
        self.run_id = run_id
        self.events: list[StoredEvent] = list(history)
        self.finished = asyncio.Event()
        self.lock = asyncio.Lock()  # one writer at a time keeps seq order == store order
        self._phase = Phase.QUEUED
        self.closed_from: Phase | None = None  # the phase the run was in when its task ended
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    # -- the lifecycle -------------------------------------------------------------------------
    @property
    def phase(self) -> Phase:
        return self._phase

    def _move(self, to: Phase) -> None:
        if to not in _NEXT[self._phase]:
            raise IllegalTransition(f"run={self.run_id}: {self._phase} -> {to}")
        logger.debug("run=%s %s -> %s", self.run_id, self._phase, to)
        self._phase = to

    @property
    def may_write(self) -> bool:
        """Whether this process may still append to the run's history."""
        return self._phase not in (Phase.LOST, Phase.PAUSED, Phase.ENDED, Phase.CLOSED)

    @property
    def holds_lease(self) -> bool:
        """Whether the lease must still be renewed (the run has neither ended, paused nor been
        lost)."""
        return self._phase not in (Phase.LOST, Phase.PAUSED, Phase.ENDED, Phase.CLOSED)

    def start(self) -> None:
        """The run got its execution slot. A stop delivered while it waited (cancel, drain,
        lost lease) has already moved it on, and wins: its cancellation lands at the task's
        next await."""
        if self._phase is Phase.QUEUED:
            self._move(Phase.RUNNING)

    def cancel(self) -> bool:
        """Deliver a cancel to the task (once: signals and lease renewals may repeat it).
        False when there is nothing here to cancel (draining, lost, ended)."""
        if self._phase is Phase.CANCELLING:
            return True
        if self._phase not in (Phase.QUEUED, Phase.RUNNING) or not self._stop_task():
            return False
        self._move(Phase.CANCELLING)
        return True

    def drain(self) -> None:
        """A shutdown: stop the task; the run is given back to the store, not ended. A run
        already cancelling, lost or ended is left to finish that."""
        if self._phase in (Phase.QUEUED, Phase.RUNNING):
            self._move(Phase.DRAINING)
            self._stop_task()

    def lose(self) -> None:
        """The lease is gone: stop the run here without writing anything more."""
        if self._phase in (Phase.LOST, Phase.PAUSED, Phase.ENDED, Phase.CLOSED):
            return
        self._move(Phase.LOST)
        self._stop_task()

    def end(self) -> None:
        """The terminal event is stored (the writer calls it inside its lock)."""
        self._move(Phase.ENDED)

    def pause(self) -> None:
        """The run's wait for an answer is stored, its lease freed (the writer calls it
        inside its lock)."""
        self._move(Phase.PAUSED)

    def _stop_task(self) -> bool:
        task = self._task
        if task is None or task.done() or task is asyncio.current_task():
            return False
        task.cancel()
        return True

    # -- events --------------------------------------------------------------------------------
    @property
    def last_seq(self) -> int:
        return self.events[-1].seq if self.events else 0

    async def push(self, *events: StoredEvent) -> None:
        self.events.extend(events)
        async with self._changed:
            self._changed.notify_all()

    async def _close(self) -> None:
        self.closed_from = self._phase
        self._move(Phase.CLOSED)
        self.finished.set()
        async with self._changed:
            self._changed.notify_all()

    async def wait_after(self, seq: int, within_s: float) -> list[StoredEvent]:
        """Events with seq > `seq`; waits up to `within_s` for one when there are none yet.
        Returns [] on timeout or when the run ended with nothing more."""
        if self.last_seq <= seq and not self.finished.is_set():
            async with self._changed:
                try:
                    async with asyncio.timeout(within_s):
                        await self._changed.wait_for(
                            lambda: self.last_seq > seq or self.finished.is_set()
                        )
                except TimeoutError:
                    return []
        first = self.events[0].seq if self.events else 1
        # Seqs run without gaps, so the event with seq n sits at index n - first.
        return self.events[max(0, seq - first + 1) :]

    async def wait_closed(self) -> None:
        """Until the run's task is over (whatever the outcome)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


Body = Callable[[LiveRun], Awaitable[None]]
"""A live run's task body; it moves the run's phase as it goes."""


class LiveRuns:
    """The registry of the runs this process owns: the one owner of their live state. Others
    look runs up, ask for transitions, or wait; only `launch` makes a live run, and only its
    task's end closes and removes it."""

    def __init__(self) -> None:
        self._runs: dict[str, LiveRun] = {}

    def get(self, run_id: str) -> LiveRun | None:
        return self._runs.get(run_id)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._runs

    def __iter__(self) -> Iterator[LiveRun]:
        return iter(list(self._runs.values()))

    def __len__(self) -> int:
        return len(self._runs)

    def launch(
        self,
        run_id: str,
        history: list[StoredEvent],
        body: Body,
        after: Callable[[LiveRun], None] | None = None,
    ) -> LiveRun:
        """Register a run and start its task; when the task is over the run is closed and
        removed, then `after` runs (it may launch the same run again)."""
        if run_id in self._runs:
            raise IllegalTransition(f"run={run_id} is already live here")
        live = LiveRun(run_id, history)
        self._runs[run_id] = live

        async def task() -> None:
            try:
                await body(live)
            finally:
                self._runs.pop(run_id, None)
                await live._close()
                if after is not None:
                    after(live)

        live._task = asyncio.create_task(task(), name=f"lats-run-{run_id}")
        return live

    def detached(self, run_id: str, history: Sequence[StoredEvent] = ()) -> LiveRun:
        """A live run for a one-off write by this process (ending a run nobody held), never
        registered and never run."""
        return LiveRun(run_id, list(history))

    def cancel(self, run_id: str) -> bool:
        """Cancel the task of a run this process owns; False when it owns no such run."""
        live = self._runs.get(run_id)
        if live is None:
            return False
        delivered = live.cancel()
        if delivered:
            logger.info("run=%s cancelling", run_id)
        return delivered

    async def drain(self) -> int:
        """Stop every run held here for a shutdown and wait for their tasks; how many."""
        lives = list(self._runs.values())
        for live in lives:
            live.drain()
        await asyncio.gather(*(live.wait_closed() for live in lives))
        return len(lives)
