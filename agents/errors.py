"""Errors of the engine's run lifecycle (the rest of the hierarchy is `calls.errors`)."""

from __future__ import annotations

from calls.errors import LatsError


class PlanFailed(LatsError):
    """The planner produced no usable plan, even after being shown why its reply failed."""

    code = "plan"


class NoResult(LatsError):
    """The search ended without any candidate answer: no research step succeeded."""

    code = "no_result"


class RunNotFound(LatsError):
    """No run (or no checkpoint for it) exists under the given id."""

    code = "not_found"


class AwaitingApproval(LatsError):
    """The run stopped after its planner: it waits for its plan to be approved, edited or
    rejected (`approve_plan`), its state checkpointed. Not a failure."""

    code = "awaiting_approval"

    def __init__(self, run_id: str, steps: list[str]) -> None:
        super().__init__(f"run {run_id} waits for its plan to be approved")
        self.steps = steps


class RunNotFinished(LatsError):
    """The run has not ended, so it cannot be deleted (cancel it first)."""

    code = "run_not_finished"


class StorageFull(LatsError):
    """The run's history or checkpoint could not be written: the store's disk is full. The
    run ends with this error (its end fits in space the store keeps in reserve)."""

    code = "storage_full"
