"""Executing a run this worker owns: the engine in one task, its events written by one writer.

The writer is the only code that writes a run's history. Event ids come from the store; every
write is fenced by the lease and shielded from cancellation (a cancel that lands mid-write
waits for the write to finish, so the store and the live buffer never disagree); the engine
hands a run's end back (its result with its terminal event, or the pause or the cancel it
raised with), and `finish` stores that event together with the status and the result, in one
transaction. While the store is unreachable a write waits for it (app/store/outage.py),
holding the run back; past that wait the run stops here like a lost one, and its lease lapses
for a worker to take it up again once the store returns. An end or a pause that a full disk
refuses even after its reserve was given up (app/store/disk.py) stops the run here the same way:
it is taken up again from its last checkpoint once the disk has room.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver

from agents import observers
from agents.engine import Engine
from agents.errors import AwaitingApproval, RunNotFound, StorageFull, cancel_event
from agents.events import Event, RunCancelled, RunError
from agents.result import Outcome, RunResult
from agents.state import NodeRecord
from app.runs.live import LiveRun, Phase
from app.runs.queue import RunQueue
from app.runs.recollection import recollection_for
from app.runs.run_tools import run_tools
from app.store.base import LeaseLost, RunRecord, StoredEvent
from app.store.outage import NO_WAIT, OutageTooLong, StoreOutage
from app.store.protocols import RunStore
from tools.settings import ToolSettings

logger = logging.getLogger(__name__)
T = TypeVar("T")
NODES_READ_S = 5.0


def _nobody(run_id: str) -> None:
    """No one to tell that a run ended."""


async def shielded(work: Awaitable[T]) -> T:
    """Run `work` to completion even if the caller is cancelled meanwhile; then re-raise the
    cancellation. A write that must not be half-done goes through here."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
        except BaseException:
            break  # the task ended with an error: `result()` raises it below
    if cancelled:
        if not task.cancelled() and task.exception() is not None:
            logger.warning("a shielded write failed while cancelled: %r", task.exception())
        raise asyncio.CancelledError
    return task.result()


