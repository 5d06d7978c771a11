"""The engine's public entry points: run a task, resume a run, stream a run's events."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from agents.accounting import Accountant
from agents.context import RunContext
from agents.errors import AwaitingApproval, RunNotFound
from agents.events import (
    PAUSE_TYPES,
    TERMINAL_TYPES,
    Event,
    EventBatchSink,
    EventSink,
    PlanInterrupt,
    RunCancelled,
    RunDone,
    RunError,
    RunStarted,
    discard,
)
from agents.graph import build_graph
from agents.params import RunParams
from agents.result import RunResult
from agents.reuse import keep, reusable, reuse_key
from agents.settings import EngineSettings
from agents.state import ErrorInfo, Recollection, RunState, StopReason
from agents.steering import CommandSource
from agents.tree import by_id
from calls.cache import CacheStore, MemoryStore, SqliteStore
from calls.errors import BudgetExhausted, ConfigError, LatsError
from calls.models import ModelChooser, ModelFactory, RunModels

logger = logging.getLogger(__name__)


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


class Engine:
    """Runs plan-tree searches. One instance serves many concurrent runs."""

    def __init__(
        self,
        *,
        settings: EngineSettings,
        models: ModelFactory,
        tools: Sequence[BaseTool],
        checkpointer: BaseCheckpointSaver[str] | None = None,
        cache: CacheStore | None = None,
        commands: CommandSource | None = None,
    ) -> None:
        """`cache` holds memoised model calls (default: in memory, or the SQLite file of
        `settings.cache_path`); runs with `use_cache=false` bypass it. `commands` is where
        callers' steering commands wait (none: runs are not steered)."""
        self.settings = settings
        self.models = models
        self.tools = list(tools)
        if cache is None:
            cache = SqliteStore(settings.cache_path) if settings.cache_path else MemoryStore()
        self.cache = cache
        self.commands = commands
        self.graph = build_graph(checkpointer)

    def _config(self, run_id: str, params: RunParams) -> RunnableConfig:
        # Each round resolves at least one job, and a node has at most three jobs.
        return RunnableConfig(
            configurable={"thread_id": run_id},
            recursion_limit=4 * params.max_nodes + 50,
        )

    def _models_for(self, params: RunParams) -> ModelFactory:
        """The run's models: the engine's, with the roles the run chose a model for built
        from their model strings (the service checked them against its allow-list)."""
        overrides = params.model_overrides()
        if not overrides:
            return self.models
        if not isinstance(self.models, ModelChooser):
            raise ConfigError("this engine's model factory cannot build a run's chosen models")
        return RunModels(self.models, overrides)

    def _tools_for(self, params: RunParams, run_tools: Sequence[BaseTool]) -> list[BaseTool]:
        """The engine's tools the run chose (all of them unless it named some), in order,
        then the tools bound to the run itself (its collections' `documents`)."""
        chosen = self.tools
        if params.tools is not None:
            named = set(params.tools)
            chosen = [tool for tool in self.tools if tool.name in named]
        return [*chosen, *run_tools]

    def _context(
        self,
        run_id: str,
        task: str,
        params: RunParams,
        sink: EventSink,
        state: RunState,
        sink_all: EventBatchSink | None,
        run_tools: Sequence[BaseTool],
    ) -> RunContext:
        return RunContext(
            run_id=run_id,
            task=task,
            params=params,
            settings=self.settings,
            models=self._models_for(params),
            tools=self._tools_for(params, run_tools),
            sink=sink,
            sink_all=sink_all,
            accountant=Accountant(params, state.get("metrics")),
            cache=self.cache,
            elapsed_before_s=float(state.get("elapsed_s", 0.0)),
            known=state.get("known"),
            commands=self.commands,
        )

    async def run(
        self,
        task: str,
        params: RunParams | None = None,
        *,
        run_id: str | None = None,
        sink: EventSink = discard,
        sink_all: EventBatchSink | None = None,
        announce: bool = True,
        known: Recollection | None = None,
        run_tools: Sequence[BaseTool] = (),
    ) -> RunResult:
        """Search for an answer to `task`, emitting events to `sink`; returns the result.
        `sink_all`, when given, takes the events of one moment together (a store writes them
        at once); without it they go to `sink` one by one.

        `known` is what earlier runs on the run's thread found (agents/recall.py): the planner
        is told it, and the prompts about every path show it as a step done before the root.
        `announce=False` skips the `run_started` event (for callers that sent it already).
        `run_tools` are tools bound to this run alone (the service's `documents` tool over the
        run's collections), used besides the engine's whatever the run's `tools` say.
        Cancelling the calling task cancels every in-flight call, emits `cancelled`, and
        re-raises; with a checkpointer the run can later be resumed with `resume`. With
        `approve_plan` the run stops after its plan: it emits `interrupt` and raises
        `AwaitingApproval` (its state checkpointed; `resume` with an answer goes on).
        """
        params = params or RunParams()
        run_id = run_id or uuid.uuid4().hex
        initial = RunState(
            run_id=run_id,
            task=task,
            params=params.model_dump(),
            phase="plan",
            nodes={},
            known=known,
        )
        ctx = self._context(run_id, task, params, sink, initial, sink_all, run_tools)
        if announce:
            await sink(RunStarted(run_id=run_id, task=task, params=params.model_dump()))
        key = reuse_key(ctx)
        if key is not None and (kept := await reusable(ctx, self.cache, key)) is not None:
            return await self._reuse(ctx, kept)
        return await self._drive(ctx, initial, key)

    async def _reuse(self, ctx: RunContext, kept: RunResult) -> RunResult:
        """End the run with an identical earlier request's result (agents/reuse.py)."""
        logger.info("run=%s reuses the result of run=%s", ctx.run_id, kept.run_id)
        result = kept.model_copy(
            update={
                "run_id": ctx.run_id,
                "metrics": ctx.accountant.snapshot(),
                "reused_from": kept.reused_from or kept.run_id,
            }
        )
        answer = result.answer_fields()
        del answer["error"]
        await ctx.sink(RunDone(run_id=ctx.run_id, **answer))
        return result

    async def resume(
        self,
        run_id: str,
        *,
        sink: EventSink = discard,
        sink_all: EventBatchSink | None = None,
        answer: dict[str, Any] | None = None,
        run_tools: Sequence[BaseTool] = (),
    ) -> RunResult:
        """Continue a checkpointed run from its last completed step. Completed nodes are never
        executed again; jobs that were in flight start over. A run waiting for its plan's
        approval goes on with `answer` (`agents/nodes/approval.py: PlanAnswer`), sent as
        LangGraph's `Command(resume=...)`; without one it stops there again
        (`AwaitingApproval`)."""
        snapshot = await self.graph.aget_state(RunnableConfig(configurable={"thread_id": run_id}))
        values: RunState = snapshot.values  # type: ignore[assignment]
        if not values:
            raise RunNotFound(f"no checkpoint for run {run_id}")
        params = RunParams.model_validate(values["params"])
        ctx = self._context(run_id, values["task"], params, sink, values, sink_all, run_tools)
        if not snapshot.next and not snapshot.tasks:
            # The graph ended, but its end may never have reached the caller (the process
            # stopped between the last checkpoint and the terminal event): say it again.
            # (A step whose writes were saved without the checkpoint after it has no `next`
            # either, but still a task: resuming applies those writes and goes on.)
            logger.info("run=%s had ended; its end is emitted again", run_id)
            return await self._conclude(ctx, values, reuse_key(ctx))
        logger.info(
            "run=%s resuming at %s",
            run_id,
            ",".join(snapshot.next)
            or "the saved writes of " + ",".join(t.name for t in snapshot.tasks),
        )
        waiting = bool(snapshot.interrupts)
        graph_input: Command[Any] | None = Command(resume=answer) if waiting and answer else None
        return await self._drive(ctx, graph_input, reuse_key(ctx))

    async def _drive(
        self, ctx: RunContext, graph_input: RunState | Command[Any] | None, key: str | None
    ) -> RunResult:
        """Run the graph from `graph_input` to its end; `key` is the request's reuse key
        (agents/reuse.py), under which a `done` result is kept."""
        run_id = ctx.run_id
        try:
            # "sync": a round's checkpoint is on disk before the next round starts, so a crash
            # never loses a completed node (the default "async" writes in the background).
            out = await self.graph.ainvoke(
                graph_input,
                self._config(run_id, ctx.params),
                context=ctx,
                durability="sync" if self.graph.checkpointer else None,
            )
        except asyncio.CancelledError:
            await ctx.pool.cancel()
            await ctx.sink(RunCancelled(run_id=run_id, metrics=ctx.accountant.snapshot()))
            raise
        except LatsError as e:
            await ctx.pool.cancel()
            reason = e.reason if isinstance(e, BudgetExhausted) else "error"
            return await self._fail(ctx, e.code, str(e), stop_reason=reason)
        except Exception:
            await ctx.pool.cancel()
            logger.exception("run=%s crashed", run_id)
            return await self._fail(ctx, "internal", "the run failed on an internal error")
        interrupts = out.get("__interrupt__") if isinstance(out, dict) else None
        if interrupts:
            steps = list(interrupts[0].value["steps"])
            metrics = ctx.accountant.snapshot()
            await ctx.sink(PlanInterrupt(run_id=run_id, steps=steps, metrics=metrics))
            logger.info("run=%s waits for its plan's approval", run_id)
            raise AwaitingApproval(run_id, steps)
        state: RunState = out  # type: ignore[assignment]
        return await self._conclude(ctx, state, key)

    async def _conclude(self, ctx: RunContext, state: RunState, key: str | None) -> RunResult:
        """The finished search's result, its terminal event emitted (and a `done` one kept
        under the reuse `key`, unless the run was steered)."""
        run_id = ctx.run_id
        result = self._result(run_id, state)
        if result.status == "cancelled":
            reason = "the plan was rejected"
            await ctx.sink(RunCancelled(run_id=run_id, reason=reason, metrics=result.metrics))
        elif result.status == "done" and result.answer is not None and result.stop_reason:
            answer = result.answer_fields()
            del answer["error"]
            await ctx.sink(RunDone(run_id=run_id, **answer))
            if key is not None and not state.get("steered_through"):
                await keep(ctx, self.cache, key, result)
        else:
            error = result.error or {"code": "internal", "message": "the run ended without result"}
            await ctx.sink(
                RunError(
                    run_id=run_id,
                    code=error["code"],
                    message=error["message"],
                    stop_reason=result.stop_reason or "error",
                    metrics=result.metrics,
                )
            )
        return result

    async def _fail(
        self, ctx: RunContext, code: str, message: str, *, stop_reason: StopReason = "error"
    ) -> RunResult:
        metrics = ctx.accountant.snapshot()
        await ctx.sink(
            RunError(
                run_id=ctx.run_id,
                code=code,
                message=message,
                stop_reason=stop_reason,
                metrics=metrics,
            )
        )
        return RunResult.failed(ctx.run_id, code, message, metrics=metrics, stop_reason=stop_reason)

    def _result(self, run_id: str, state: RunState) -> RunResult:
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

    async def stream(
        self, task: str, params: RunParams | None = None, *, run_id: str | None = None
    ) -> AsyncIterator[Event]:
        """Run `task` and yield its events as they happen, the terminal one last (or an
        `interrupt`, after which the iterator raises `AwaitingApproval`).

        Closing the iterator early cancels the run.
        """
        queue: asyncio.Queue[Event] = asyncio.Queue()

        async def sink(event: Event) -> None:
            queue.put_nowait(event)

        runner = asyncio.create_task(self.run(task, params, run_id=run_id, sink=sink))
        try:
            while True:
                event = await queue.get()
                yield event
                if event.type in TERMINAL_TYPES or event.type in PAUSE_TYPES:
                    break
            await runner
        finally:
            if not runner.done():
                runner.cancel()
                await asyncio.gather(runner, return_exceptions=True)
