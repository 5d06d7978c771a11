"""Errors of the engine's run lifecycle (the rest of the hierarchy is `calls.errors`)."""

from __future__ import annotations

import asyncio

from agents.events import PlanInterrupt, RunCancelled
from calls.errors import LatsError


class PlanFailed(LatsError, code="plan"):
    """The planner produced no usable plan, even after being shown why its reply failed."""


class NoResult(LatsError, code="no_result"):
    """The search ended without any candidate answer: no research step succeeded."""


class RunNotFound(LatsError, code="not_found"):
    """No run (or no checkpoint for it) exists under the given id."""


class AwaitingApproval(LatsError, code="awaiting_approval"):
    """The run stopped after its planner: it waits for its plan to be approved, edited or
    rejected (`approve_plan`), its state checkpointed. Not a failure. `event` is the
    `interrupt` the run stops on."""

    def __init__(self, event: PlanInterrupt) -> None:
        super().__init__(f"run {event.run_id} waits for its plan to be approved")
        self.event = event


class StorageFull(LatsError, code="storage_full"):
    """The run's history or checkpoint could not be written: the store's disk is full. The
    run ends with this error (its end fits in space the store keeps in reserve)."""


_CANCEL_EVENT = "run_cancelled_event"


def with_cancel_event(
    cancel: asyncio.CancelledError, event: RunCancelled
) -> asyncio.CancelledError:
    """`cancel`, the very exception (a cancel stays exactly a `CancelledError` for asyncio),
    carrying the `cancelled` event the search ended on: a search hands back its end with its
    cancel as it does with its result."""
    setattr(cancel, _CANCEL_EVENT, event)
    return cancel


def cancel_event(cancel: BaseException) -> RunCancelled | None:
    """The `cancelled` event a search's cancel carries (`with_cancel_event`), if any."""
    event = getattr(cancel, _CANCEL_EVENT, None)
    return event if isinstance(event, RunCancelled) else None
