"""A run's slots: `max_concurrency` bounds the jobs that call models and, separately, the jobs
inside tool calls, so that a branch waiting for a tool (its rate-limit spacing, a slow host)
never holds a model slot while other branches could think.

Every job starts holding a model slot (the scheduler starts one only when a slot is free). When
the job's first tool call starts it gives the model slot back and takes a tool slot (waiting
for one if every tool slot is taken); when its last running tool call ends it gives the tool
slot back and takes a model slot again (waiting, ahead of any new job, if every model slot is
taken). A job's parallel tool calls share its one tool slot. So at most `limit` jobs call
models, at most `limit` are inside tools, and a run has at most `2 * limit` jobs.

The moves happen in the job's own task, from its stop gate's tool callbacks (`agents/jobs.py`),
which LangChain awaits before the tool runs and before its result goes back to the agent.
"""

from __future__ import annotations

import asyncio
from typing import Literal

Phase = Literal["model", "tool", "waiting_model", "waiting_tool"]


class RunSlots:
    """The phases of one run's jobs, keyed by the job's gate (any hashable per job)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._phase: dict[object, Phase] = {}
        self._change = asyncio.Event()  # set, and replaced, at every change of phase
        # Set when a model slot came free; the scheduler clears it before it plans.
        self.freed = asyncio.Event()

    def _count(self, *phases: Phase) -> int:
        return sum(1 for p in self._phase.values() if p in phases)

    @property
    def model_load(self) -> int:
        """Jobs holding or waiting for a model slot: what a new job would queue behind."""
        return self._count("model", "waiting_model")

    @property
    def in_tools(self) -> int:
        """Jobs inside tool calls or waiting for a tool slot."""
        return self._count("tool", "waiting_tool")

    def free_for_new(self, jobs: int) -> int:
        """How many new jobs may start now, with `jobs` in the pool."""
        return max(0, min(self.limit - self.model_load, 2 * self.limit - jobs))

    def started(self, job: object) -> None:
        self._phase[job] = "model"

    async def to_tool(self, job: object) -> None:
        """A tool call of the job starts. The first: model slot back, a tool slot taken; a
        parallel one waits until the job holds its tool slot."""
        if self._phase.get(job) == "model":
            await self._move(job, "waiting_tool", "tool")
        while self._phase.get(job) == "waiting_tool":
            change = self._change
            await change.wait()

    async def to_model(self, job: object) -> None:
        """The job's last running tool call ended: tool slot back, a model slot taken."""
        if self._phase.get(job) == "tool":
            await self._move(job, "waiting_model", "model")

    async def _move(self, job: object, waiting: Phase, holding: Phase) -> None:
        self._phase[job] = waiting
        if waiting == "waiting_tool":
            self.freed.set()  # its model slot is free for another job
        self._changed()
        while job in self._phase and self._count(holding) >= self.limit:
            change = self._change
            await change.wait()
        if job in self._phase:
            self._phase[job] = holding
            self._changed()  # a parallel tool call of the job waits for this

    def ended(self, job: object) -> None:
        """The job ended (finished, cancelled or left to finish after a stop): whatever it
        held is free."""
        if self._phase.pop(job, None) is not None:
            self.freed.set()
            self._changed()

    def _changed(self) -> None:
        """Wake every job waiting for a slot, to look again."""
        self._change.set()
        self._change = asyncio.Event()
