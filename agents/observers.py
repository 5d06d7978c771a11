"""Process-wide run observers: how metrics and traces see runs without the core knowing them.

A run observer gets every run event (with the time the event sink took to persist and publish
it) and subscribes to the readings of every model and tool call of a run too
(`calls.observers`). The service installs its observers once at start-up (`add`); with none
installed a run pays nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from agents.events import Event, EventBatchSink, EventSink
from calls import observers as call_observers
from calls.readings import CallSubscriber

logger = logging.getLogger(__name__)


class RunObserver(CallSubscriber):
    """Hears a run's events and its calls' readings; every hook does nothing unless
    overridden."""

    def on_event(self, event: Event, seconds: float) -> None:
        """An event was handed to the run's sink, which took `seconds`. Must not raise."""


_observers: list[RunObserver] = []


def add(observer: RunObserver) -> None:
    """Install an observer for every run and call of this process (once; a second add is a
    no-op)."""
    if not any(o is observer for o in _observers):
        _observers.append(observer)
    call_observers.add(observer)


def remove(observer: RunObserver) -> None:
    _observers[:] = [o for o in _observers if o is not observer]
    call_observers.remove(observer)


def installed() -> list[RunObserver]:
    """The process's run observers, in the order they were installed."""
    return list(_observers)


def reset(keep: Sequence[RunObserver] = ()) -> None:
    """Make `keep` the process's only observers (of runs and calls; none by default). The one
    way to put the registries back, used by the tests' one fixture after every test."""
    for observer in installed():
        remove(observer)
    call_observers.reset()
    for observer in keep:
        add(observer)


def observed(sink: EventSink, run_id: str) -> EventSink:
    """`sink`, also telling the observers about every event (unchanged when there are none)."""
    if not _observers:
        return sink

    async def observing(event: Event) -> None:
        started = time.perf_counter()
        try:
            await sink(event)
        finally:
            written(event, run_id, time.perf_counter() - started)

    return observing


def observed_all(sink: EventBatchSink, run_id: str) -> EventBatchSink:
    """`observed` for a batch sink: each event of a batch took the batch's time to store."""
    if not _observers:
        return sink

    async def observing(events: Sequence[Event]) -> None:
        started = time.perf_counter()
        try:
            await sink(events)
        finally:
            seconds = time.perf_counter() - started
            for event in events:
                written(event, run_id, seconds)

    return observing


def written(event: Event, run_id: str, seconds: float) -> None:
    """Tell the observers about an event that took `seconds` to store. The engine's sink does
    it for every event it emits; the service calls it for those it writes itself (a run's
    `run_started`, the end of a run stopped before its engine ended it)."""
    for observer in list(_observers):
        try:
            observer.on_event(event, seconds)
        except Exception:  # an observer never breaks a run
            logger.exception("run=%s observer failed on %s", run_id, event.type)
