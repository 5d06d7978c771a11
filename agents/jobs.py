"""In-flight work of one run. Jobs live in memory beside the graph, never in its state: the
state records what finished, so a resumed run simply starts again what had not.

When the search stops, jobs may be left to finish in the background for a bounded grace
(`JobPool.detach`): the model calls they have in flight complete and land in the cache, while
their `StopGate` refuses anything new (no further model or tool call, no event).

The pool's `RunSlots` (`agents/slots.py`) count model slots and tool slots apart: a job inside
a tool call gives its model slot to another job, through its gate's tool callbacks.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.tracers.context import register_configure_hook

from agents.grounding.evidence import NewEvidence
from agents.grounding.verify import Grounding
from agents.slots import RunSlots
from agents.state import Source, ToolCallRecord
from calls.readings import CallSubscriber, ModelCall, ModelReading

logger = logging.getLogger(__name__)

JobKind = Literal["execute", "expand", "branch", "respond"]


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
    evidence: list[NewEvidence] = field(default_factory=list)


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
    grounding: Grounding | None = None
    confidence: float | None = None  # the answer's mean token log-probability, when known


JobOutcome = ExecOutcome | ExpandOutcome | RespondOutcome


class StopGate(AsyncCallbackHandler, CallSubscriber):
    """Rides along every LangChain run inside one job (through a configure hook, so no call
    site has to pass it). Open, it only watches. Closed (the search stopped), it lets the model
    calls already in flight finish, counting what they cost (it subscribes to the job's call
    readings), and refuses the next step of the job: a chain (a model call's parser, the
    agent's next node) or a tool starting, or a tool's end being reported, cancels the job.

    It also moves the job between the run's model and tool slots: to a tool slot when its
    first running tool call starts, back to a model slot when its last one ends. The slots
    are the run's asyncio state, which only the run's event loop may touch: a sync tool runs
    in a thread, where LangChain calls async handlers in an event loop of its own, so its
    start and end move nothing, and its job keeps its model slot while it runs.

    It runs inline, before the run's other handlers, so a refused step is never counted or
    announced by them.
    """

    run_inline = True
    raise_error = True

    def __init__(self, slots: RunSlots | None = None) -> None:
        self.closed = False
        self.calls_after_stop = 0
        self.tokens_after_stop = 0
        self._model_calls: set[UUID] = set()
        self._slots = slots
        self._tools_running = 0
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # built outside a loop: every handler runs on the caller's
            self._loop = None

    def _refuse(self) -> None:
        if self.closed:
            raise asyncio.CancelledError("the search stopped")

    async def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        self._refuse()

    async def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        self._refuse()
        if self._on_run_loop():
            self._tools_running += 1
            if self._slots is not None:
                await self._slots.to_tool(self)

    async def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        self._refuse()
        await self._tool_left()

    async def on_tool_error(self, *args: Any, **kwargs: Any) -> None:
        await self._tool_left()

    def _on_run_loop(self) -> bool:
        return self._loop is None or asyncio.get_running_loop() is self._loop

    async def _tool_left(self) -> None:
        if not self._on_run_loop():
            return
        self._tools_running = max(0, self._tools_running - 1)
        if self._slots is not None and self._tools_running == 0:
            await self._slots.to_model(self)

    async def model_started(self, call: ModelCall) -> None:
        self._model_calls.add(call.key)

    async def model_ended(self, reading: ModelReading) -> None:
        self._model_calls.discard(reading.call.key)
        if not self.closed or reading.call.parent in self._model_calls:
            return  # a wrapper's inner call counts once
        if reading.error is not None or reading.cache_hit:
            return
        self.calls_after_stop += 1
        self.tokens_after_stop += reading.total_tokens


_GATE: contextvars.ContextVar[StopGate | None] = contextvars.ContextVar(
    "plantree_job_gate", default=None
)
register_configure_hook(_GATE, inheritable=True)


def current_gate() -> StopGate | None:
    """The stop gate of the job the current task runs, if any."""
    return _GATE.get()


# Every grace period still running in this process, held so the tasks are not collected.
_GRACE: set[asyncio.Task[None]] = set()


async def settle_background() -> None:
    """Wait until every job left to finish after a stop has ended (each within its grace)."""
    while _GRACE:
        await asyncio.gather(*list(_GRACE), return_exceptions=True)


@dataclass
class AfterStop:
    """Jobs left to finish after the stop, and what their model calls cost once it came."""

    jobs: int = 0
    gates: list[StopGate] = field(default_factory=list)

    def metrics(self) -> dict[str, int]:
        calls = sum(g.calls_after_stop for g in self.gates)
        tokens = sum(g.tokens_after_stop for g in self.gates)
        return {
            "jobs_after_stop": self.jobs,
            "calls_after_stop": calls,
            "tokens_after_stop": tokens,
        }


class JobPool:
    """The asyncio tasks of one run's in-flight jobs, keyed by job, and their slots: `limit`
    model slots and as many tool slots (the run's `max_concurrency`)."""

    def __init__(self, limit: int) -> None:
        self._tasks: dict[Job, asyncio.Task[JobOutcome]] = {}
        self._gates: dict[Job, StopGate] = {}
        self._detached: set[asyncio.Task[JobOutcome]] = set()
        self.after_stop = AfterStop()
        self.slots = RunSlots(limit)

    def __len__(self) -> int:
        return len(self._tasks)

    def free_slots(self) -> int:
        """How many more jobs may start now: model slots free, no job waiting for one."""
        return self.slots.free_for_new(len(self._tasks))

    def _forget(self, job: Job) -> None:
        gate = self._gates.pop(job, None)
        if gate is not None:
            self.slots.ended(gate)

    def jobs(self) -> list[Job]:
        return list(self._tasks)

    def busy_nodes(self) -> set[str]:
        return {job.node_id for job in self._tasks}

    def start(self, job: Job, work: Coroutine[Any, Any, JobOutcome]) -> None:
        if job in self._tasks:
            work.close()
            raise RuntimeError(f"job {job.key} is already running")
        # A fresh context: the job must not inherit the graph node's runnable config, or the
        # executor agent would run as a checkpointed subgraph of a node that already returned.
        gate = StopGate(self.slots)
        context = contextvars.Context()
        context.run(_GATE.set, gate)
        self._gates[job] = gate
        self.slots.started(gate)
        self._tasks[job] = asyncio.create_task(work, name=job.key, context=context)

    async def wait_any(
        self, within_s: float | None
    ) -> list[tuple[Job, JobOutcome | BaseException]]:
        """Wait until a job ends, a slot comes free (`slots.freed`: a job went into a tool
        call) or `within_s` passes; hand back every ended job."""
        if not self._tasks:
            return []
        freed = asyncio.ensure_future(self.slots.freed.wait())
        try:
            await asyncio.wait(
                [*self._tasks.values(), freed],
                timeout=within_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            freed.cancel()
        finished: list[tuple[Job, JobOutcome | BaseException]] = []
        for job, task in list(self._tasks.items()):
            if not task.done():
                continue
            del self._tasks[job]
            self._forget(job)
            if task.cancelled():
                finished.append((job, asyncio.CancelledError()))
            else:
                exc = task.exception()
                finished.append((job, exc if exc is not None else task.result()))
        return finished

    async def cancel(
        self, kinds: set[JobKind] | None = None, *, nodes: set[str] | None = None
    ) -> list[Job]:
        """Cancel in-flight jobs (all, or those of `kinds`, or those on `nodes`) and wait for
        them to unwind. Cancelling all also cancels the jobs left to finish after a stop."""
        victims = [
            job
            for job in self._tasks
            if (kinds is None or job.kind in kinds) and (nodes is None or job.node_id in nodes)
        ]
        tasks = [self._tasks.pop(job) for job in victims]
        for job in victims:
            self._forget(job)
        if kinds is None and nodes is None:
            tasks += list(self._detached)
            self._detached.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        return victims

    def detach(self, grace_s: float, run_id: str) -> list[Job]:
        """Leave every in-flight job to finish in the background for at most `grace_s`: their
        gates close (model calls in flight complete and are cached; nothing new starts, no
        event is sent) and they leave the pool. Returns the jobs."""
        jobs = list(self._tasks)
        if not jobs:
            return []
        tasks = [self._tasks.pop(job) for job in jobs]
        for job in jobs:
            gate = self._gates[job]
            gate.closed = True
            self.after_stop.gates.append(gate)
            self._forget(job)
        self.after_stop.jobs += len(jobs)
        self._detached.update(tasks)
        grace = asyncio.create_task(self._expire(tasks, grace_s, run_id), name="after-stop-grace")
        _GRACE.add(grace)
        grace.add_done_callback(_GRACE.discard)
        return jobs

    async def _expire(
        self, tasks: list[asyncio.Task[JobOutcome]], grace_s: float, run_id: str
    ) -> None:
        _, late = await asyncio.wait(tasks, timeout=grace_s)
        for task in late:
            task.cancel()
        # Every outcome is dropped on purpose; gathering retrieves the exceptions too.
        await asyncio.gather(*tasks, return_exceptions=True)
        self._detached.difference_update(tasks)
        stats = self.after_stop.metrics()
        logger.info(
            "run=%s after the stop: %d model calls finished (%d tokens), %d jobs cut at %gs",
            run_id,
            stats["calls_after_stop"],
            stats["tokens_after_stop"],
            len(late),
            grace_s,
        )
