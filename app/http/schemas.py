"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.nodes.approval import PlanDecision
from agents.params import RunParams
from agents.result import RunAnswer
from app.store.base import RunStatus, WebhookDelivery

MAX_TASK_CHARS = 4000
ID_PATTERN = r"^[A-Za-z0-9_-]+$"
NODE_ID_PATTERN = r"^n[0-9]+(\.[0-9]+)*$"
MAX_COMMAND_STEP_CHARS = 500
MAX_WEBHOOK_CHARS = 2048


def request_config(*examples: dict[str, Any]) -> ConfigDict:
    """A request body's model config: unknown fields refused, immutable, and strict (a JSON
    body's types are the schema's: "3" is not an integer, "true" not a boolean), with
    `examples` shown in the schema."""
    return ConfigDict(
        extra="forbid", frozen=True, strict=True, json_schema_extra={"examples": list(examples)}
    )


class SolveRequest(RunParams):
    """A task plus optional run parameters; every parameter has a default and bounds."""

    model_config = request_config(
        {
            "task": "Which transformer variants beat the original on long-context tasks?",
            "max_paths": 3,
            "max_candidates": 2,
        }
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

    webhook: str | None = Field(
        default=None,
        min_length=8,
        max_length=MAX_WEBHOOK_CHARS,
        pattern=r"^https?://",
        description="POST the run's end here, signed per Standard Webhooks (docs/security.md); "
        "a host that is or resolves to a loopback, link-local or private address is refused "
        "unless the server allows it. Needs LATS_WEBHOOK_SECRET on the server.",
    )

    def params(self) -> RunParams:
        """The run's parameters, as validated with the request (not validated again)."""
        names = set(RunParams.model_fields)
        values = {name: getattr(self, name) for name in names}
        return RunParams.model_construct(self.model_fields_set & names, **values)


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
    webhook: str | None = Field(default=None, description="Where the run's end is POSTed.")
    delivery: WebhookDelivery | None = Field(
        default=None, description="How the webhook delivery of the run's end stands."
    )
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

    model_config = request_config(
        {"action": "approve"},
        {"action": "edit", "steps": ["Find the 2024 figures", "Compare them"]},
        {"action": "reject"},
    )


class CommandRequest(BaseModel):
    """A steering command for a running search, applied at its next scheduling round."""

    model_config = request_config(
        {"command": "prune", "node_id": "n1.2"},
        {"command": "boost", "node_id": "n1.3"},
        {"command": "add_step", "node_id": "n1", "step": "Check the 2024 figures"},
    )

    command: Literal["prune", "boost", "add_step"] = Field(
        description="prune: the node and its subtree stop and never run; boost: the node's "
        "prior is raised to 1 so the search prefers it; add_step: a new child with `step` "
        "under the node, which must be done."
    )
    node_id: str = Field(
        min_length=2, max_length=200, pattern=NODE_ID_PATTERN, description="A node id, e.g. n1.2."
    )
    step: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_COMMAND_STEP_CHARS,
        description="The new step's text (add_step only).",
    )

    @model_validator(mode="after")
    def _step_with_add_step_only(self) -> CommandRequest:
        if (self.command == "add_step") != (self.step is not None):
            raise ValueError("`step` is given with `add_step`, and only with it")
        if self.step is not None and not self.step.strip():
            raise ValueError("`step` has text")
        return self


class CommandAccepted(BaseModel):
    run_id: str
    command_id: int = Field(description="The command's number in the run (1, 2, …).")
    events: str = Field(description="Where its `steered` event will appear (SSE).")