@dataclass(frozen=True, slots=True, eq=False)
class RunWriter:
    """The single writer of one run's history while this worker (`owner`) holds it; `wake`
    tells the run's followers that an event was written, `ended` that the run's end was
    stored (its webhook is delivered from there)."""

    store: RunStore
    owner: str
    live: LiveRun
    wake: Callable[[str], None]
    ended: Callable[[str], None] = _nobody
    outage: StoreOutage = NO_WAIT

    async def _store(
        self, write: Callable[[], Awaitable[list[int]]], stored: Sequence[tuple[str, str]]
    ) -> list[int]:
        """`write`'s event ids, riding out a store outage; an attempt that landed before its
        reply was lost is found by its first event's payload instead of being written twice
        (a write's events land together or not at all)."""
        live = self.live
        first = stored[0]

        async def landed() -> list[int] | None:
            after = await self.store.events.after(live.run_id, live.last_seq)
            for i, event in enumerate(after):
                if (event.type, event.data) == first:
                    return [e.seq for e in after[i : i + len(stored)]]
            return None

        return await self.outage.ride(live.run_id, write, landed)

    def _given_up(self, e: OutageTooLong | StorageFull) -> None:
        logger.error(
            "run=%s stops here: %s; its lease lapses for a later take-over", self.live.run_id, e
        )
        self.live.lose()

    async def emit(self, event: Event) -> None:
        """The engine's sink."""
        await self.emit_all([event])

    async def emit_all(self, events: Sequence[Event]) -> None:
        """The engine's sink for the events of one moment: stored in one write. (The engine
        hands a run's end back instead, stored by `finish` or `pause`.)"""
        if events and self.live.may_write:
            await shielded(self._append(events))

    async def _append(self, events: Sequence[Event]) -> None:
        run_id = self.live.run_id

        async def write(datas: list[str]) -> list[int]:
            if len(datas) == 1:
                return [
                    await self.store.events.append(run_id, self.owner, events[0].type, datas[0])
                ]
            typed = [(event.type, data) for event, data in zip(events, datas, strict=True)]
            return await self.store.events.append_many(run_id, self.owner, typed)

        what = "event " + ", ".join(event.type for event in events)
        if await self._write(what, events, write) is not None:
            self.wake(run_id)

    async def _write(
        self,
        what: str,
        events: Sequence[Event],
        write: Callable[[list[str]], Awaitable[list[int]]],
        turn_ends: Callable[[], None] | None = None,
    ) -> float | None:
        """Store `events` by `write` (given their JSON), fenced, then move the live run on when
        the write ends this writer's turn (`turn_ends`: a pause, an end) and hand the events to
        its followers; the seconds that took, or None when nothing was written: the lease was
        gone, or was lost, or the store stayed out too long or had no room for an end or a
        pause (the run is then lost here)."""
        live = self.live
        async with live.lock:
            if not live.may_write:
                return None
            datas = [event.model_dump_json() for event in events]
            stored = [(event.type, data) for event, data in zip(events, datas, strict=True)]
            started = time.perf_counter()
            try:
                seqs = await self._store(lambda: write(datas), stored)
            except OutageTooLong as e:
                self._given_up(e)
                return None
            except StorageFull as e:
                if turn_ends is None:
                    raise  # an event: the engine ends the run with `storage_full`
                self._given_up(e)
                return None
            except LeaseLost:
                logger.warning("run=%s lease lost before its %s was stored", live.run_id, what)
                live.lose()
                return None
            if turn_ends is not None:
                turn_ends()
            await live.push(
                *(
                    StoredEvent(seq=seq, type=type_, data=data)
                    for seq, (type_, data) in zip(seqs, stored, strict=True)
                )
            )
        return time.perf_counter() - started

    async def pause(self, event: Event, awaiting: str) -> bool:
        """Store the event the run stops on with its wait for an answer, at once; False if the
        lease was gone (nothing written). Callers shield it."""
        run_id = self.live.run_id

        async def write(datas: list[str]) -> list[int]:
            return [
                await self.store.waits.pause(run_id, self.owner, event.type, datas[0], awaiting)
            ]

        if await self._write("pause", [event], write, self.live.pause) is None:
            return False
        self.wake(run_id)
        return True

    async def finish(self, terminal: Event, result: RunResult) -> bool:
        """Store the terminal event and the result (with its status) at once; False if the
        lease was gone (nothing written). Callers shield it."""
        live = self.live

        async def write(datas: list[str]) -> list[int]:
            return [
                await self.store.events.finish(
                    live.run_id, self.owner, terminal.type, datas[0], result
                )
            ]

        took = await self._write("end", [terminal], write, live.end)
        if took is None:
            return False
        observers.written(terminal, live.run_id, took)
        self.wake(live.run_id)
        self.ended(live.run_id)
        return True


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RunDriver:
    """Runs a claimed run on the engine and stores how it ended."""

    engine: Engine
    store: RunStore
    owner: str
    queue: RunQueue
    checkpointer: BaseCheckpointSaver[str] | None
    wake: Callable[[str], None]
    tool_settings: ToolSettings
    ended: Callable[[str], None] = _nobody
    outage: StoreOutage = NO_WAIT

    def writer(self, live: LiveRun) -> RunWriter:
        return RunWriter(
            self.store, self.owner, live, self.wake, ended=self.ended, outage=self.outage
        )

    async def execute(self, live: LiveRun, record: RunRecord, *, resume: bool) -> None:
        """The body of a run's task (its slot in the queue is taken here)."""
        run_id = record.id
        writer = self.writer(live)
        outcome: Outcome | None = None
        try:
            async with self.queue.slot():
                # The flag as of now: a cancel sent before this run was registered here
                # found no task to stop.
                live.start()
                if record.cancel_requested or await self.store.leases.mark_running_and_check_cancel(
                    run_id, self.owner
                ):
                    raise asyncio.CancelledError
                outcome = await self._drive(record, writer, resume=resume)
        except AwaitingApproval as waiting:
            await shielded(writer.pause(waiting.event, "plan"))
            logger.info("run=%s waits for its plan's approval; its slot is free", run_id)
            return
        except asyncio.CancelledError as cancel:
            await self._stopped(live, writer, cancel_event(cancel))
        except LeaseLost:
            live.lose()
        except Exception:
            logger.exception("run=%s failed outside the engine", run_id)
            message = "the run failed on an internal error"
            error = RunError(run_id=run_id, code="internal", message=message)
            failed = RunResult.failed(run_id, "internal", message)
            await self._end(writer, error, failed)
        else:
            assert outcome is not None
            await self._end(writer, outcome.terminal, outcome.result)

    async def _end(self, writer: RunWriter, terminal: Event, result: RunResult) -> None:
        """The run's end, stored once; a cancel landing meanwhile waits for it."""

        async def end() -> None:
            if await writer.finish(terminal, result):
                await self._forget_checkpoint(writer.live.run_id)

        await shielded(end())

    async def _drive(self, record: RunRecord, writer: RunWriter, *, resume: bool) -> Outcome:
        params = record.params
        bound = run_tools(self.store.collections, self.tool_settings, record.tenant, params)
        if resume:
            try:
                return await self.engine.resume_search(
                    record.id,
                    sink=writer.emit,
                    sink_all=writer.emit_all,
                    answer=record.answer,
                    run_tools=bound,
                )
            except RunNotFound:  # queued before it ever checkpointed
                pass
        known = await recollection_for(self.store, record)
        return await self.engine.search(
            record.task,
            params,
            run_id=record.id,
            sink=writer.emit,
            sink_all=writer.emit_all,
            known=known,
            run_tools=bound,
        )

    async def _stopped(
        self, live: LiveRun, writer: RunWriter, terminal: RunCancelled | None
    ) -> None:
        """The task was cancelled: a drain gives the run back, a lost lease writes nothing,
        anything else is the caller's cancel (`terminal`: the engine's, when it got that far)."""
        if live.phase is Phase.LOST:
            return
        if live.phase is Phase.DRAINING:
            with contextlib.suppress(LeaseLost):
                await shielded(self.store.leases.release(live.run_id, self.owner, "interrupted"))
            return
        await self.end_cancelled(live, writer, terminal)

    async def end_cancelled(
        self, live: LiveRun, writer: RunWriter, terminal: RunCancelled | None = None
    ) -> None:
        """Store the run's end as cancelled (`terminal`, or a bare `cancelled`), with the tree
        as last checkpointed."""
        run_id = live.run_id
        terminal = terminal or RunCancelled(run_id=run_id)

        async def end() -> None:
            result = RunResult(
                run_id=run_id,
                status="cancelled",
                metrics=terminal.metrics,
                nodes=await self._nodes(run_id),
            )
            if await writer.finish(terminal, result):
                await self._forget_checkpoint(run_id)

        # One unit: a second cancel must not stop the end between reading the tree and
        # storing it.
        await shielded(end())

    async def end_failed(self, live: LiveRun, writer: RunWriter, error: RunError) -> None:
        """Store the run's end as failed with `error`, without running it; the tree as last
        checkpointed is kept."""
        run_id = live.run_id

        async def end() -> None:
            nodes = await self._nodes(run_id)
            result = RunResult.failed(run_id, error.code, error.message, nodes=nodes)
            if await writer.finish(error, result):
                await self._forget_checkpoint(run_id)

        await shielded(end())

    async def _nodes(self, run_id: str) -> list[NodeRecord]:
        """The tree as last checkpointed (a cancelled run keeps what it found)."""
        if self.checkpointer is None:
            return []
        try:
            # Bounded: the end must be stored even if the checkpoint cannot be read.
            async with asyncio.timeout(NODES_READ_S):
                return await self.engine.tree(run_id)
        except Exception:
            logger.warning("run=%s tree not readable from its checkpoint", run_id)
            return []

    async def _forget_checkpoint(self, run_id: str) -> None:
        # A finished run is kept in the run store; its checkpoints are only needed to resume.
        if self.checkpointer is not None:
            try:
                await self.checkpointer.adelete_thread(run_id)
            except Exception:
                logger.warning("run=%s checkpoint not deleted", run_id)
