"""Call observers: every model and tool call of a run read once, and the reading handed to
whoever needs it (the run's accountant, the job's stop gate, the metrics and the traces).

`CallObserver` is the one callback handler riding along a call of a run. When a model call
starts it notes the role, node, model and provider; when it ends or fails it reads the call
once (tokens, cache hit, latency, error) and hands the same `ModelReading` to each subscriber
in turn; tool calls likewise (`ToolReading`; the records and the subscriber's hooks are
`calls.readings`). A subscriber that fails is logged and never breaks the call; only the
call's owner (the run's accountant, told last) may stop it, with a budget refusal or a lost
lease.

Process-wide subscribers (metrics, traces) are installed once at start-up (`add`, or
`agents.observers.add`, which adds them here too) and also hear the figures only the call
policy knows (`rate_limit_changed`, `model_retry`); with none installed a call pays nothing
but its one reading.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from calls.readings import (
    CallSubscriber,
    ModelCall,
    ModelReading,
    ToolCall,
    ToolReading,
    tool_outcome,
)
from calls.retry import failed_for_rate
from calls.settings import Role
from calls.usage import call_cost

logger = logging.getLogger(__name__)

Clock = Callable[[], float]


class CallHandler(AsyncCallbackHandler):
    """Base of the handlers that ride along a run's model and tool calls: they run inline, in
    order, in the caller's task (else LangChain wraps every event for every handler in a task
    of its own), and the chain, retriever, retry and custom events they have no use for are
    not even dispatched to them."""

    run_inline = True
    ignore_chain = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True


class CallObserver(CallHandler):
    """The one reader of one run's model and tool calls made with one config: each call is
    read once, and the reading goes to `subscribers` in order, then to `owner`. A subscriber's
    failure is logged and the call goes on; the owner's errors stop the call (`raise_error`)."""

    raise_error = True

    def __init__(
        self,
        run_id: str,
        node_id: str | None,
        role: Role,
        subscribers: Sequence[CallSubscriber] = (),
        *,
        owner: CallSubscriber | None = None,
        clock: Clock = time.perf_counter,
    ) -> None:
        self.run_id = run_id
        self.node_id = node_id
        self.role = role
        self.subscribers = list(subscribers)
        self.owner = owner
        self.clock = clock
        self._models: dict[UUID, ModelCall] = {}
        self._tools: dict[UUID, ToolCall] = {}

    async def _tell(self, hear: Callable[[CallSubscriber], Awaitable[None]], what: str) -> None:
        for subscriber in self.subscribers:
            try:
                await hear(subscriber)
            except Exception:  # an observer never breaks a call
                logger.exception(
                    "run=%s node=%s %s failed on %s",
                    self.run_id,
                    self.node_id or "-",
                    type(subscriber).__name__,
                    what,
                )
        if self.owner is not None:
            await hear(self.owner)

    # model calls ------------------------------------------------------------------------------

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        meta = metadata or {}
        params = kwargs.get("invocation_params") or {}
        model = meta.get("ls_model_name") or params.get("model") or params.get("_type") or "?"
        call = ModelCall(
            key=run_id,
            parent=parent_run_id,
            run_id=self.run_id,
            node_id=self.node_id,
            role=self.role,
            model=str(model).removeprefix("models/"),
            provider=str(meta.get("ls_provider") or params.get("_type") or "?"),
            started=self.clock(),
        )
        self._models[run_id] = call
        try:
            await self._tell(lambda s: s.model_started(call), "a model call's start")
        except BaseException:
            del self._models[run_id]  # refused: the call never runs, so it never ends
            raise

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._models.pop(run_id, None)
        if call is None:
            return
        cost = call_cost(response)
        reading = ModelReading(
            call=call,
            seconds=self.clock() - call.started,
            cache_hit=cost.cache_hit,
            input_tokens=cost.input_tokens,
            output_tokens=cost.output_tokens,
            total_tokens=cost.total_tokens,
        )
        await self._tell(lambda s: s.model_ended(reading), "a model call's end")

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._models.pop(run_id, None)
        if call is None:
            return
        reading = ModelReading(
            call=call,
            seconds=self.clock() - call.started,
            error=type(error).__name__,
            rate_limited=failed_for_rate(error),
        )
        await self._tell(lambda s: s.model_ended(reading), "a model call's failure")

    # tool calls -------------------------------------------------------------------------------

    async def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        call = ToolCall(
            key=run_id,
            run_id=self.run_id,
            node_id=self.node_id,
            name=str((serialized or {}).get("name") or kwargs.get("name") or "tool"),
            args=dict(inputs) if isinstance(inputs, dict) else {"input": input_str},
            call_id=inputs.get("tool_call_id") if isinstance(inputs, dict) else None,
            started=self.clock(),
        )
        self._tools[run_id] = call
        await self._tell(lambda s: s.tool_started(call), "a tool call's start")

    async def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        ok, error_kind = tool_outcome(output)
        await self._tool_ended(run_id, ok=ok, error_kind=error_kind, output=output)

    async def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        await self._tool_ended(run_id, ok=False, error_kind=type(error).__name__, output=None)

    async def _tool_ended(
        self, run_id: UUID, *, ok: bool, error_kind: str | None, output: Any
    ) -> None:
        now = self.clock()
        call = self._tools.pop(run_id, None) or ToolCall(
            run_id, self.run_id, self.node_id, "tool", {}, None, now
        )
        reading = ToolReading(call, now - call.started, ok, error_kind, output)
        await self._tell(lambda s: s.tool_ended(reading), "a tool call's end")


# The process's subscribers (installed at start-up), and the run and node whose call the
# current task is making (jobs run in their own contexts).
_subscribers: list[CallSubscriber] = []
_call_ids: ContextVar[tuple[str, str | None] | None] = ContextVar("plantree_ids", default=None)


def bind_ids(run_id: str, node_id: str | None) -> None:
    """Mark the current task as working for `run_id`/`node_id` (for log records)."""
    _call_ids.set((run_id, node_id))


def current_ids() -> tuple[str, str | None] | None:
    """The run and node the current task works for, if any."""
    return _call_ids.get()


def add(subscriber: CallSubscriber) -> None:
    """Install a subscriber to every call of this process (once; a second add is a no-op)."""
    if not any(s is subscriber for s in _subscribers):
        _subscribers.append(subscriber)


def remove(subscriber: CallSubscriber) -> None:
    _subscribers[:] = [s for s in _subscribers if s is not subscriber]


def reset() -> None:
    """Forget every installed subscriber (`agents.observers.reset` puts back what it keeps)."""
    _subscribers.clear()


def installed() -> list[CallSubscriber]:
    """The process's subscribers, in the order they were installed."""
    return list(_subscribers)


def rate_limit_changed(model: str, value: float) -> None:
    """For the call policy: the adaptive limit of `model` moved to `value` requests/s."""
    for subscriber in list(_subscribers):
        subscriber.rate_limit_changed(model, value)


def model_retry(role: Role, model: str, reason: str) -> None:
    """For the call policy: a model call of `role` is being retried for `reason`."""
    for subscriber in list(_subscribers):
        subscriber.model_retried(role, model, reason)
