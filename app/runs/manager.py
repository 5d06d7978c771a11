"""The run manager: the service's one entry to the run lifecycle, composed of one role each:

- leases and claiming (app/runs/lease.py, app/runs/claiming.py): which worker owns which run;
- execution (app/runs/execution.py): the owner's task per run and its single history writer;
- following (app/runs/following.py): readers of any run, wherever it executes;
- cancelling (app/runs/cancelling.py): stopping a run from any process.

A process is an API, a worker, or both (`worker=False`: API only). Runs submitted to a process
with a worker are owned by it from the start; an API-only process stores them for any worker
to claim.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict, Unpack

from langgraph.checkpoint.base import BaseCheckpointSaver

from agents import observers
from agents.engine import Engine
from agents.errors import RunNotFound
from agents.events import RunError, RunStarted
from agents.params import RunParams
from app.errors import ServiceError
from app.runs.cancelling import Canceller
from app.runs.claiming import Claimer
from app.runs.commands import SignalledCommands
from app.runs.execution import RunDriver
from app.runs.following import Broken, Follower, Paused, RunItem, item_of
from app.runs.lease import LeaseKeeper, worker_id
from app.runs.live import LiveRun, LiveRuns, Phase
from app.runs.options import RunOptions
from app.runs.queue import LocalRunQueue, RunQueue, SharedAdmission
from app.runs.retention import Retention
from app.runs.run_tools import check_collections
from app.runs.signals import LocalSignals
from app.settings import Settings
from app.store.base import FINISHED, Lease, RunRecord, StoredEvent, ThreadRecord
from app.store.outage import StoreOutage
from app.store.protocols import RunStore
from app.webhooks.notifier import WebhookNotifier

logger = logging.getLogger(__name__)
CANCEL_WAIT_S = 10.0
MAX_COMMANDS_PER_RUN = 200  # steering commands one run takes (each is an event of its log)


class RunEnded(ServiceError, code="run_ended"):
    """The run has ended: it takes no more commands."""


class TooManyCommands(ServiceError, code="too_many_commands"):
    """The run has taken its most steering commands."""


class RunNotWaiting(ServiceError, code="run_not_waiting"):
    """The run is not waiting for an answer (it never did, was answered already, or ended)."""


class RunPlace(TypedDict, total=False):
    """Where a new run goes besides its tenant, each optional: the thread it continues, the
    URL its end is POSTed to (the keywords of every way to submit a run)."""

    thread_id: str | None
    webhook: str | None


@dataclass(frozen=True, slots=True)
class NewRun:
    """What a new run is made of."""

    task: str
    params: RunParams
    tenant: str | None
    thread_id: str | None = None
    webhook: str | None = None
    max_open: int | None = None  # the tenant's most unfinished runs (the store enforces it)


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
        signals: LocalSignals | None = None,
        worker: bool = True,
        owner: str | None = None,
    ) -> None:
        self.engine = engine
        self.store = store
        self.settings = settings
        self.worker = worker
        self.lease = Lease(owner or worker_id(), settings.lease_ttl_s)
        self.queue = queue or LocalRunQueue(settings.max_active_runs, settings.max_queued_runs)
        self.signals = signals or LocalSignals()
        self.admission = SharedAdmission(store.leases, settings.max_queued_runs)
        self.lives = LiveRuns()
        self.options = RunOptions.from_settings(settings, [tool.name for tool in engine.tools])
        self.notifier = WebhookNotifier.from_settings(store, settings)
        self.driver = RunDriver(
            engine=engine,
            store=store,
            owner=self.lease.owner,
            queue=self.queue,
            checkpointer=checkpointer,
            wake=self.signals.event_written,
            tool_settings=settings,
            ended=self.notifier.run_ended,
            outage=StoreOutage(settings.store_outage_s),
        )
        self.follower = Follower(store, self.signals, self.lives, settings.sse_heartbeat_s)
        self.canceller = Canceller(
            store=store,
            lease=self.lease,
            lives=self.lives,
            signals=self.signals,
            driver=self.driver,
            follower=self.follower,
        )
        self.leases = LeaseKeeper(store, self.lease, self.lives, self.lives.cancel)
        self.claimer = Claimer(store, self.lease, self.queue, self.signals, self._adopt)
        days = settings.run_retention_days
        self.retention = Retention(store, days) if worker and days is not None else None

    # -- process lifecycle -----------------------------------------------------------------
    async def start(self) -> None:
        """Listen for signals, keep leases, and (a worker) claim the runs nobody holds."""
        commands = self.engine.commands
        await self.signals.start(
            on_cancel=self.lives.cancel,
            check_cancels=self.check_cancels,
            on_command=commands.sent if isinstance(commands, SignalledCommands) else None,
        )
        self.leases.start()
        if self.worker:
            await self.claimer.start()
        if self.retention is not None:
            await self.retention.start()
        logger.info(
            "owner=%s started (%s)", self.lease.owner, "worker" if self.worker else "api only"
        )

    async def stop(self) -> None:
        """Stop claiming, drain the runs held here (they resume elsewhere or at the next
        start), stop renewing and listening."""
        await self.claimer.stop()
        if self.retention is not None:
            await self.retention.stop()
        await self.drain()
        await self.notifier.aclose(self.settings.shutdown_grace_s)
        await self.leases.stop()
        await self.signals.close()

    async def check_cancels(self) -> None:
        """Cancel the runs held here that someone flagged (a signal from another process)."""
        for run_id in await self.store.leases.cancel_requests(self.lease.owner):
            self.lives.cancel(run_id)

    # -- starting ------------------------------------------------------------------------------
    async def submit(
        self, task: str, params: RunParams, tenant: str | None = None, **place: Unpack[RunPlace]
    ) -> RunRecord:
        """Create a run of `tenant` (an API key's name), on `place`'s `thread_id` when given,
        its end POSTed to its `webhook` when given. A worker process with a free slot takes it
        on at once; otherwise it is stored for whichever worker frees up first, if fewer than
        `max_queued_runs` runs already wait in the store (else `QueueFull`). A model, tool or
        webhook the server does not accept raises `RunOptionRefused`."""
        record, _ = await self.submit_with_event(NewRun(task, params, tenant, **place))
        return record

    async def submit_with_event(self, new: NewRun) -> tuple[RunRecord, StoredEvent]:
        """`submit` of `new`, with the run's first event (`run_started`) as stored: a stream
        of the new run begins with it instead of reading it back. With `new.max_open`, raises
        `TooManyOpen` (nothing stored) when its tenant already has that many unfinished
        runs."""
        self.options.check_params(new.params)
        await self.options.check_webhook(new.webhook)
        await check_collections(self.store.collections, new.tenant, new.params)
        if not (self.worker and self.queue.has_room):
            await self.admission.admit()
            return await self._create(new, lease=None)
        self.queue.admit()
        try:
            record, started = await self._create(new, lease=self.lease)
        except BaseException:
            self.queue.withdraw()
            raise
        self._begin(record, [started], resume=False)
        return record, started

    async def _create(self, new: NewRun, *, lease: Lease | None) -> tuple[RunRecord, StoredEvent]:
        """The run's record and first event, stored held by `lease` or free for any worker."""
        owner = lease.owner if lease is not None else None
        now = datetime.now(UTC)
        record = RunRecord(
            id=uuid.uuid4().hex,
            task=new.task,
            params=new.params,
            status="queued",
            created_at=now,
            updated_at=now,
            owner=owner,
            tenant=new.tenant,
            thread_id=new.thread_id,
            webhook=new.webhook,
        )
        event = RunStarted.of(record.id, new.task, new.params)
        started = StoredEvent(seq=1, type="run_started", data=event.model_dump_json())
        began = time.perf_counter()
        await self.store.runs.create(
            record, started=started.data, lease=lease, max_open=new.max_open
        )
        observers.written(event, record.id, time.perf_counter() - began)
        if owner is None:
            self.signals.announce_queued()
        logger.info("run=%s queued (owner=%s, caller=%s)", record.id, owner, new.tenant or "local")
        return record, started

    def _begin(self, record: RunRecord, history: list[StoredEvent], *, resume: bool) -> None:
        async def body(live: LiveRun) -> None:
            await self.driver.execute(live, record, resume=resume)

        self.lives.launch(record.id, history, body, after=self._closed)

    def _closed(self, live: LiveRun) -> None:
        if live.closed_from is Phase.DRAINING:
            self.signals.announce_queued()  # given back: for the other workers
        if self.worker:
            self.claimer.slot_freed()

    async def _adopt(self, record: RunRecord) -> None:
        """Take on a run just claimed: fail it if its workers died holding it more than
        `max_takeovers` times, else resume it."""
        if record.takeovers > self.settings.max_takeovers:
            logger.error(
                "run=%s: its worker died holding it %d times; failed, not run again",
                record.id,
                record.takeovers,
            )
            live = self.lives.detached(record.id)
            error = RunError(
                run_id=record.id,
                code="worker_lost",
                message=f"the run's worker stopped while running it {record.takeovers} times "
                "(a crash or an out-of-memory kill, say); it is not run again",
            )
            await self.driver.end_failed(live, self.driver.writer(live), error)
            return
        previous = self.lives.get(record.id)
        if previous is not None and previous.holds_lease:
            # Its lease lapsed here while the store was unreachable and nobody else took it:
            # the claim renewed it, and the run goes on in the task it has.
            logger.info("run=%s claimed back by its own worker; it goes on here", record.id)
            return
        if previous is not None:
            # Answered as soon as its wait was stored, or stopped here by a store outage: its
            # task is still on its way out.
            await previous.wait_closed()
        self.queue.admit(force=True)
        self._begin(record, await self.store.events.after(record.id, 0), resume=True)

    # -- following -----------------------------------------------------------------------------
    async def get(self, run_id: str) -> RunRecord:
        record = await self.store.runs.get(run_id)
        if record is None:
            raise RunNotFound(f"no run {run_id}")
        return record

    async def tree(self, record: RunRecord) -> list[dict[str, Any]]:
        """The run's tree: stored with the result, or read live from the checkpoint."""
        if record.result is not None:
            return [dict(node) for node in record.result.nodes]
        return [dict(node) for node in await self.engine.tree(record.id)]

    def follow(self, run_id: str, after: int) -> AsyncIterator[RunItem]:
        """The run's items after event `after` (app/runs/following.py), live until its end;
        a run that does not exist (or no longer does) ends with `run_deleted`."""
        return self.follower.follow(run_id, after)

    async def follow_new(self, run_id: str, first: StoredEvent) -> AsyncIterator[RunItem]:
        """`follow` of a run `submit_with_event` just created here: its first event as
        written, then the rest (the run is known to exist, so nothing is read to check it)."""
        yield item_of(first)
        async for item in self.follower.follow(run_id, first.seq):
            yield item

    async def wait(self, run_id: str) -> RunRecord:
        """Wait until the run ends, or stops to wait for a caller's answer; its record."""
        live = self.lives.get(run_id)
        if live is not None:
            await live.finished.wait()
            record = await self.get(run_id)
            if record.status in FINISHED or record.awaiting is not None:
                return record
        async for item in self.follower.follow(run_id, 0):
            if isinstance(item, Paused):
                record = await self.get(run_id)
                if record.awaiting is not None:
                    return record
            elif isinstance(item, Broken) and item.cause is not None:
                raise item.cause
        return await self.get(run_id)

    # -- answering a waiting run -------------------------------------------------------------
    async def answer(self, run_id: str, answer: dict[str, Any]) -> RunRecord:
        """Give a run waiting for its plan's approval its answer; it is queued for any worker
        (this one, when it has a free slot), which resumes it from its checkpoint. Raises
        `RunNotWaiting` when it is not waiting."""
        if not await self.store.waits.answer(run_id, answer):
            raise RunNotWaiting(f"run {run_id} is not waiting for an answer")
        logger.info("run=%s answered (%s); queued to resume", run_id, answer.get("action"))
        self.signals.announce_queued()
        return await self.get(run_id)

    # -- steering -----------------------------------------------------------------------------
    async def steer(
        self, run_id: str, command: str, node_id: str, step: str | None, by: str | None
    ) -> int:
        """Queue a steering command for the run's next scheduling round; its id. Raises
        `RunEnded` once the run has ended, `TooManyCommands` past `MAX_COMMANDS_PER_RUN` (two
        commands sent at the same instant may both pass the count)."""
        if len(await self.store.commands.after(run_id, 0)) >= MAX_COMMANDS_PER_RUN:
            raise TooManyCommands(f"run {run_id} has taken {MAX_COMMANDS_PER_RUN} commands")
        command_id = await self.store.commands.add(run_id, command, node_id, step, by)
        if command_id is None:
            raise RunEnded(f"run {run_id} has ended; it takes no more commands")
        await self.signals.publish_command(run_id)
        logger.info("run=%s command %d: %s %s (by %s)", run_id, command_id, command, node_id, by)
        return command_id

    # -- threads --------------------------------------------------------------------------------
    async def create_thread(self, tenant: str | None) -> ThreadRecord:
        """A new, empty thread of `tenant`."""
        thread = ThreadRecord(id=uuid.uuid4().hex, tenant=tenant, created_at=datetime.now(UTC))
        await self.store.threads.create(thread)
        logger.info("thread=%s created (caller=%s)", thread.id, tenant or "local")
        return thread

    # -- stopping ------------------------------------------------------------------------------
    async def cancel(self, run_id: str) -> RunRecord:
        """Cancel a run (idempotent; a finished run is left as it is)."""
        await self.canceller.cancel(run_id, CANCEL_WAIT_S)
        return await self.get(run_id)

    async def drain(self) -> None:
        """Stop every run held here for a shutdown; each resumes at the next start (or on
        another worker)."""
        drained = await self.lives.drain()
        if drained:
            logger.info("drained %d run(s); they resume at the next start", drained)
