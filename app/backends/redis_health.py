"""The outage policy every user of one Redis shares within a process: a small state machine on
an injected clock, with no I/O of its own.

States: `up` (calls go to the network), `down` (calls fail at once, without touching the
network, until the rest interval has passed) and `probing` (one call is out testing Redis; the
others still fail at once). A failure while up marks Redis down for `first_down_s`; a failed
probe doubles the interval, up to `max_down_s`; a successful call marks it up again. The first
failure of an outage and the recovery are each reported once (log line, observer), never once
per call.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

FIRST_DOWN_S = 2.0
MAX_DOWN_S = 30.0


class Health(enum.Enum):
    UP = "up"
    DOWN = "down"
    PROBING = "probing"


class IllegalTransition(RuntimeError):
    """A probe was settled while no probe was out (a bug in the caller)."""


class HealthObserver(Protocol):
    """Told of every change between up and down (metrics)."""

    def went_down(self, kind: str) -> None: ...

    def came_up(self) -> None: ...


class NoObserver:
    def went_down(self, kind: str) -> None:
        pass

    def came_up(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class Ticket:
    """Leave to send one call: `probe` when it is the call that tests a down Redis."""

    probe: bool
    outage: int  # the outage count when it was given; a stale ticket settles nothing


@dataclass(slots=True, eq=False)
class RedisHealth:
    """The outage policy; see the module docstring. Thread-safe (the model cache also has a
    synchronous path)."""

    name: str
    _: dataclasses.KW_ONLY
    clock: Clock = time.monotonic
    first_down_s: float = FIRST_DOWN_S
    max_down_s: float = MAX_DOWN_S
    observer: HealthObserver = field(default_factory=NoObserver)
    outages: int = field(init=False, default=0)  # times it went down
    refused: int = field(init=False, default=0)  # calls failed at once while down or probing
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _state: Health = field(init=False, default=Health.UP)
    _interval_s: float = field(init=False, default=0.0)
    _retry_at: float = field(init=False, default=0.0)

    @property
    def state(self) -> Health:
        return self._state

    @property
    def up(self) -> bool:
        return self._state is Health.UP

    @property
    def down_for_s(self) -> float:
        """The current rest interval (0 while up)."""
        return self._interval_s

    def retry_in(self) -> float:
        """Seconds until a call may probe again (0: now, or Redis is up)."""
        with self._lock:
            if self._state is not Health.DOWN:
                return 0.0
            return max(0.0, self._retry_at - self.clock())

    def admit(self) -> Ticket | None:
        """Leave for one call to go to the network, or None: fail it at once."""
        with self._lock:
            if self._state is Health.UP:
                return Ticket(probe=False, outage=self.outages)
            if self._state is Health.DOWN and self.clock() >= self._retry_at:
                self._state = Health.PROBING
                return Ticket(probe=True, outage=self.outages)
            self.refused += 1
            return None

    def succeeded(self, ticket: Ticket) -> None:
        """The call answered: Redis is up."""
        with self._lock:
            if ticket.probe:
                self._expect_probe()
            elif self._state is not Health.UP or ticket.outage != self.outages:
                return  # sent before the outage began; the probe decides
            if self._state is Health.UP:
                return
            self._state = Health.UP
            self._interval_s = 0.0
        logger.info("redis %s: reachable again", self.name)
        self.observer.came_up()

    def failed(self, ticket: Ticket, kind: str) -> None:
        """The call failed to reach Redis (`kind`: refused, reset, timeout, …)."""
        with self._lock:
            if ticket.probe:
                self._expect_probe()
                self._interval_s = min(self.max_down_s, self._interval_s * 2)
                self._down()
                return
            if self._state is not Health.UP or ticket.outage != self.outages:
                return  # already marked down by another call
            self.outages += 1
            self._interval_s = self.first_down_s
            self._down()
        logger.warning(
            "redis %s: unreachable (%s); degrading, next try in %.0fs",
            self.name,
            kind,
            self._interval_s,
        )
        self.observer.went_down(kind)

    def lost(self, kind: str) -> None:
        """A connection held outside any call (a subscription) failed: as a failed call."""
        with self._lock:
            ticket = Ticket(probe=False, outage=self.outages)
        self.failed(ticket, kind)

    def abandoned(self, ticket: Ticket) -> None:
        """The call ended without an answer either way (cancelled): a probe gives its turn
        back, so the next call probes."""
        if not ticket.probe:
            return
        with self._lock:
            self._expect_probe()
            self._state = Health.DOWN
            self._retry_at = self.clock()

    def _expect_probe(self) -> None:
        if self._state is not Health.PROBING:
            raise IllegalTransition(f"a probe settled while Redis was {self._state.value}")

    def _down(self) -> None:
        self._state = Health.DOWN
        self._retry_at = self.clock() + self._interval_s
