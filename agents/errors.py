"""Errors of the engine's run lifecycle (the rest of the hierarchy is `calls.errors`)."""

from __future__ import annotations

from calls.errors import LatsError


class RunNotFound(LatsError):
    """No run (or no checkpoint for it) exists under the given id."""

    code = "not_found"


class RunNotFinished(LatsError):
    """The run has not ended, so it cannot be deleted (cancel it first)."""

    code = "run_not_finished"
