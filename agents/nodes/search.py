"""Search node: one scheduling round per graph step.

Each round starts runnable jobs up to `max_concurrency`, waits until at least one job ends,
folds the finished jobs into the tree and returns the changes, so LangGraph checkpoints after
every completion. Jobs still running carry on across rounds: a slow branch never holds back
the others, and wall time follows the critical path.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langgraph.runtime import Runtime

from agents.context import RunContext
from agents.errors import BudgetExhausted
from agents.events import (
    CandidatesProposed,
    NodeBrief,
    NodeEvaluated,
    NodeFinished,
    NodePruned,
    NodeStarted,
    PathCompleted,
)
from agents.jobs import ExecOutcome, ExpandOutcome, Job, Judged, Outcome, RespondOutcome
from agents.nodes.executor import execute
from agents.nodes.replanner import expand
from agents.nodes.responder import respond
from agents.state import NodeRecord, RunState, StopReason, new_node
from agents.strategies import strategy_for
from agents.tree import (
    backpropagate,
    by_id,
    children_of,
    mean_value,
    path_to,
    runnable,
    trim,
)

logger = logging.getLogger(__name__)

EVENT_RESULT_CHARS = 1500


class _Round:
    """The working copy of the tree for one round, and the changes to return."""

    def __init__(self, state: RunState, ctx: RunContext) -> None:
        self.ctx = ctx
        self.nodes: dict[str, NodeRecord] = dict(state.get("nodes", {}))
        self.changed: dict[str, NodeRecord] = {}
        self.budget_hit: StopReason | None = state.get("budget_hit")
        self.capped = state.get("capped", False)

    # -- tree bookkeeping --------------------------------------------------------------------
    def put(self, node: NodeRecord) -> None:
        self.nodes[node["id"]] = node
        self.changed[node["id"]] = node

    def update(self, node_id: str, **fields: Any) -> NodeRecord:
        node: NodeRecord = {**self.nodes[node_id], **fields}  # type: ignore[typeddict-item]
        self.put(node)
        return node

    def completed_paths(self) -> int:
        return sum(1 for n in self.nodes.values() if n["answer"] is not None)

    def satisfied(self) -> bool:
        """A completed path is good enough to stop (`satisfaction` and `min_depth`)."""
        params = self.ctx.params
        if params.satisfaction is None:
            return False
        return any(
            n["answer"] is not None
            and n["score"] is not None
            and n["score"] >= params.satisfaction
            and n["depth"] + 1 >= params.min_depth
            for n in self.nodes.values()
        )

    def stop_reason(self) -> StopReason | None:
        """Why the search must stop now, before any new work."""
        if self.completed_paths() >= self.ctx.params.max_paths:
            return "max_paths"
        if self.satisfied():
            return "early_stop"
        return None

    # -- starting jobs -------------------------------------------------------------------------
    def _to_respond(self, busy: set[str]) -> list[NodeRecord]:
        return [
            n
            for n in self.nodes.values()
            if n["complete"]
            and n["answer"] is None
            and n["answer_error"] is None
            and n["id"] not in busy
        ]

    def _to_expand(self, busy: set[str]) -> list[NodeRecord]:
        return [
            n
            for n in self.nodes.values()
            if n["status"] == "done" and not n["expanded"] and n["id"] not in busy
        ]

    async def launch(self) -> None:
        """Start jobs in free slots: answers first, then expansions, then steps in the
        strategy's order. Each start is checked against the budgets first."""
        ctx = self.ctx
        pool = ctx.pool
        params = ctx.params
        busy = pool.busy_nodes()
        responding = sum(1 for job in pool.jobs() if job.kind == "respond")
        wanted_paths = params.max_paths - self.completed_paths() - responding
        plan: list[Job] = [Job("respond", n["id"]) for n in self._to_respond(busy)][
            : max(0, wanted_paths)
        ]
        if wanted_paths - len(plan) > 0:
            plan += [Job("expand", n["id"]) for n in sorted(self._to_expand(busy), key=by_id)]
            slots = params.max_concurrency - len(pool) - len(plan)
            strategy = strategy_for(params)
            picks = strategy.select(self.nodes, runnable(self.nodes, busy), busy, slots)
            plan += [Job("execute", n["id"]) for n in picks]
        for job in plan[: max(0, params.max_concurrency - len(pool))]:
            reason = ctx.accountant.exhausted()
            if reason is not None:
                self.budget_hit = reason
                return
            await self._start(job)

    async def _start(self, job: Job) -> None:
        ctx = self.ctx
        snapshot = dict(self.nodes)
        if job.kind == "execute":
            self.update(job.node_id, status="running")
            # Announced before the task exists, so its tool_call events always come after.
            await ctx.emit(NodeStarted(run_id=ctx.run_id, node_id=job.node_id))
            ctx.pool.start(job, execute(ctx, snapshot, job.node_id))
        elif job.kind == "expand":
            ctx.pool.start(job, expand(ctx, snapshot, job.node_id))
        else:
            ctx.pool.start(job, respond(ctx, snapshot, job.node_id))
        logger.debug("run=%s node=%s started %s", ctx.run_id, job.node_id, job.kind)

    # -- folding results in --------------------------------------------------------------------
    async def apply(self, job: Job, outcome: Outcome | BaseException) -> None:
        if isinstance(outcome, BudgetExhausted):
            self.budget_hit = outcome.reason
            if job.kind == "execute":
                await self._finish_node(job.node_id, "cancelled", None, "budget exhausted")
            return
        if isinstance(outcome, asyncio.CancelledError):
            if job.kind == "execute":
                await self._finish_node(job.node_id, "cancelled", None, "cancelled")
            return
        if isinstance(outcome, BaseException):
            return await self._job_crashed(job, outcome)
        if isinstance(outcome, ExecOutcome):
            await self._apply_exec(job.node_id, outcome)
        elif isinstance(outcome, ExpandOutcome):
            await self._apply_expand(job.node_id, outcome)
        else:
            await self._apply_respond(job.node_id, outcome)

    async def _job_crashed(self, job: Job, error: BaseException) -> None:
        ctx = self.ctx
        logger.error(
            "run=%s node=%s %s job crashed", ctx.run_id, job.node_id, job.kind, exc_info=error
        )
        if job.kind == "execute":
            await self._finish_node(job.node_id, "failed", None, "internal error")
        elif job.kind == "expand":  # end the path with what it found rather than lose it
            await self._apply_expand(
                job.node_id, ExpandOutcome(complete=True, steps=[], dropped=[])
            )
        else:
            self.update(job.node_id, answer_error="internal error")

    async def _finish_node(
        self,
        node_id: str,
        status: Any,
        outcome: ExecOutcome | None,
        error: str | None,
    ) -> None:
        fields: dict[str, Any] = {"status": status, "error": error}
        if outcome is not None:
            fields |= {
                "result": outcome.result,
                "seconds": outcome.seconds,
                "tool_calls": outcome.tool_calls,
                "sources": outcome.sources,
            }
        node = self.update(node_id, **fields)
        await self.ctx.emit(
            NodeFinished(
                run_id=self.ctx.run_id,
                node_id=node_id,
                status=node["status"],
                result=trim(node["result"], EVENT_RESULT_CHARS) if node["result"] else None,
                error=node["error"],
                seconds=node["seconds"],
                tool_calls=len(node["tool_calls"]),
                sources=node["sources"],
                metrics=self.ctx.accountant.snapshot(),
            )
        )

    async def _apply_exec(self, node_id: str, outcome: ExecOutcome) -> None:
        status = "done" if outcome.ok else "failed"
        await self._finish_node(node_id, status, outcome, outcome.error)

    async def _record_progress(self, node_id: str, judged: Judged) -> None:
        """Store the path's progress score and back it up to the root."""
        self.update(node_id, score=judged.score)
        for record in backpropagate(self.nodes, node_id, judged.score):
            self.put(record)
        node = self.nodes[node_id]
        await self.ctx.emit(
            NodeEvaluated(
                run_id=self.ctx.run_id,
                node_id=node_id,
                score=judged.score,
                reason=judged.reason or None,
                value=round(mean_value(node), 6),
                visits=node["visits"],
            )
        )

    async def _apply_expand(self, node_id: str, outcome: ExpandOutcome) -> None:
        ctx = self.ctx
        if outcome.progress is not None:
            await self._record_progress(node_id, outcome.progress)
        steps, dropped = list(outcome.steps), list(outcome.dropped)
        scores = outcome.scores or [None] * len(steps)
        room = max(0, ctx.params.max_nodes - len(self.nodes))
        if len(steps) > room:
            self.capped = True
            dropped += steps[room:]
            steps = steps[:room]
        parent = self.nodes[node_id]
        created: list[tuple[NodeRecord, Judged | None]] = []
        first = len(children_of(self.nodes, node_id)) + 1
        for index, (step, judged) in enumerate(zip(steps, scores, strict=False), start=first):
            child = new_node(parent=parent, index=index, step=step, planned=parent["planned"][1:])
            if judged is not None:
                child["prior"] = judged.score
            self.put(child)
            created.append((child, judged))
        await ctx.emit(
            CandidatesProposed(
                run_id=ctx.run_id,
                parent_id=node_id,
                complete=not created,
                nodes=[
                    NodeBrief(
                        node_id=c["id"],
                        parent_id=node_id,
                        depth=c["depth"],
                        step=c["step"],
                        score=j.score if j else None,
                        reason=(j.reason or None) if j else None,
                    )
                    for c, j in created
                ],
                dropped=dropped,
                seconds=outcome.seconds,
                metrics=ctx.accountant.snapshot(),
            )
        )
        alive = 0
        for child, judged in created:
            reason = _prune_reason(judged, ctx.params.min_score)
            if reason is None:
                alive += 1
                continue
            self.update(child["id"], status="pruned", error=reason)
            await ctx.emit(NodePruned(run_id=ctx.run_id, node_id=child["id"], reason=reason))
        # A path whose every continuation was pruned ends here, with what it found.
        self.update(node_id, expanded=True, complete=alive == 0)

    async def _apply_respond(self, node_id: str, outcome: RespondOutcome) -> None:
        ctx = self.ctx
        self.update(node_id, answer=outcome.answer, answer_error=outcome.error)
        await ctx.emit(
            PathCompleted(
                run_id=ctx.run_id,
                node_id=node_id,
                path=[n["id"] for n in path_to(self.nodes, node_id)],
                answer=outcome.answer,
                seconds=outcome.seconds,
                metrics=ctx.accountant.snapshot(),
            )
        )

    # -- ending ---------------------------------------------------------------------------------
    async def cancel_all(self) -> None:
        for job in await self.ctx.pool.cancel():
            if job.kind == "execute":
                await self._finish_node(job.node_id, "cancelled", None, "search stopped")


