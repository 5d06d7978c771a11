"""How a run ended: the one typed result the engine returns, the run store keeps, and every
reader (the run routes, the OpenAI-compatible endpoint, the MCP server, the CLI) reads."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from agents.answer import EndFields
from agents.events import EndStatus, Event, RunDone
from agents.state import ErrorInfo, NodeRecord, RunState, StopReason
from agents.tree import by_id


class RunAnswer(EndFields):
    """What a finished run tells a reader, its tree aside: `done`'s fields, or its error."""

    error: ErrorInfo | None = None

    def answer_fields(self) -> dict[str, Any]:
        """The fields of `RunAnswer` alone, as plain data (for a view built from a result)."""
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

    def done_event(self) -> RunDone:
        """The `done` event of a run that ended with this answer."""
        return RunDone(run_id=self.run_id, **self.model_dump(include=set(EndFields.model_fields)))


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a search ended, handed back by the engine: its result, and the terminal event that
    tells it (`done`, `error`, or `cancelled` when its plan was rejected)."""

    result: RunResult
    terminal: Event


def run_metrics(state: RunState) -> dict[str, Any]:
    """The accountant's counters plus what the tree itself tells."""
    nodes = state.get("nodes", {})
    by_status = Counter(n["status"] for n in nodes.values())
    return {
        **state.get("metrics", {}),
        "nodes": len(nodes),
        "nodes_by_status": dict(sorted(by_status.items())),
        "paths_completed": sum(1 for n in nodes.values() if n["answer"] is not None),
        "wall_s": state.get("elapsed_s", 0.0),
    }


def result_of(run_id: str, state: RunState) -> RunResult:
    """The result of a search whose graph ended in `state`."""
    final = state.get("final")
    nodes = sorted(state.get("nodes", {}).values(), key=by_id)
    common: dict[str, Any] = {
        "run_id": run_id,
        "stop_reason": state.get("stop_reason"),
        "metrics": run_metrics(state),
        "nodes": nodes,
        "first": state.get("first"),
    }
    if state.get("phase") == "done" and final is not None:
        return RunResult(status="done", **final, **common)
    if state.get("phase") == "rejected":
        return RunResult(status="cancelled", **common)
    error: ErrorInfo = {"code": "internal", "message": "the run ended without result"}
    return RunResult(status="failed", error=error, **common)
