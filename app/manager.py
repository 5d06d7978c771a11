"""The run manager: owns every run's task, independent of the requests that started it.

Runs execute up to `max_active_runs` at once; the rest queue (bounded). Events are numbered
1, 2, 3 … per run, persisted, then handed to live followers. On start-up, runs that were
interrupted (SIGKILL, SIGTERM drain) resume from their last checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from agents.engine import Engine, RunResult
from agents.errors import RunNotFound
from agents.events import Event, RunCancelled, RunError, RunStarted
from agents.params import RunParams
from agents.settings import Settings
from agents.tree import by_id
from app.live import TERMINAL, LiveRun
from app.queue import LocalRunQueue, RunQueue
from app.store.base import FINISHED, RunRecord, RunStatus, RunStore, StoredEvent

logger = logging.getLogger(__name__)


class RunManager:
    """Starts, follows, cancels and resumes runs."""

    def __init__(
        self,
        *,
        engine: Engine,
        store: RunStore,
        settings: Settings,
        checkpointer: BaseCheckpointSaver[str] | None = None,
        queue: RunQueue | None = None,
    ) -> None:
        self.engine = engine
        self.store = store
        self.settings = settings
        self.checkpointer = checkpointer
        self.queue = queue or LocalRunQueue(settings.max_active_runs, settings.max_queued_runs)
        self._live: dict[str, LiveRun] = {}

    # -- counts --------------------------------------------------------------------------------
    @property
    def active(self) -> int:
        return self.queue.active

    @property
    def queued(self) -> int:
        return self.queue.waiting

    # -- starting ------------------------------------------------------------------------------
    async def submit(self, task: str, params: RunParams) -> RunRecord:
        """Create a run and queue it. Raises `QueueFull` when the queue is at its limit."""
        self.queue.admit()
        try:
            return await self._create(task, params)
        except BaseException:
            self.queue.withdraw()
            raise

    async def _create(self, task: str, params: RunParams) -> RunRecord:
        now = datetime.now(UTC)
        record = RunRecord(
            id=uuid.uuid4().hex,
            task=task,
            params=params.model_dump(mode="json"),
            status="queued",
            created_at=now,
            updated_at=now,
        )
        await self.store.create_run(record)
        live = LiveRun(record.id, [])
        self._live[record.id] = live
        await self._emit(live, RunStarted(run_id=record.id, task=task, params=record.params))
        live.task = asyncio.create_task(self._work(live, record, resume=False))
        logger.info("run=%s queued", record.id)
        return record

    async def resume_interrupted(self) -> list[str]:
        """Resume every run this service left unfinished (at start-up)."""
        resumed = []
        for record in await self.store.runs_with_status(("queued", "running", "interrupted")):
            history = await self.store.events_after(record.id, 0)
            if history and history[-1].type in TERMINAL:
                # It ended but its status write was lost: settle the status only.
                await self.store.set_status(record.id, _status_of(history[-1].type))
                continue
            live = LiveRun(record.id, history)
            self._live[record.id] = live
            self.queue.admit(force=True)
            live.task = asyncio.create_task(self._work(live, record, resume=True))
            resumed.append(record.id)
        if resumed:
            logger.info("resuming %d interrupted run(s)", len(resumed))
        return resumed

    async def _emit(self, live: LiveRun, event: Event) -> None:
        if live.draining and event.type == "cancelled":
            return  # a drain pauses the run; it is not the caller's cancellation
        async with live.lock:
            seq = live.last_seq + 1
            data = event.model_dump_json()
            await self.store.append_event(live.run_id, seq, event.type, data)
            await live.push(StoredEvent(seq=seq, type=event.type, data=data))

    async def _work(self, live: LiveRun, record: RunRecord, *, resume: bool) -> None:
        run_id = record.id
        result: RunResult | None = None

        async def sink(event: Event) -> None:
            await self._emit(live, event)

        try:
            async with self.queue.slot():
                await self.store.set_status(run_id, "running")
                params = RunParams.model_validate(record.params)
                if resume:
                    try:
                        result = await self.engine.resume(run_id, sink=sink)
                    except RunNotFound:  # queued before it ever checkpointed
                        result = await self.engine.run(
                            record.task, params, run_id=run_id, sink=sink, announce=False
                        )
                else:
                    result = await self.engine.run(
                        record.task, params, run_id=run_id, sink=sink, announce=False
                    )
        except asyncio.CancelledError:
            if live.draining:
                await self.store.set_status(run_id, "interrupted")
            else:
                if not live.terminal_sent:
                    await self._emit(live, RunCancelled(run_id=run_id))
                await self.store.set_status(run_id, "cancelled")
                await self._forget_checkpoint(run_id)
        except Exception:
            logger.exception("run=%s failed outside the engine", run_id)
            if not live.terminal_sent:
                await self._emit(
                    live,
                    RunError(
                        run_id=run_id,
                        code="internal",
                        message="the run failed on an internal error",
                    ),
                )
            await self.store.set_status(run_id, "failed")
        else:
            assert result is not None
            if not live.terminal_sent:  # the engine always ends with one; belt and braces
                await self._emit(
                    live, RunError(run_id=run_id, code="internal", message="the run ended early")
                )
            await self.store.set_status(run_id, result.status, result.model_dump(mode="json"))
            await self._forget_checkpoint(run_id)
        finally:
            self._live.pop(run_id, None)
            await live.close()

    async def _forget_checkpoint(self, run_id: str) -> None:
        # A finished run is kept in the run store; its checkpoints are only needed to resume.
        if self.checkpointer is not None:
            with contextlib.suppress(Exception):
                await self.checkpointer.adelete_thread(run_id)

    # -- following -----------------------------------------------------------------------------
    async def get(self, run_id: str) -> RunRecord:
        record = await self.store.get_run(run_id)
        if record is None:
            raise RunNotFound(f"no run {run_id}")
        return record

    async def tree(self, record: RunRecord) -> list[dict[str, Any]]:
        """The run's tree: stored with the result, or read live from the checkpoint."""
        if record.result is not None:
            return list(record.result.get("nodes", []))
        snapshot = await self.engine.graph.aget_state({"configurable": {"thread_id": record.id}})
        nodes = (snapshot.values or {}).get("nodes", {})
        return sorted(nodes.values(), key=by_id)

    async def follow(
        self, run_id: str, after: int, heartbeat_s: float
    ) -> AsyncIterator[StoredEvent | None]:
        """Events after `after`, live until the terminal one. Yields None when `heartbeat_s`
        passes without an event (time for a heartbeat)."""
        await self.get(run_id)
        live = self._live.get(run_id)
        if live is None:
            for event in await self.store.events_after(run_id, after):
                yield event
            return
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
                if event.type in TERMINAL:
                    return

    async def wait(self, run_id: str) -> RunRecord:
        """Wait until the run ends; its final record."""
        live = self._live.get(run_id)
        if live is not None:
            await live.finished.wait()
        return await self.get(run_id)

    # -- stopping ------------------------------------------------------------------------------
    async def cancel(self, run_id: str) -> RunRecord:
        """Cancel a run (idempotent; a finished run is left as it is)."""
        record = await self.get(run_id)
        live = self._live.get(run_id)
        if record.status in FINISHED or live is None or live.task is None:
            return record
        live.task.cancel()
        await asyncio.gather(live.task, return_exceptions=True)
        return await self.get(run_id)

    async def drain(self) -> None:
        """Stop every run for a shutdown; each resumes at the next start."""
        lives = list(self._live.values())
        for live in lives:
            live.draining = True
            if live.task is not None:
                live.task.cancel()
        await asyncio.gather(*(lv.task for lv in lives if lv.task), return_exceptions=True)
        if lives:
            logger.info("drained %d run(s); they resume at the next start", len(lives))


_STATUS_OF_TERMINAL: dict[str, RunStatus] = {
    "done": "done",
    "error": "failed",
    "cancelled": "cancelled",
}


def _status_of(terminal_type: str) -> RunStatus:
    return _STATUS_OF_TERMINAL[terminal_type]
