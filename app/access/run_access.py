"""One door to the runs, for the run routes and the compatible APIs (Agent Server, OpenAI,
MCP): the run manager seen by one caller.

A caller reaches only its own runs: another key's run is answered like a missing one (the
same `RunNotFound`), and lists hold only the caller's runs; the admin key and the single user
(no keys configured) reach every run. Starting a run counts against the caller's key limits.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Unpack

from agents.errors import RunNotFound
from agents.nodes.approval import PlanAnswer, PlanDecision
from agents.params import RunParams
from app.access.limits import KeyLimits, StreamSlot
from app.errors import ServiceError
from app.keys.tenancy import SINGLE_USER, Caller
from app.runs.following import RunItem
from app.runs.manager import NewRun, RunEnded, RunManager, RunNotWaiting, RunPlace
from app.store.base import (
    FINISHED,
    UNFINISHED,
    RunRecord,
    RunStatus,
    StoredEvent,
    ThreadRecord,
    TooManyOpen,
)

logger = logging.getLogger(__name__)
TRACE_PAGE = 500  # events read from the store at a time for a trace


class ThreadNotFound(ServiceError, code="not_found"):
    """No thread under the given id (or another key's)."""


class ThreadNotFinished(ServiceError, code="thread_not_finished"):
    """A run of the thread has not ended, so the thread cannot be deleted."""


class RunNotFinished(ServiceError, code="run_not_finished"):
    """The run has not ended, so it cannot be deleted."""


@dataclass(frozen=True)
class NewStream:
    """A run just started for a streaming caller: its record, its first event as written,
    and the caller's stream slot."""

    record: RunRecord
    first: StoredEvent
    slot: StreamSlot


@dataclass(frozen=True, slots=True, eq=False)
class Runs:
    """Start, follow, read, list and cancel the runs `caller` may reach (within `limits`, the
    key limits, when given)."""

    manager: RunManager
    caller: Caller = SINGLE_USER
    limits: KeyLimits | None = None

    async def submit(self, task: str, params: RunParams, **place: Unpack[RunPlace]) -> RunRecord:
        """Queue a run of the caller, on one of its threads when `place` names a `thread_id`,
        its end POSTed to its `webhook` when given; raises `ThreadNotFound`, `QueueFull` like
        the run API, `RunOptionRefused` for a model, tool or webhook the server does not
        accept, or `RateLimited` when the caller's key has its most runs."""
        record, _ = await self._start(task, params, place)
        return record

    async def _start(
        self, task: str, params: RunParams, place: RunPlace
    ) -> tuple[RunRecord, StoredEvent]:
        thread_id = place.get("thread_id")
        if thread_id is not None:
            await self.thread(thread_id)
        limits = self.limits
        try:
            max_open = limits.max_runs(self.caller) if limits is not None else None
            return await self.manager.submit_with_event(
                NewRun(task, params, self.caller.tenant, **place, max_open=max_open)
            )
        except TooManyOpen as refused:
            if limits is None:
                raise
            limits.refuse_runs(self.caller, refused)

    async def stream_slot(self) -> StreamSlot:
        """One of the caller's event stream slots; raises `RateLimited` when none is free."""
        return await self.limits.stream_slot(self.caller) if self.limits else StreamSlot(None)

    async def submit_streamed(
        self, task: str, params: RunParams, **place: Unpack[RunPlace]
    ) -> NewStream:
        """Queue a run whose events the caller will stream: a stream slot is taken first, so
        no run starts when none is free."""
        slot = await self.stream_slot()
        try:
            record, first = await self._start(task, params, place)
        except BaseException:
            slot.release()
            raise
        return NewStream(record, first, slot)

    async def get(self, run_id: str) -> RunRecord:
        """The run's record; raises `RunNotFound` (also for another key's run)."""
        record = await self.manager.get(run_id)
        if not self.caller.may_see(record.tenant):
            logger.info("run=%s is not caller=%s's: answered as missing", run_id, self.caller.label)
            raise RunNotFound(f"no run {run_id}")
        return record

    def follow(self, record: RunRecord, after: int = 0) -> AsyncIterator[RunItem]:
        """The items of a run reached through this door (its record from `get`, a thread's
        runs or a start) after event `after`, live until its end (app/runs/following.py)."""
        return self.manager.follow(record.id, after)

    def follow_new(self, new: NewStream) -> AsyncIterator[RunItem]:
        """`follow` of the run `submit_streamed` just started: its first event is the one
        written, not read back from the store."""
        return self.manager.follow_new(new.record.id, new.first)

    async def last_event_id(self, record: RunRecord) -> int:
        """The id of the last stored event of a run reached through this door."""
        return await self.manager.store.events.last_seq(record.id)

    async def resumes_within(self, record: RunRecord, after: int) -> bool:
        """Whether a follow of the run may start after event `after`: a reader re-joins at
        an event it was sent, never past the run's last stored event."""
        return after <= await self.last_event_id(record)

    async def stored_events(self, record: RunRecord) -> AsyncIterator[StoredEvent]:
        """Every stored event of a run reached through this door, read a page at a time."""
        after = 0
        while True:
            page = await self.manager.store.events.after(record.id, after, TRACE_PAGE)
            for event in page:
                yield event
            if len(page) < TRACE_PAGE:
                return
            after = page[-1].seq

    async def wait(self, run_id: str) -> RunRecord:
        await self.get(run_id)
        return await self.manager.wait(run_id)

    async def tree(self, record: RunRecord) -> list[dict[str, Any]]:
        return await self.manager.tree(record)

    async def list(
        self, *, status: RunStatus | None = None, limit: int = 20, offset: int = 0
    ) -> tuple[list[RunRecord], int | None]:
        """A page of the caller's runs (every run for the admin), newest first, and the next
        page's offset (None on the last)."""
        tenant = None if self.caller.sees_all else self.caller.tenant
        records = await self.manager.store.runs.page(
            status=status, limit=limit + 1, offset=offset, tenant=tenant
        )
        more = len(records) > limit
        return records[:limit], offset + limit if more else None

    async def answer_plan(self, run_id: str, decision: PlanDecision) -> RunRecord:
        """Answer the plan of one of the caller's runs waiting for approval; raises
        `RunNotFound`, or `RunNotWaiting`."""
        await self.get(run_id)
        answer = PlanAnswer(**decision.model_dump(), by=self.caller.name)
        record = await self.manager.answer(run_id, answer.model_dump(mode="json"))
        logger.info("run=%s plan %s by caller=%s", run_id, decision.action, self.caller.label)
        return record

    async def steer(self, run_id: str, command: str, node_id: str, step: str | None) -> int:
        """Send a steering command to one of the caller's runs, under the caller's key name;
        raises `RunNotFound`, or `RunEnded` once the run has ended."""
        record = await self.get(run_id)
        if record.status in FINISHED:
            raise RunEnded(f"run {run_id} has ended; it takes no more commands")
        return await self.manager.steer(run_id, command, node_id, step, self.caller.name)

    async def cancel(self, run_id: str) -> RunRecord:
        await self.get(run_id)
        return await self.manager.cancel(run_id)

    async def delete(self, run_id: str) -> None:
        """Delete a finished run and its events; raises `RunNotFound`, or `RunNotFinished`
        for a run that has not ended."""
        await self.get(run_id)
        if not await self.manager.store.runs.delete(run_id):
            raise RunNotFinished(f"run {run_id} has not ended: cancel it first")
        logger.info("run=%s deleted by caller=%s", run_id, self.caller.label)

    # -- threads -----------------------------------------------------------------------------
    async def create_thread(self) -> ThreadRecord:
        """A new thread of the caller."""
        return await self.manager.create_thread(self.caller.tenant)

    async def thread(self, thread_id: str) -> ThreadRecord:
        """The thread; raises `ThreadNotFound` (also for another key's thread)."""
        thread = await self.manager.store.threads.get(thread_id)
        if thread is None or not self.caller.may_see(thread.tenant):
            raise ThreadNotFound(f"no thread {thread_id}")
        return thread

    async def threads(self, *, limit: int, offset: int) -> builtins.list[ThreadRecord]:
        """A page of the caller's threads (every thread for the admin), newest first."""
        tenant = None if self.caller.sees_all else self.caller.tenant
        return await self.manager.store.threads.page(limit=limit, offset=offset, tenant=tenant)

    async def thread_runs(self, thread_id: str) -> builtins.list[RunRecord]:
        """The runs of one of the caller's threads, oldest first."""
        await self.thread(thread_id)
        return await self.manager.store.threads.runs(thread_id)

    async def submit_alone(self, thread_id: str, task: str, params: RunParams) -> RunRecord:
        """Queue a run on one of the caller's threads, one run at a time: raises
        `ThreadNotFinished` while a run of the thread has not ended (the Agent Server API's
        rule; the run API lets a thread's runs overlap)."""
        if any(r.status in UNFINISHED for r in await self.thread_runs(thread_id)):
            raise ThreadNotFinished(f"a run of thread {thread_id} has not ended (one at a time)")
        return await self.submit(task, params, thread_id=thread_id)

    async def answer_thread(self, thread_id: str, decision: PlanDecision) -> tuple[RunRecord, int]:
        """Answer the plan that one of the caller's threads waits for: an answer goes to the
        thread's last run, and only while that run waits (`RunNotWaiting` otherwise). The run,
        and the id of its last event before the answer (where its stream goes on)."""
        thread_runs = await self.thread_runs(thread_id)
        last = thread_runs[-1] if thread_runs else None
        if last is None or last.awaiting is None:
            raise RunNotWaiting(f"no run of thread {thread_id} waits for an answer")
        after = await self.last_event_id(last)
        return await self.answer_plan(last.id, decision), after

    async def delete_thread(self, thread_id: str) -> None:
        """Delete one of the caller's threads with its runs; raises `ThreadNotFinished` while
        one of its runs has not ended (nothing is deleted then)."""
        await self.thread(thread_id)
        if not await self.manager.store.threads.delete(thread_id):
            raise ThreadNotFinished(f"thread {thread_id} has a run that has not ended")
        logger.info("thread=%s deleted by caller=%s", thread_id, self.caller.label)
