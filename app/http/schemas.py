"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.nodes.approval import PlanDecision
from agents.params import RunParams
from agents.result import RunAnswer
from app.store.base import RunStatus

MAX_TASK_CHARS = 4000
ID_PATTERN = r"^[A-Za-z0-9_-]+$"


class SolveRequest(RunParams):
    """A task plus optional run parameters; every parameter has a default and bounds."""

    # strict: a JSON body's types are the schema's ("3" is not an integer, "true" not a boolean)
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "task": "Which transformer variants beat the original on long-context tasks?",
                    "max_paths": 3,
                    "max_candidates": 2,
                }
            ]
        },
    )

    task: str = Field(min_length=1, max_length=MAX_TASK_CHARS, description="The research question.")
    thread_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=ID_PATTERN,
        description="Ask on this thread (POST /threads): the run sees what the thread's earlier "
        "runs found (their questions, answers, citations and the evidence most relevant to this "
        "task) and searches only for what is new.",
    )

    def params(self) -> RunParams:
        return RunParams.model_validate(self.model_dump(exclude={"task", "thread_id"}))


class RunAccepted(BaseModel):
    run_id: str
    status: RunStatus
    events: str = Field(description="Where to follow the run's events (SSE).")


class RunView(RunAnswer):
    """A run as the API shows it: how it ended (`RunAnswer`, once it has), and what it is."""

    run_id: str
    status: RunStatus
    awaiting: Literal["plan"] | None = Field(
        default=None,
        description="What an `interrupted` run waits for from a caller: `plan`, its plan's "
        "approval (POST /runs/{id}/resume); null when it waits for nothing.",
    )
    thread_id: str | None = Field(default=None, description="The thread it was asked on.")
    task: str
    params: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    nodes: list[dict[str, Any]] | None = Field(
        default=None, description="The tree (node records); left out of run lists."
    )


class RunList(BaseModel):
    runs: list[RunView]
    next_offset: int | None = Field(description="Offset of the next page; null on the last.")


class ErrorBody(BaseModel):
    """Every error response: a stable code and a message safe to show."""

    code: str
    message: str
    fields: list[dict[str, Any]] | None = None


class ThreadView(BaseModel):
    """A thread and its runs, oldest first (without their trees)."""

    thread_id: str
    created_at: datetime
    runs: list[RunView] = Field(default_factory=list)


class ResumeRequest(PlanDecision):
    """The answer to a run waiting for its plan's approval."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        json_schema_extra={
            "examples": [
                {"action": "approve"},
                {"action": "edit", "steps": ["Find the 2024 figures", "Compare them"]},
                {"action": "reject"},
            ]
        },
    )
