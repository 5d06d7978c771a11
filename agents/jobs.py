"""In-flight work of one run. Jobs live in memory beside the graph, never in its state: the
state records what finished, so a resumed run simply starts again what had not."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.state import Source, ToolCallRecord

logger = logging.getLogger(__name__)

JobKind = Literal["execute", "expand", "respond"]


@dataclass(frozen=True)
class Job:
    kind: JobKind
    node_id: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.node_id}"


@dataclass
class ExecOutcome:
    ok: bool
    result: str | None
    error: str | None
    seconds: float
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)


@dataclass
class Judged:
    score: float
    viable: bool
    reason: str


@dataclass
class ExpandOutcome:
    complete: bool
    steps: list[str]
    dropped: list[str]
    progress: Judged | None = None
    scores: list[Judged | None] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class RespondOutcome:
    answer: str | None
    error: str | None
    seconds: float = 0.0


Outcome = ExecOutcome | ExpandOutcome | RespondOutcome


class JobPool:
    """The asyncio tasks of one run's in-flight jobs, keyed by job."""

    def __init__(self) -> None:
        self._tasks: dict[Job, asyncio.Task[Outcome]] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def jobs(self) -> list[Job]:
        return list(self._tasks)

    def busy_nodes(self) -> set[str]:
        return {job.node_id for job in self._tasks}

    def start(self, job: Job, work: Coroutine[Any, Any, Outcome]) -> None:
        if job in self._tasks:
            work.close()
            raise RuntimeError(f"job {job.key} is already running")
        # A fresh context: the job must not inherit the graph node's runnable config, or the
        # executor agent would run as a checkpointed subgraph of a node that already returned.
        self._tasks[job] = asyncio.create_task(work, name=job.key, context=contextvars.Context())

    async def wait_any(self, within_s: float | None) -> list[tuple[Job, Outcome | BaseException]]:
        """Wait until a job ends (or `within_s` passes); hand back every ended job."""
        if not self._tasks:
            return []
        await asyncio.wait(
            self._tasks.values(), timeout=within_s, return_when=asyncio.FIRST_COMPLETED
        )
        finished: list[tuple[Job, Outcome | BaseException]] = []
        for job, task in list(self._tasks.items()):
            if not task.done():
                continue
            del self._tasks[job]
            if task.cancelled():
                finished.append((job, asyncio.CancelledError()))
            else:
                exc = task.exception()
                finished.append((job, exc if exc is not None else task.result()))
        return finished

    async def cancel(self, kinds: set[JobKind] | None = None) -> list[Job]:
        """Cancel in-flight jobs (all, or those of `kinds`) and wait for them to unwind."""
        victims = [job for job in self._tasks if kinds is None or job.kind in kinds]
        tasks = [self._tasks.pop(job) for job in victims]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        return victims
