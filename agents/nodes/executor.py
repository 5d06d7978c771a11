"""Executor job: one node's step run by a tool-using LangChain agent."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ToolErrorMiddleware,
)
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from agents.context import RunContext
from agents.fencing import fence
from agents.jobs import ExecOutcome
from agents.prompts import EXECUTOR_SYSTEM, executor_messages
from agents.state import NodeRecord
from agents.tree import path_to, trim
from calls.cache import USE_RESULT_CACHE
from calls.errors import BudgetExhausted
from calls.memo import IdentityMemo
from calls.sources import SOURCE_FILTER, SourceFilter

logger = logging.getLogger(__name__)


def _tool_failure(error: Exception, request: ToolCallRequest) -> str:
    # Tools report their own failures; this is the backstop for one that raises anyway. The
    # text names the failure's kind only: exception messages may carry internal detail.
    name = request.tool_call["name"]
    return f"{name}: failed ({type(error).__name__}); try a different query or tool"


class FenceToolResults(AgentMiddleware):
    """Every tool result the executor's model reads, failures included, inside a fence."""

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        result = await handler(request)
        return fenced_message(result) if isinstance(result, ToolMessage) else result


def fenced_message(message: ToolMessage) -> ToolMessage:
    """`message` with its text fenced (each text block of a multi-part result)."""
    content = message.content
    if isinstance(content, str):
        return message.model_copy(update={"content": fence(content)})
    blocks: list[str | dict[Any, Any]] = []
    for block in content:
        if isinstance(block, str):
            blocks.append(fence(block))
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            blocks.append({**block, "text": fence(block["text"])})
        else:
            blocks.append(block)
    return message.model_copy(update={"content": blocks})


# Compiled executor agents of the process. Compiling one costs more CPU than a small run's
# model calls, and a compiled graph keeps no state between invocations, so runs with the same
# model, cache, tools and tool-call limit share one.
_COMPILED: IdentityMemo[Any] = IdentityMemo(16)


def _compile(ctx: RunContext) -> Any:
    middleware: list[Any] = [
        FenceToolResults(),  # outermost: what the error backstop writes is fenced too
        ModelCallLimitMiddleware(
            run_limit=ctx.params.max_tool_calls_per_step + 1, exit_behavior="end"
        ),
        ToolErrorMiddleware(on_error=_tool_failure),
    ]
    return create_agent(
        ctx.model("executor"),
        ctx.tools,
        system_prompt=EXECUTOR_SYSTEM,
        middleware=middleware,
    )


def _agent(ctx: RunContext) -> Any:
    """The executor agent: compiled once per process for each (executor model, cache, tools,
    tool-call limit), and shared by every node of every run that matches."""
    if ctx.executor_agent is None:
        owners = (
            ctx.models.for_role("executor"),
            ctx.cache if ctx.params.use_cache else None,
            *ctx.tools,
        )
        limit = ctx.params.max_tool_calls_per_step
        ctx.executor_agent = _COMPILED.get(owners, limit, lambda: _compile(ctx))
    return ctx.executor_agent


def _final_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls and message.text.strip():
            return message.text.strip()
    return ""


async def execute(ctx: RunContext, nodes: Mapping[str, NodeRecord], node_id: str) -> ExecOutcome:
    """Run `node_id`'s step. Model failures (after retries) and timeouts give a failed outcome;
    budget refusals and cancellation propagate to the scheduler."""
    node = nodes[node_id]
    ancestors = ctx.shown(path_to(nodes, node_id)[:-1])
    messages = executor_messages(
        ctx.task, ancestors, node["step"], node["planned"], ctx.settings.result_max_chars
    )
    tracker = ctx.tracker("executor", node_id)
    config = ctx.config(tracker, node_id=node_id)
    config["recursion_limit"] = 4 * (ctx.params.max_tool_calls_per_step + 2)
    started = time.monotonic()
    USE_RESULT_CACHE.set(ctx.params.use_cache)  # this job's task and the tool calls it starts
    SOURCE_FILTER.set(
        SourceFilter.of(ctx.params.include_domains or (), ctx.params.exclude_domains or ())
    )

    def outcome(ok: bool, result: str | None, error: str | None) -> ExecOutcome:
        return ExecOutcome(
            ok=ok,
            result=result,
            error=error,
            seconds=round(time.monotonic() - started, 4),
            tool_calls=list(tracker.tool_records),
            sources=list(tracker.sources),
            evidence=list(tracker.evidence),
        )

    try:
        async with asyncio.timeout(ctx.settings.step_timeout_s):
            out = await _agent(ctx).ainvoke({"messages": messages}, config=config)
    except BudgetExhausted:
        raise
    except TimeoutError:
        logger.warning("run=%s node=%s step timed out", ctx.run_id, node_id)
        return outcome(False, None, f"timed out after {ctx.settings.step_timeout_s:g}s")
    except Exception as e:
        logger.warning(
            "run=%s node=%s step failed: %s", ctx.run_id, node_id, type(e).__name__, exc_info=e
        )
        return outcome(False, None, f"model call failed ({type(e).__name__})")
    text = _final_text(out.get("messages", []))
    if not text:
        return outcome(False, None, "the executor returned no findings")
    return outcome(True, trim(text, ctx.settings.result_max_chars), None)
