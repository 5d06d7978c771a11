"""What a call observer reads off one model or tool call (`calls.observers.CallObserver`), and
the subscriber that hears it: plain records, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.messages import ToolMessage

from calls.settings import Role


@dataclass(frozen=True, slots=True)
class ModelCall:
    """A model call as it starts: whose it is and which model answers it. `key` is
    LangChain's run id of the call, `parent` that of the run it was made in."""

    key: UUID
    parent: UUID | None
    run_id: str
    node_id: str | None
    role: Role
    model: str
    provider: str
    started: float


@dataclass(frozen=True, slots=True)
class ModelReading:
    """A finished or failed model call: what it cost (nothing for a cache hit), how long it
    took and, if it failed, the error's type name and whether it was a rate limit."""

    call: ModelCall
    seconds: float
    cache_hit: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    error: str | None = None
    rate_limited: bool = False


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as it starts; `call_id` is the model's id of the tool call, if it gave one."""

    key: UUID
    run_id: str
    node_id: str | None
    name: str
    args: dict[str, Any]
    call_id: str | None
    started: float


@dataclass(frozen=True, slots=True)
class ToolReading:
    """A finished or failed tool call. `error_kind` is the tool's own word for its failure
    (or the raised error's type name), None when it gave none; `output` is what it returned
    (a `ToolMessage` with its artifact, for a tool of ours), None when it raised."""

    call: ToolCall
    seconds: float
    ok: bool
    error_kind: str | None
    output: Any = None


class CallSubscriber:
    """Hears the readings of calls; every hook does nothing unless overridden."""

    async def model_started(self, call: ModelCall) -> None:
        """A model call starts (the owner may refuse it by raising)."""

    async def model_ended(self, reading: ModelReading) -> None:
        """A model call finished or failed."""

    async def tool_started(self, call: ToolCall) -> None:
        """A tool call starts."""

    async def tool_ended(self, reading: ToolReading) -> None:
        """A tool call finished or failed."""

    def rate_limit_changed(self, model: str, value: float) -> None:
        """The adaptive rate limit for `model` is now `value` requests per second."""

    def model_retried(self, role: Role, model: str, reason: str) -> None:
        """A model call is retried; `reason` is e.g. "429", "5xx", "timeout"."""


def tool_outcome(output: Any) -> tuple[bool, str | None]:
    """Whether a tool call that returned `output` succeeded, and the tool's word for its
    failure: a `ToolMessage` with status "error" is a "tool_error" unless its artifact names
    the kind; an artifact with `ok` false failed with its `error_kind`, if any."""
    if not isinstance(output, ToolMessage):
        return True, None
    artifact = output.artifact if isinstance(output.artifact, dict) else {}
    ok = output.status != "error" and bool(artifact.get("ok", True))
    error_kind = None if ok else artifact.get("error_kind")
    if output.status == "error" and error_kind is None:
        error_kind = "tool_error"
    return ok, None if error_kind is None else str(error_kind)
