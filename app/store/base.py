"""What the store keeps and what it raises: a run's statuses, the records of runs, threads,
events and webhook deliveries, the lease a process takes runs under, and the store's errors. The
store's interface, one protocol per concern, is app/store/protocols.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.params import RunParams
from agents.result import RunResult
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
    params: RunParams = Field(description="The run's parameters, validated when it was asked.")
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
