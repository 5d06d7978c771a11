"""Model and tool calls read off LangChain's callbacks into plain records, for the metrics
and the traces: which role and model, tokens, cache hits, errors, tool names and outcomes."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.outputs import LLMResult

from calls.observers import CallHandler
from calls.settings import Role
from calls.usage import call_cost


@dataclass
class ModelCall:
    run_id: str
    node_id: str | None
    role: Role
    model: str
    provider: str
    started: float
    input_tokens: int = 0
    output_tokens: int = 0
    cache_hit: bool = False
    error: str | None = None
    rate_limited: bool = False

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


@dataclass
class ToolCall:
    run_id: str
    node_id: str | None
    name: str
    call_id: str | None
    started: float
    ok: bool = True
    error: str | None = None

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


class CallListener(Protocol):
    def model_started(self, call: ModelCall, key: UUID) -> None: ...

    def model_ended(self, call: ModelCall, key: UUID) -> None: ...

    def tool_started(self, call: ToolCall, key: UUID) -> None: ...

    def tool_ended(self, call: ToolCall, key: UUID) -> None: ...


def is_rate_limit(error: BaseException) -> bool:
    """A provider's "too many requests" (HTTP 429, Gemini's RESOURCE_EXHAUSTED)."""
    for attr in ("code", "status_code", "status"):
        if getattr(error, attr, None) == 429:
            return True
    cause = error.__cause__
    return "RESOURCE_EXHAUSTED" in str(error) or (cause is not None and is_rate_limit(cause))


class CallWatcher(CallHandler):
    """Rides along one model/agent call of a run and reports its model and tool calls (inline,
    in order, in the caller's task: a call's start precedes its end)."""

    def __init__(
        self, listener: CallListener, run_id: str, node_id: str | None, role: Role
    ) -> None:
        self.listener = listener
        self.run_id = run_id
        self.node_id = node_id
        self.role = role
        self._models: dict[UUID, ModelCall] = {}
        self._tools: dict[UUID, ToolCall] = {}

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        meta = metadata or {}
        params = kwargs.get("invocation_params") or {}
        model = meta.get("ls_model_name") or params.get("model") or params.get("_type") or "?"
        call = ModelCall(
            run_id=self.run_id,
            node_id=self.node_id,
            role=self.role,
            model=str(model).removeprefix("models/"),
            provider=str(meta.get("ls_provider") or params.get("_type") or "?"),
            started=time.perf_counter(),
        )
        self._models[run_id] = call
        self.listener.model_started(call, run_id)

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._models.pop(run_id, None)
        if call is None:
            return
        cost = call_cost(response)
        call.cache_hit = cost.cache_hit
        call.input_tokens += cost.input_tokens
        call.output_tokens += cost.output_tokens
        self.listener.model_ended(call, run_id)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._models.pop(run_id, None)
        if call is None:
            return
        call.error = type(error).__name__
        call.rate_limited = is_rate_limit(error)
        self.listener.model_ended(call, run_id)

    async def on_tool_start(
        self, serialized: dict[str, Any], input_str: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        call_id = (kwargs.get("inputs") or {}).get("tool_call_id") if kwargs.get("inputs") else None
        call = ToolCall(self.run_id, self.node_id, name, call_id, time.perf_counter())
        self._tools[run_id] = call
        self.listener.tool_started(call, run_id)

    async def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._tools.pop(run_id, None)
        if call is None:
            return
        if isinstance(output, ToolMessage):
            artifact = output.artifact if isinstance(output.artifact, dict) else {}
            call.ok = output.status != "error" and bool(artifact.get("ok", True))
            if not call.ok:
                call.error = str(artifact.get("error_kind") or "tool_error")
        self.listener.tool_ended(call, run_id)

    async def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._tools.pop(run_id, None)
        if call is None:
            return
        call.ok, call.error = False, type(error).__name__
        self.listener.tool_ended(call, run_id)
