"""Following a run: replay its stored events, then tail it live wherever it executes, as one
stream of typed items that every reader formats its own way (the run API's SSE, the Agent
Server's stream parts, the OpenAI chunks, MCP progress).

Followers only read. A run this process owns is tailed from its live buffer; any other run is
read from the store each time a signal says it has news (or a heartbeat interval passes, which
also covers a lost signal), a page of `PAGE` events at a time, so that a reader's memory does
not grow with the history it replays.

A follow yields, in order: `Step` for each event that neither pauses nor ends the run,
`Heartbeat` when `heartbeat_s` passes without one, `Paused` when the run stops to wait for its
plan's answer (the follow goes on: the run resumes once answered), and last, exactly once, its
end: `Ended` with the run's terminal event (done, error, cancelled), or `Broken` when the
stream cannot follow the run to its end (the run was deleted while followed, or its events
could not be read).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Literal

from agents.events import PAUSE_TYPES, TERMINAL_TYPES
from app.runs.live import LiveRuns
from app.runs.signals import LocalSignals
from app.store.base import FINISHED, StoredEvent
from app.store.protocols import RunStore

logger = logging.getLogger(__name__)

# A reader holds at most this many stored events at a time (a long history is read in pages).
PAGE = 16


@dataclass(frozen=True, slots=True)
class Step:
    """A stored event that neither pauses nor ends the run."""

    event: StoredEvent


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """`heartbeat_s` passed without an event: time to show the client the stream is alive."""


@dataclass(frozen=True, slots=True)
class Paused:
    """The run stopped to wait for its plan's answer: its `interrupt` event, or None when the
    follow began past that event (the run was found waiting). Told once per wait."""

    event: StoredEvent | None


@dataclass(frozen=True, slots=True)
class Ended:
    """The run's terminal event (`done`, `error` or `cancelled`): the last item."""

    event: StoredEvent


@dataclass(frozen=True, slots=True)
class Broken:
    """The stream cannot follow the run to its end: the last item. `code` and `message` are
    safe to show a client; `cause` is the store's error when its events could not be read."""

    code: Literal["run_deleted", "stream_failed"]
    message: str
    cause: Exception | None = None


RunItem = Step | Heartbeat | Paused | Ended | Broken
End = Ended | Broken

HEARTBEAT = Heartbeat()
DELETED = Broken("run_deleted", "the run was deleted while it was followed")


def item_of(event: StoredEvent) -> Step | Paused | Ended:
    """The item a stored event is to a reader."""
    if event.type in TERMINAL_TYPES:
        return Ended(event)
    if event.type in PAUSE_TYPES:
        return Paused(event)
    return Step(event)


@dataclass(frozen=True, slots=True, eq=False)
class Follower:
    """Streams of run items for any number of readers."""

    store: RunStore
    signals: LocalSignals
    lives: LiveRuns
    heartbeat_s: float

    async def follow(self, run_id: str, after: int) -> AsyncIterator[RunItem]:
        """The run's items after event `after`, live until its end (the last item; nothing at
        all when `after` is a finished run's last event: its reader has the end already), or
        `Broken` when the run is gone or its events cannot be read."""
        told = False  # a pause was told and no event has come since
        try:
            async with contextlib.aclosing(self._news(run_id, after)) as news:
                async for got in news:
                    if isinstance(got, Heartbeat | Broken):
                        yield got
                        continue
                    if isinstance(got, Paused):  # found waiting, past its interrupt
                        if not told:
                            told = True
                            yield got
                        continue
                    for event in got:
                        item = item_of(event)
                        told = isinstance(item, Paused)
                        yield item
                        if isinstance(item, Ended):
                            return
        except Exception as e:
            logger.exception("run=%s: its events could not be read", run_id)
            yield Broken("stream_failed", "the run's events could not be read", e)

    async def _news(
        self, run_id: str, after: int
    ) -> AsyncGenerator[list[StoredEvent] | Heartbeat | Paused | Broken, None]:
        """The run's events after `after` in batches, in order; a heartbeat when
        `heartbeat_s` passes without one, `Paused(None)` whenever the run is found waiting for
        an answer with nothing new to read. Over once a finished run is read to the end of its
        log, or after `DELETED` when the run is gone."""
        seq = after
        finished = False
        while True:
            live = self.lives.get(run_id)
            if live is not None:
                batch = await live.wait_after(seq, self.heartbeat_s)
                if batch:
                    seq = batch[-1].seq
                    yield batch
                elif not live.finished.is_set():
                    yield HEARTBEAT
                # else the run left this process (ended, drained, lost): read on from the store
                continue
            with self.signals.watch(run_id) as news:
                news.clear()
                batch = await self.store.events.after(run_id, seq, limit=PAGE)
                if batch:
                    seq = batch[-1].seq
                    yield batch
                    continue
                if finished:
                    return
                record = await self.store.runs.get(run_id)
                if record is None:
                    yield DELETED
                    return
                if record.status in FINISHED:
                    finished = True  # its end may have been stored between the two reads
                    continue
                if run_id in self.lives:
                    continue  # it just started here: tail the buffer
                if record.awaiting is not None:
                    yield Paused(None)
                if not await _wait(news, self.heartbeat_s):
                    yield HEARTBEAT


async def _wait(flag: asyncio.Event, within_s: float) -> bool:
    try:
        async with asyncio.timeout(within_s):
            await flag.wait()
    except TimeoutError:
        return False
    return True
