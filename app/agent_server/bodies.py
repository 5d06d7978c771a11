"""The LangGraph Agent Server's request bodies, read as plantree runs: the run parameters an
`assistant_id` presets, then those in `config.configurable` and `context`, the question in
`input.messages`, and a plan's answer in `command.resume` (an assistant's own bodies are in
assistant_bodies.py; its parameters are read as a run's are, `given_params`).

Fields the Agent Server has and plantree does not (time travel, run metadata, other multitask
strategies, webhooks and schedules through this API) are refused as unknown fields (422), so a
client never believes a setting took effect when it did not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from agents.nodes.approval import PlanDecision
from agents.params import RunParams
from app.access.assistants import AssistantNotFound
from app.http.presets import PRESETS
from app.http.schemas import MAX_TASK_CHARS

GRAPH_ID = "plantree"
StreamModeName = Literal["values", "updates", "custom", "messages-tuple"]
STREAM_MODES: tuple[StreamModeName, ...] = ("values", "updates", "custom", "messages-tuple")
JOIN_MODES: tuple[StreamModeName, ...] = ("values", "updates", "custom")
"""The modes of a re-joined stream that names none (a run does not keep the ones it was
started with)."""
# Keys LangGraph itself puts in `configurable`; they are not run parameters.
_RUNTIME_KEYS = frozenset(
    {"thread_id", "run_id", "checkpoint_id", "checkpoint_ns", "assistant_id", "graph_id"}
)
UnknownAssistant = AssistantNotFound


class BadInput(ValueError):
    """A request whose question or answer cannot be read; `field` names where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _stored_none(what: str) -> AfterValidator:
    """Refuses metadata with anything in it: plantree does not store it."""

    def empty(value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value:
            raise ValueError(f"{what} is not stored by plantree; send none")
        return value

    return AfterValidator(empty)


ThreadMetadata = Annotated[dict[str, Any] | None, _stored_none("thread metadata")]
RunMetadata = Annotated[dict[str, Any] | None, _stored_none("run metadata")]


class ThreadCreate(BaseModel):
    """`POST /threads`: a new thread. plantree names its threads itself."""

    model_config = ConfigDict(extra="forbid")

    metadata: ThreadMetadata = Field(default=None, description="Must be empty.")


class ThreadSearch(BaseModel):
    """`POST /threads/search`: the caller's threads, newest first."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] | None = Field(default=None, max_length=100)
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    metadata: ThreadMetadata = None
    limit: int = Field(default=10, ge=1, le=100)
    offset: int = Field(default=0, ge=0, le=1_000_000)
    sort_by: Literal["created_at"] | None = None
    sort_order: Literal["desc"] | None = None


class HistoryRequest(BaseModel):
    """`POST /threads/{id}/history`: the thread's states, newest first (one per run)."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=10, ge=1, le=1000)
    before: str | dict[str, Any] | None = Field(
        default=None, description="A checkpoint (or its id): only states older than it."
    )

    def before_id(self) -> str | None:
        if isinstance(self.before, dict):
            value = self.before.get("checkpoint_id")
            return value if isinstance(value, str) else None
        return self.before


class RunConfig(BaseModel):
    """A run's `config`: only `configurable` means something to a search."""

    model_config = ConfigDict(extra="ignore")

    configurable: dict[str, Any] = Field(default_factory=dict)


class Command(BaseModel):
    """`command`: plantree's graph waits only for a plan's answer, so only `resume`."""

    model_config = ConfigDict(extra="forbid")

    resume: Any = None


class RunCreate(BaseModel):
    """`POST /threads/{id}/runs` and `…/runs/stream`."""

    model_config = ConfigDict(extra="forbid")

    assistant_id: str = GRAPH_ID
    input: dict[str, Any] | None = None
    command: Command | None = None
    config: RunConfig | None = None
    context: dict[str, Any] | None = None
    metadata: RunMetadata = Field(default=None, description="Must be empty.")
    stream_mode: StreamModeName | list[StreamModeName] = "values"
    stream_subgraphs: bool = Field(default=False, description="Accepted; there are none.")
    stream_resumable: bool = Field(default=True, description="Every stream is resumable.")
    durability: Literal["sync", "async", "exit"] | None = Field(
        default=None, description="Accepted; every step is checkpointed."
    )
    multitask_strategy: Literal["reject"] | None = None
    on_disconnect: Literal["continue"] | None = None
    if_not_exists: Literal["reject"] | None = None
    feedback_keys: list[str] | None = None
    langsmith_tracer: dict[str, Any] | None = None

    def modes(self) -> tuple[StreamModeName, ...]:
        modes = [self.stream_mode] if isinstance(self.stream_mode, str) else self.stream_mode
        return tuple(dict.fromkeys(modes)) or ("values",)


def preset(assistant_id: str) -> dict[str, Any]:
    """The run parameters an assistant stands for; raises `UnknownAssistant`."""
    if assistant_id not in PRESETS:
        raise UnknownAssistant(f"no assistant {assistant_id!r}; use one of {', '.join(PRESETS)}")
    return dict(PRESETS[assistant_id])


def given_params(config: RunConfig | None, context: Mapping[str, Any] | None) -> dict[str, Any]:
    """The parameters of `config.configurable`, then `context` (later ones win), without
    LangGraph's own keys; unchecked."""
    configurable = config.configurable if config else {}
    return {
        **{k: v for k, v in configurable.items() if k not in _RUNTIME_KEYS},
        **(context or {}),
    }


def run_params(body: RunCreate, preset_values: Mapping[str, Any] | None = None) -> RunParams:
    """The assistant's parameters (`preset_values`: a user assistant's; without them, the
    preset the body names), then `config.configurable`, then `context` (later ones win);
    raises `UnknownAssistant`, or pydantic's `ValidationError` for a parameter out of
    bounds."""
    base = preset(body.assistant_id) if preset_values is None else preset_values
    return RunParams(**{**base, **given_params(body.config, body.context)})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        return "".join(str(p) for p in parts if p)
    return ""


def _is_human(message: Mapping[str, Any]) -> bool:
    return message.get("type") in ("human", "user") or message.get("role") in ("human", "user")


def question(run_input: Mapping[str, Any] | None) -> str:
    """The question of a run's `input`: the last human message of `messages` (LangChain
    dicts or OpenAI-style `role`/`content`), else `task`; raises `BadInput`."""
    run_input = run_input or {}
    messages = run_input.get("messages")
    text = ""
    if isinstance(messages, Sequence) and not isinstance(messages, str):
        humans = [m for m in messages if isinstance(m, Mapping) and _is_human(m)]
        text = _text(humans[-1].get("content")) if humans else ""
    elif isinstance(messages, str):
        text = messages
    elif isinstance(run_input.get("task"), str):
        text = run_input["task"]
    text = text.strip()
    if not text:
        raise BadInput("input", "the input holds no question: send a human message")
    if len(text) > MAX_TASK_CHARS:
        raise BadInput("input", f"the question is over {MAX_TASK_CHARS} characters")
    return text


def plan_decision(resume: Any) -> PlanDecision:
    """A plan's answer from `command.resume`: `{"action": …, "steps": …}` as in POST
    /runs/{id}/resume, `"approve"` / `"reject"`, `true` / `false`, or a list of steps (an
    edit); raises `BadInput` or pydantic's `ValidationError`."""
    if isinstance(resume, bool):
        return PlanDecision(action="approve" if resume else "reject")
    if isinstance(resume, str) and resume in ("approve", "reject"):
        return PlanDecision(action=resume)
    if isinstance(resume, list):
        return PlanDecision(action="edit", steps=resume)
    if isinstance(resume, dict):
        return PlanDecision(**resume)
    raise BadInput("command", 'resume is {"action": "approve" | "edit" | "reject", "steps": [...]}')
