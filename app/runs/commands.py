"""Steering commands as a run's search takes them: read from the run store only when the run
may have new ones.

Each scheduling round asks for the run's commands after the last one it took. Reading the store
every round costs a round trip per round for a command that seldom comes; here a round reads
only when one may be waiting:

- the first round this process runs of the run (a run taken over or resumed reads what was
  sent meanwhile);
- after a signal that a command was sent to the run (`sent`: the process that stored it
  delivers it here itself, the others through the signals of the deployment, app/runs/signals.py;
  `sent(None)`: to some run, which the SQLite watcher cannot tell apart);
- and at the latest `BACKSTOP_S` after the last read, so a lost signal costs that much latency
  and never a command.

A command stored after a round's read is taken by a later round, as before.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol

from agents.steering import SteerCommand

BACKSTOP_S = 1.0
"""The longest a run's rounds go without reading its commands."""
KEPT_RUNS = 4096
"""Runs whose last read is remembered; past it, those read longest ago are forgotten (their
next round reads, as a first round does)."""


class CommandStore(Protocol):
    """Where the commands wait (the run store's `commands`)."""

    async def after(self, run_id: str, after: int) -> list[SteerCommand]: ...


class SignalledCommands:
    """The `CommandSource` of the service's engine: the commands waiting in `commands`, read
    as above."""

    def __init__(
        self,
        commands: CommandStore,
        *,
        backstop_s: float = BACKSTOP_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._commands = commands
        self._backstop_s = backstop_s
        self._clock = clock
        self._read_at: dict[str, float] = {}  # insertion order: read longest ago first
        self._flagged: set[str] = set()
        self._any_since = -math.inf  # when a command was last sent to a run not named

    def sent(self, run_id: str | None) -> None:
        """A command was sent to `run_id` (None: to some run): its next round reads."""
        if run_id is None:
            self._any_since = self._clock()
            return
        if len(self._flagged) >= KEPT_RUNS:
            # Runs of other processes are flagged here too and never read: dropping the flags
            # costs those read here at most the backstop's latency.
            self._flagged.clear()
        self._flagged.add(run_id)

    async def commands_after(self, run_id: str, after: int) -> list[SteerCommand]:
        now = self._clock()
        last = self._read_at.get(run_id)
        due = (
            last is None
            or run_id in self._flagged
            or self._any_since >= last
            or now - last >= self._backstop_s
        )
        if not due:
            return []
        # Flag down before the read: a command sent while it is under way flags it again.
        self._flagged.discard(run_id)
        self._read_at.pop(run_id, None)
        self._read_at[run_id] = now
        while len(self._read_at) > KEPT_RUNS:
            del self._read_at[next(iter(self._read_at))]
        return await self._commands.after(run_id, after)
