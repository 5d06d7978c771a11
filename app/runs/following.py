"""Following a run: replay its stored events, then tail it live wherever it executes.

Followers only read. A run this process owns is tailed from its live buffer; any other run is
read from the store each time a signal says it has news (or a heartbeat interval passes, which
also covers a lost signal), a page of `PAGE` events at a time, so that a reader's memory does
not grow with the history it replays.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

from agents.events import TERMINAL_TYPES
from app.runs.live import LiveRun, LiveRuns
from app.runs.signals import LocalSignals
from app.store.base import FINISHED, StoredEvent
from app.store.protocols import RunStore

# A reader holds at most this many stored events at a time (a long history is read in pages).
PAGE = 16


@dataclass(frozen=True, slots=True, eq=False)
class Follower:
    """Streams of run events for any number of readers; each yields None when `heartbeat_s`
    passes without an event (time for a heartbeat)."""

    store: RunStore
    signals: LocalSignals
    lives: LiveRuns
    heartbeat_s: float

    async def follow(self, run_id: str, after: int) -> AsyncIterator[StoredEvent | None]:
        """Events after `after` up to the terminal one, None on idle heartbeats."""
        heartbeat_s = self.heartbeat_s
        seq = after
        while True:
            live = self.lives.get(run_id)
            if live is not None:
                async for event in self._tail(live, seq, heartbeat_s):
                    if event is not None:
                        seq = event.seq
                        if event.type in TERMINAL_TYPES:
                            yield event
                            return
                    yield event
                continue  # the run left this process (drained, lost): go on from the store
            with self.signals.watch(run_id) as news:
                news.clear()
                events = await self.store.events.after(run_id, seq, limit=PAGE)
                for event in events:
                    seq = event.seq
                    yield event
                    if event.type in TERMINAL_TYPES:
                        return
                if events:
                    continue
                record = await self.store.runs.get(run_id)
                if record is None:
                    return
                if record.status in FINISHED:
                    # The end may have been stored between the two reads: read on to it.
                    while page := await self.store.events.after(run_id, seq, limit=PAGE):
                        for event in page:
                            seq = event.seq
                            yield event
                            if event.type in TERMINAL_TYPES:
                                return
                    return
                if run_id in self.lives:
                    continue  # it just started here: tail the buffer
                if not await _wait(news, heartbeat_s):
                    yield None

    async def _tail(
        self, live: LiveRun, after: int, heartbeat_s: float
    ) -> AsyncIterator[StoredEvent | None]:
        seq = after
        while True:
            batch = await live.wait_after(seq, heartbeat_s)
            if not batch:
                if live.finished.is_set() and live.last_seq <= seq:
                    return
                yield None
                continue
            for event in batch:
                seq = event.seq
                yield event
                if event.type in TERMINAL_TYPES:
                    return


async def _wait(flag: asyncio.Event, within_s: float) -> bool:
    try:
        async with asyncio.timeout(within_s):
            await flag.wait()
    except TimeoutError:
        return False
    return True