def _prune_reason(judged: Judged | None, min_score: float) -> str | None:
    """Why a judged candidate is pruned, or None to keep it (unscored ones are kept)."""
    if judged is None:
        return None
    if not judged.viable:
        return f"not viable: {judged.reason}" if judged.reason else "not viable"
    if judged.score < min_score:
        return f"score {judged.score:.2f} below {min_score:.2f}" + (
            f": {judged.reason}" if judged.reason else ""
        )
    return None


async def search(state: RunState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """One scheduling round (see the module docstring)."""
    ctx = runtime.context
    rnd = _Round(state, ctx)
    stop: StopReason | None = None
    try:
        stop = rnd.stop_reason()
        if stop is None and ctx.time_left_s() <= 0:
            stop = "deadline"
        elif stop is None and rnd.budget_hit is None:
            await rnd.launch()
        if stop is None and not len(ctx.pool):
            # Nothing runs and nothing could start: the search is over.
            stop = rnd.budget_hit or ("max_nodes" if rnd.capped else "frontier_exhausted")
        if stop is None:
            finished = await ctx.pool.wait_any(within_s=max(0.0, ctx.time_left_s()))
            if not finished:
                stop = "deadline"
            for job, outcome in finished:
                await rnd.apply(job, outcome)
            stop = stop or rnd.stop_reason()
        if stop is not None:
            await rnd.cancel_all()
    except asyncio.CancelledError:
        await ctx.pool.cancel()
        raise
    update: dict[str, Any] = {
        "nodes": rnd.changed,
        "budget_hit": rnd.budget_hit,
        "capped": rnd.capped,
        "metrics": ctx.accountant.snapshot(),
        "elapsed_s": round(ctx.elapsed_s(), 4),
    }
    if stop is not None:
        logger.info("run=%s search stopped: %s", ctx.run_id, stop)
        update |= {"phase": "finish", "stop_reason": stop}
    return update
