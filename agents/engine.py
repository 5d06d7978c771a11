"""The engine's public entry points: run a task, resume a run, stream a run's events."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, TypedDict, Unpack

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from agents import observers
from agents.accounting import Accountant
from agents.context import RunContext
from agents.errors import AwaitingApproval, RunNotFound, cancel_event, with_cancel_event
from agents.events import (
    PAUSE_TYPES,
    TERMINAL_TYPES,
    Event,
    EventBatchSink,
    EventSink,
    PlanInterrupt,
    RunCancelled,
    RunError,
    RunStarted,
    discard,
)
from agents.graph import build_graph
from agents.params import RunParams
from agents.result import Outcome, RunResult, result_of
from agents.reuse import keep, reusable, reuse_key
from agents.settings import EngineSettings
from agents.state import NodeRecord, Recollection, RunState, StopReason
from agents.steering import CommandSource
from agents.tree import by_id
from calls.cache import CacheStore, MemoryStore, SqliteStore
from calls.errors import BudgetExhausted, ConfigError, LatsError
from calls.models import ModelChooser, ModelFactory, RunModels

logger = logging.getLogger(__name__)


class Resumption(TypedDict, total=False):
    """How a run goes on: the keywords of `Engine.resume`, which hands them to
    `Engine.resume_search` (where their defaults are)."""

    sink: EventSink
    sink_all: EventBatchSink | None
    answer: dict[str, Any] | None
    run_tools: Sequence[BaseTool]


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
        known: Recollection | None = None,
        run_tools: Sequence[BaseTool] = (),
    ) -> RunResult:
        """Search for an answer to `task`, emitting every event to `sink`, from `run_started`
        to the terminal one; returns the result. `sink_all`, when given, takes the events of
        one moment together (a store writes them at once); without it they go to `sink` one by
        one. `search` is the same run without its first and last events, for a caller that
        stores those itself.

        Cancelling the calling task cancels every in-flight call, emits `cancelled`, and
        re-raises; with a checkpointer the run can later be resumed with `resume`. With
        `approve_plan` the run stops after its plan: it emits `interrupt` and raises
        `AwaitingApproval` (its state checkpointed; `resume` with an answer goes on).
        """
        params = params or RunParams()
        run_id = run_id or uuid.uuid4().hex
        await sink(RunStarted.of(run_id, task, params))
        return await _told(
            sink,
            run_id,
            self.search(
                task,
                params,
                run_id=run_id,
                sink=sink,
                sink_all=sink_all,
                known=known,
                run_tools=run_tools,
            ),
        )

    async def search(
        self,
        task: str,
        params: RunParams,
        *,
        run_id: str,
        sink: EventSink = discard,
        sink_all: EventBatchSink | None = None,
        known: Recollection | None = None,
        run_tools: Sequence[BaseTool] = (),
    ) -> Outcome:
        """`run`'s search, handing its end back instead of emitting it: the result with its
        terminal event (`Outcome`); a plan waiting for approval raises `AwaitingApproval`
        with its `interrupt` event, a cancel re-raises with its `cancelled` event attached
        (`cancel_event`). `sink` gets every event in between.

        `known` is what earlier runs on the run's thread found (agents/recall.py): the planner
        is told it, and the prompts about every path show it as a step done before the root.
        `run_tools` are tools bound to this run alone (the service's `documents` tool over the
        run's collections), used besides the engine's whatever the run's `tools` say."""
        initial = RunState(
            run_id=run_id,
            task=task,
            params=params.model_dump(),
            phase="plan",
            nodes={},
            known=known,
        )
        ctx = self._context(run_id, task, params, sink, initial, sink_all, run_tools)
        key = reuse_key(ctx)
        if key is not None and (kept := await reusable(ctx, self.cache, key)) is not None:
            return self._reuse(ctx, kept)
        return await self._drive(ctx, initial, key)

    def _reuse(self, ctx: RunContext, kept: RunResult) -> Outcome:
        """End the run with an identical earlier request's result (agents/reuse.py)."""
        logger.info("run=%s reuses the result of run=%s", ctx.run_id, kept.run_id)
        result = kept.model_copy(
            update={
                "run_id": ctx.run_id,
                "metrics": ctx.accountant.snapshot(),
                "reused_from": kept.reused_from or kept.run_id,
            }
        )
        return Outcome(result, result.done_event())

    async def resume(self, run_id: str, **how: Unpack[Resumption]) -> RunResult:
        """Continue a checkpointed run from its last completed step, emitting its events to
        `sink`, the terminal one last (as `run` does). Completed nodes are never executed
        again; jobs that were in flight start over. A run waiting for its plan's approval goes
        on with `answer` (`agents/nodes/approval.py: PlanAnswer`), sent as LangGraph's
        `Command(resume=...)`; without one it stops there again (`AwaitingApproval`).
        `resume_search` hands the end back instead, as `search` does."""
        return await _told(how.get("sink", discard), run_id, self.resume_search(run_id, **how))

    async def resume_search(
        self,
        run_id: str,
        *,
        sink: EventSink = discard,
        sink_all: EventBatchSink | None = None,
        answer: dict[str, Any] | None = None,
        run_tools: Sequence[BaseTool] = (),
    ) -> Outcome:
        """`resume`, handing the run's end back as `search` does."""
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
            logger.info("run=%s had ended; its end is handed back again", run_id)
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

    async def tree(self, run_id: str) -> list[NodeRecord]:
        """The run's tree as last checkpointed, in node order (empty without a checkpoint)."""
        snapshot = await self.graph.aget_state(RunnableConfig(configurable={"thread_id": run_id}))
        nodes: dict[str, NodeRecord] = (snapshot.values or {}).get("nodes", {})
        return sorted(nodes.values(), key=by_id)

    async def _drive(
        self, ctx: RunContext, graph_input: RunState | Command[Any] | None, key: str | None
    ) -> Outcome:
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
        except asyncio.CancelledError as cancel:
            await ctx.pool.cancel()
            with_cancel_event(
                cancel, RunCancelled(run_id=run_id, metrics=ctx.accountant.snapshot())
            )
            raise
        except LatsError as e:
            await ctx.pool.cancel()
            reason = e.reason if isinstance(e, BudgetExhausted) else "error"
            return self._fail(ctx, e.code, str(e), stop_reason=reason)
        except Exception:
            await ctx.pool.cancel()
            logger.exception("run=%s crashed", run_id)
            return self._fail(ctx, "internal", "the run failed on an internal error")
        interrupts = out.get("__interrupt__") if isinstance(out, dict) else None
        if interrupts:
            steps = list(interrupts[0].value["steps"])
            metrics = ctx.accountant.snapshot()
            logger.info("run=%s waits for its plan's approval", run_id)
            raise AwaitingApproval(PlanInterrupt(run_id=run_id, steps=steps, metrics=metrics))
        state: RunState = out  # type: ignore[assignment]
        return await self._conclude(ctx, state, key)

    async def _conclude(self, ctx: RunContext, state: RunState, key: str | None) -> Outcome:
        """The finished search's result with its terminal event (and a `done` one kept under
        the reuse `key`, unless the run was steered)."""
        run_id = ctx.run_id
        result = result_of(run_id, state)
        if result.status == "cancelled":
            reason = "the plan was rejected"
            return Outcome(
                result, RunCancelled(run_id=run_id, reason=reason, metrics=result.metrics)
            )
        if result.status == "done" and result.answer is not None and result.stop_reason:
            if key is not None and not state.get("steered_through"):
                await keep(ctx, self.cache, key, result)
            return Outcome(result, result.done_event())
        error = result.error or {"code": "internal", "message": "the run ended without result"}
        terminal = RunError(
            run_id=run_id,
            code=error["code"],
            message=error["message"],
            stop_reason=result.stop_reason or "error",
            metrics=result.metrics,
        )
        return Outcome(result, terminal)

    def _fail(
        self, ctx: RunContext, code: str, message: str, *, stop_reason: StopReason = "error"
    ) -> Outcome:
        metrics = ctx.accountant.snapshot()
        terminal = RunError(
            run_id=ctx.run_id,
            code=code,
            message=message,
            stop_reason=stop_reason,
            metrics=metrics,
        )
        result = RunResult.failed(
            ctx.run_id, code, message, metrics=metrics, stop_reason=stop_reason
        )
        return Outcome(result, terminal)

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


async def _told(sink: EventSink, run_id: str, search: Awaitable[Outcome]) -> RunResult:
    """`search`'s result, its end (the terminal event, or the pause or the cancel it raised
    with) emitted to `sink` as well."""
    tell = observers.observed(sink, run_id)
    try:
        outcome = await search
    except AwaitingApproval as waiting:
        await tell(waiting.event)
        raise
    except asyncio.CancelledError as cancel:
        event = cancel_event(cancel)
        if event is not None:
            await tell(event)
        raise
    await tell(outcome.terminal)
    return outcome.result
