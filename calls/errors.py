"""The error hierarchy the core raises: its base, and the errors of model and tool calls and
budgets. Only `app/` translates them into HTTP statuses and SSE events."""

from __future__ import annotations

from typing import Literal

BudgetReason = Literal["budget_llm_calls", "budget_tokens"]


class LatsError(Exception):
    """Base of every error the engine raises on purpose.

    `code` is a stable machine-readable name; `str(error)` is a message safe to show a user
    (it never carries provider payloads, keys or stack traces).
    """

    code = "internal"


class ConfigError(LatsError):
    """The process is misconfigured (unknown model string, missing key, unknown tool)."""

    code = "config"


class ModelError(LatsError):
    """A model call failed after its retries, or its output could not be used."""

    code = "model"


class ToolError(LatsError):
    """A research tool failed; tools turn these into observations the model can read."""

    code = "tool"


class BudgetExhausted(LatsError):
    """A run budget would be exceeded by the next call; `reason` is the run's stop reason."""

    code = "budget"

    def __init__(self, reason: BudgetReason, message: str | None = None) -> None:
        super().__init__(message or f"budget exhausted: {reason}")
        self.reason = reason
