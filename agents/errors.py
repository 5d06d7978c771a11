"""Errors of the engine's run lifecycle (the rest of the hierarchy is `calls.errors`)."""

from __future__ import annotations

from calls.errors import LatsError


class PlanFailed(LatsError, code="plan"):
    """The planner produced no usable plan, even after being shown why its reply failed."""


class NoResult(LatsError, code="no_result"):
    """The search ended without any candidate answer: no research step succeeded."""


class RunNotFound(LatsError, code="not_found"):
    """No run (or no checkpoint for it) exists under the given id."""


class AwaitingApproval(LatsError, code="awaiting_approval"):
    """The run stopped after its planner: it waits for its plan to be approved, edited or
    rejected (`approve_plan`), its state checkpointed. Not a failure."""

    def __init__(self, run_id: str, steps: list[str]) -> None:
        super().__init__(f"run {run_id} waits for its plan to be approved")
        self.steps = steps


class StorageFull(LatsError, code="storage_full"):
    """The run's history or checkpoint could not be written: the store's disk is full. The
    run ends with this error (its end fits in space the store keeps in reserve)."""
