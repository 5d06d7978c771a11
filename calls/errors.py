"""The error hierarchy the core raises: its base, and the errors of model and tool calls and
budgets. Only `app/` translates them into HTTP statuses and SSE events."""

from __future__ import annotations

from typing import Any, Literal

BudgetReason = Literal["budget_llm_calls", "budget_tokens"]


class CodedError(Exception):
    """An error with a stable machine-readable `code`, the base of the core's errors
    (`LatsError`) and of the service's (`app.errors.ServiceError`).

    A subclass names its code in its bases, `class E(Base, code="name")`; without one it keeps
    its base's.
    """

    code = "error"

    def __init_subclass__(cls, *, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code


class LatsError(CodedError, code="internal"):
    """Base of every error the engine raises on purpose.

    `code` is a stable machine-readable name; `str(error)` is a message safe to show a user
    (it never carries provider payloads, keys or stack traces).
    """


class ConfigError(LatsError, code="config"):
    """The process is misconfigured (unknown model string, missing key, unknown tool)."""


class ModelError(LatsError, code="model"):
    """A model call failed after its retries, or its output could not be used."""


class ToolError(LatsError, code="tool"):
    """A research tool failed; tools turn these into observations the model can read."""


class BudgetExhausted(LatsError, code="budget"):
    """A run budget would be exceeded by the next call; `reason` is the run's stop reason."""

    def __init__(self, reason: BudgetReason, message: str | None = None) -> None:
        super().__init__(message or f"budget exhausted: {reason}")
        self.reason = reason
