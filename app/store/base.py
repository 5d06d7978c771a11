"""What the service persists about runs and their events, behind one small interface.

Implementations: SQLite (embedded default) and Postgres. Both keep the same rules:

- a run is executed by the one worker that holds its **lease** (`owner`, `lease_until`); only
  a free or expired lease can be taken, atomically;
- every write of a run's history is **fenced**: it lands only while the writer still owns the
  run, else it raises `LeaseLost`;
- event ids come from the store (the next id after the stored ones), never from memory, under
  the unique (run, seq) key;
- the terminal event, the status and the result land in **one transaction** (`finish`); a
  store written before that was so is brought up to it when opened (app/store/upgrade.py);
- a run belongs to a **tenant** (the name of the API key that started it, never the key);
- a run **waiting** for a caller's answer (its plan's approval) is `interrupted` with
  `awaiting` set and no lease: no worker claims it until it is answered (`answer_waiting`), and
  the answer is kept with the run for whichever worker resumes it;
- a caller's steering **commands** for an open run wait in the store, numbered per run, until
  the run's search takes them (`commands_after`); a run that has ended takes none;
- a **thread** holds a sequence of runs of one tenant; deleting it deletes its runs, only when
  every one of them has ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from agents.result import RunResult
from agents.steering import SteerCommand
from app.errors import ServiceError

RunStatus = Literal["queued", "running", "done", "failed", "cancelled", "interrupted"]
RUN_STATUSES: tuple[RunStatus, ...] = (
    "queued",
    "running",
    "done",
    "failed",
    "cancelled",
    "interrupted",
)
FINISHED: frozenset[RunStatus] = frozenset({"done", "failed", "cancelled"})
UNFINISHED: tuple[RunStatus, ...] = ("queued", "running", "interrupted")


class LeaseLost(ServiceError, code="lease_lost"):
    """The writer no longer owns the run (its lease was taken over, or the run has ended)."""


class TooManyOpen(ServiceError, code="too_many_runs"):
    """The tenant already has `limit` unfinished runs: the new one was not stored."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"this key already has {limit} runs queued or running")
        self.limit = limit


class StoreUnavailable(ServiceError, code="store_unavailable"):
    """The store could not be reached (refused, dropped or too slow): nothing is known to
    have been written; the caller may try again later."""


@dataclass(frozen=True, slots=True)
class Lease:
    """Who this process is to the store (`owner`) and how long a lease it takes (`ttl_s`)."""

    owner: str
    ttl_s: float

    @property
    def renew_every_s(self) -> float:
        """How often a holder renews, and a worker sweeps for expired leases: a third of the
        lease time, so one missed round loses nothing."""
        return self.ttl_s / 3


class RunRecord(BaseModel):
    """One run as stored."""

    id: str
    task: str
    params: dict[str, Any]
    status: RunStatus
    created_at: datetime
    updated_at: datetime
    result: RunResult | None = Field(default=None, description="How the run ended, once it has.")
    owner: str | None = Field(default=None, description="The worker holding the lease.")
    tenant: str | None = Field(
        default=None,
        description="The name of the API key that started the run (never the key); None "
        "without keys.",
    )
    cancel_requested: bool = Field(
        default=False, description="A cancel was asked for; the owner ends the run."
    )
    thread_id: str | None = Field(
        default=None, description="The thread the run was asked on, if any."
    )
    awaiting: Literal["plan"] | None = Field(
        default=None, description="What the waiting run needs from a caller (none: not waiting)."
    )
    answer: dict[str, Any] | None = Field(
        default=None, description="The caller's answer the run resumes with, once given."
    )
    webhook: str | None = Field(
        default=None, description="The URL the run's end is POSTed to, if any."
    )
    delivery: WebhookDelivery | None = Field(
        default=None, description="The webhook delivery of the run's end, once begun."
    )
    takeovers: int = Field(
        default=0,
        description="How often the run was taken from a worker that stopped holding it "
        "without giving it back (a crash, an out-of-memory kill, a lease left to expire).",
    )

    def answer_fields(self) -> dict[str, Any]:
        """How the run ended, as `RunAnswer`'s fields; none while it has not."""
        return self.result.answer_fields() if self.result is not None else {}


class WebhookDelivery(BaseModel):
    """How the run's end was told to its webhook: the attempts so far and the last outcome."""

    webhook_id: str = Field(description="The delivery's `webhook-id` header (one per run end).")
    attempts: int = Field(description="POSTs made so far.")
    last_status: int | None = Field(
        default=None, description="The HTTP status of the last attempt; null when none answered."
    )
    last_error: str | None = Field(
        default=None, description="Why the last attempt failed, when it did without a status."
    )
    state: Literal["delivering", "delivered", "failed"] = Field(
        description="delivering: attempts go on; delivered: a 2xx answered; failed: gave up."
    )
    updated_at: datetime


class ThreadRecord(BaseModel):
    """One thread as stored: a sequence of runs on one subject, owned like a run."""

    id: str
    tenant: str | None = Field(
        default=None, description="The name of the API key that made the thread; None without keys."
    )
    created_at: datetime


class StoredEvent(BaseModel):
    """One persisted event: its per-run sequence number and JSON payload."""

    seq: int
    type: str
    data: str


class Held(BaseModel):
    """A run whose lease a worker renewed, with its pending cancel request."""

    run_id: str
    cancel_requested: bool


