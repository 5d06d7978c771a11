"""How a run ended: the one typed result the engine returns, the run store keeps, and every
reader (the run routes, the OpenAI-compatible endpoint, the MCP server, the CLI) reads."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from agents.events import ChosenBy, EndStatus, FirstAnswer
from agents.grounding.verify import GroundingFields
from agents.state import ErrorInfo, NodeRecord, Source, StopReason


class RunAnswer(GroundingFields):
    """What a finished run tells a reader, its tree aside."""

    answer: str | None = None
    partial: bool = Field(
        default=False, description="True when no path completed and the answer is best-effort."
    )
    chosen_id: str | None = None
    chosen_by: ChosenBy | None = Field(default=None, description="How the answer was chosen.")
    first: FirstAnswer | None = Field(
        default=None, description="The first verified answer (`answer_ready`), kept or not."
    )
    path: list[str] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    error: ErrorInfo | None = None
    reused_from: str | None = Field(
        default=None,
        description="The earlier run whose result answered this identical request, without a "
        "model call (agents/reuse.py).",
    )

    def answer_fields(self) -> dict[str, Any]:
        """The fields of `RunAnswer` alone, as plain data (for a view or an event built from a
        result)."""
        return self.model_dump(include=set(RunAnswer.model_fields))


class RunResult(RunAnswer):
    """How a run ended, with the whole tree."""

    run_id: str
    status: EndStatus
    nodes: list[NodeRecord] = Field(default_factory=list)

    @classmethod
    def failed(
        cls,
        run_id: str,
        code: str,
        message: str,
        *,
        metrics: dict[str, Any] | None = None,
        nodes: list[NodeRecord] | None = None,
        stop_reason: StopReason = "error",
    ) -> RunResult:
        """A run that ended on an error (`code`, and a `message` safe to show); `stop_reason`
        is a budget's when the budget ran out before a plan existed."""
        return cls(
            run_id=run_id,
            status="failed",
            stop_reason=stop_reason,
            error={"code": code, "message": message},
            metrics=metrics or {},
            nodes=nodes or [],
        )