class RunStore(Protocol):
    """Runs, their leases and their event log."""

    async def create_run(
        self,
        record: RunRecord,
        *,
        started: str | None = None,
        lease: Lease | None = None,
        max_open: int | None = None,
    ) -> None:
        """Store a new run with its first event (`run_started` JSON) as id 1, held under
        `lease`, or free for any worker. With `max_open`, raises `TooManyOpen` instead when
        the run's tenant already has that many unfinished runs: the count and the insert are
        one atomic step, so concurrent creations never pass the limit."""

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> RunRecord | None:
        """Take the lease of one unfinished run if it is free or expired; the run, or None
        when another worker holds it or it has ended."""

    async def claim_next(self, owner: str, ttl_s: float) -> RunRecord | None:
        """Take the oldest unfinished run whose lease is free or expired, if any (a run
        waiting for an answer is not taken)."""

    async def claim_some(self, owner: str, ttl_s: float, limit: int) -> list[RunRecord]:
        """Take up to `limit` runs as `claim_next` takes one, in one trip to the store;
        oldest first."""

    async def renew(self, owner: str, ttl_s: float, run_ids: list[str]) -> list[Held]:
        """Extend the leases `owner` holds on `run_ids` (the runs it executes; a lease it
        no longer backs with a task expires and the run is claimed again); the runs among
        them it still holds."""

    async def release(self, run_id: str, owner: str, status: RunStatus) -> None:
        """Give the run back (a drain): set `status`, free the lease. Fenced."""

    async def mark_running_and_check_cancel(self, run_id: str, owner: str) -> bool:
        """Set status `running`; whether a cancel was requested meanwhile (the caller then
        ends the run as cancelled instead of running it). Fenced."""

    async def cancel_requests(self, owner: str) -> list[str]:
        """The runs `owner` holds that someone asked to cancel."""

    async def append_event(self, run_id: str, owner: str, type_: str, data: str) -> int:
        """Append a non-terminal event with the next id; the id. Fenced."""

    async def append_events(
        self, run_id: str, owner: str, events: Sequence[tuple[str, str]]
    ) -> list[int]:
        """Append non-terminal events (type, data), in order, with consecutive ids in one
        transaction: all of them or none; their ids. Fenced."""

    async def finish(
        self, run_id: str, owner: str, type_: str, data: str, result: RunResult
    ) -> int:
        """In one transaction: the terminal event (next id), the result with its status, and
        the lease freed. Fenced; the terminal event's id."""

    async def pause(self, run_id: str, owner: str, type_: str, data: str, awaiting: str) -> int:
        """In one transaction: the event the run stops on (next id), the run `interrupted`
        and `awaiting` an answer, its lease freed. Fenced; the event's id."""

    async def answer_waiting(self, run_id: str, answer: dict[str, Any]) -> bool:
        """Give a waiting run its answer and queue it for any worker; False when the run is
        not waiting (never was, answered already, or ended)."""

    async def add_command(
        self, run_id: str, command: str, node_id: str, step: str | None, by: str | None
    ) -> int | None:
        """Store a steering command for an unfinished run; its id (1, 2, … per run), or None
        when the run has ended (or does not exist)."""

    async def commands_after(self, run_id: str, after: int) -> list[SteerCommand]:
        """The run's steering commands with an id greater than `after`, oldest first."""

    async def record_delivery(self, run_id: str, delivery: WebhookDelivery) -> None:
        """Store how the run's webhook delivery stands (whichever process delivers it; not
        fenced: the run has ended and no lease is held)."""

    async def request_cancel(self, run_id: str) -> None:
        """Flag the run for cancellation (its owner, or the next claimer, ends it)."""

    async def count_unclaimed(self) -> int:
        """Unfinished runs whose lease is free or expired: those waiting for a worker (not
        those waiting for a caller's answer)."""

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(
        self, *, status: RunStatus | None, limit: int, offset: int, tenant: str | None = None
    ) -> list[RunRecord]:
        """A page of runs, newest first; only `tenant`'s when given."""

    async def count_open(self, tenant: str | None) -> int:
        """How many runs of `tenant` are unfinished (queued, running or interrupted)."""

    async def events_after(
        self, run_id: str, after: int, limit: int | None = None
    ) -> list[StoredEvent]:
        """The run's events after id `after`, in order; at most `limit` of them."""

    async def last_seq(self, run_id: str) -> int: ...

    async def delete_run(self, run_id: str) -> bool:
        """Delete a finished run and its events; False when there is no such finished run
        (unfinished runs are never deleted)."""

    async def delete_ended_before(self, cutoff: datetime, limit: int) -> int:
        """Delete up to `limit` runs that finished before `cutoff`, with their events; how
        many."""

    async def create_thread(self, thread: ThreadRecord) -> None:
        """Store a new, empty thread."""

    async def get_thread(self, thread_id: str) -> ThreadRecord | None: ...

    async def list_threads(
        self, *, limit: int, offset: int, tenant: str | None = None
    ) -> list[ThreadRecord]:
        """A page of the threads (of `tenant` when given), newest first."""

    async def thread_runs(self, thread_id: str) -> list[RunRecord]:
        """The thread's runs, oldest first."""

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete the thread with its runs and their events, in one transaction; False (and
        nothing deleted) when one of its runs has not ended."""

    async def ping(self) -> None: ...
