"""Search node: the scheduler, one round per graph step.

Each round starts runnable jobs up to `max_concurrency`, waits until at least one job ends,
folds the finished jobs into the tree (`agents/nodes/fold.py`, pure) and emits what the fold
queued, so LangGraph checkpoints after every completion. Jobs still running carry on across
rounds: a slow branch never holds back the others, and wall time follows the critical path.
With `reserve`, a candidate pruned by its judgement is held in reserve: when nothing else is
left to run, fewer than `max_paths` paths are complete and the budget can carry a path to an
answer, the best of them runs after all (`TreeFold.revive`, a `revived` event), rather than
the run ending with its budget unspent.

When the search stops, the jobs still in flight are either cancelled or, with the cache on and
a grace period, left to finish silently so the model calls they paid for feed the cache.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langgraph.runtime import Runtime

from agents.accounting import FINISH_RESERVE_CALLS
from agents.anytime import greedy_phase, is_anytime, next_move
from agents.context import RunContext
from agents.jobs import Job, JobOutcome
from agents.nodes.executor import execute
from agents.nodes.fold import TreeFold, fold_of
from agents.nodes.replanner import branch, expand
from agents.nodes.reserve import affordable
from agents.nodes.responder import respond
from agents.nodes.steer import take_commands
from agents.state import NodeRecord, RunState, StopReason
from agents.strategies import strategy_for
from agents.tree import by_id, runnable

logger = logging.getLogger(__name__)


async def _flush(ctx: RunContext, fold: TreeFold) -> None:
    """The fold's events so far, stored together."""
    await ctx.emit_all(fold.take_events())


def _to_respond(nodes: dict[str, NodeRecord], busy: set[str]) -> list[NodeRecord]:
    return [
        n
        for n in nodes.values()
        if n["complete"]
        and n["answer"] is None
        and n["answer_error"] is None
        and n["id"] not in busy
    ]


def _to_expand(nodes: dict[str, NodeRecord], busy: set[str]) -> list[NodeRecord]:
    return [
        n
        for n in nodes.values()
        if n["status"] == "done" and not n["expanded"] and n["id"] not in busy
    ]


def plan_jobs(ctx: RunContext, fold: TreeFold) -> list[Job]:
    """The jobs to start in the free slots: answers first, then expansions, then steps in the
    strategy's order. Answers are only written for paths still wanted (`max_paths`)."""
    pool, params = ctx.pool, ctx.params
    busy = pool.busy_nodes()
    responding = sum(1 for job in pool.jobs() if job.kind == "respond")
    wanted_paths = params.max_paths - fold.completed_paths() - responding
    plan = [Job("respond", n["id"]) for n in _to_respond(fold.nodes, busy)][: max(0, wanted_paths)]
    if wanted_paths - len(plan) > 0:
        plan += [Job("expand", n["id"]) for n in sorted(_to_expand(fold.nodes, busy), key=by_id)]
        slots = pool.free_slots() - len(plan)
        picks = strategy_for(params).select(fold.nodes, runnable(fold.nodes, busy), busy, slots)
        plan += [Job("execute", n["id"]) for n in picks]
        if not plan and not busy and is_anytime(params):
            plan = _anytime_move(ctx, fold, busy)
    # The vote's call is held back by the accountant; the rest must still carry paths home.
    calls_left = params.max_llm_calls - ctx.accountant.total_calls - FINISH_RESERVE_CALLS
    admitted = affordable(plan, fold.nodes, pool.jobs(), params, calls_left)
    fold.held_back = len(admitted) < len(plan)
    return admitted[: _slots(ctx)]


def _slots(ctx: RunContext) -> int:
    """How many jobs may start now. The anytime search runs one job at a time: its answer
    must not depend on which of two jobs ends first (near the end of the budget, on which
    path gets the last calls); the tree strategies fill `max_concurrency` slots."""
    if is_anytime(ctx.params):
        return min(ctx.pool.free_slots(), 1 - len(ctx.pool))
    return ctx.pool.free_slots()


def _anytime_move(ctx: RunContext, fold: TreeFold, busy: set[str]) -> list[Job]:
    """Anytime search, nothing running and nothing left to start: once the first answer
    exists, the next move (agents/anytime.py: `next_move`): the first path's undone planned
    step, added at once, or alternatives at its weakest step not yet tried (a `branch` job)."""
    if greedy_phase(fold.nodes):
        return []
    move = next_move(ctx.task, fold.nodes, ctx.params, fold.branched_at)
    if move is None:
        return []
    logger.info(
        "run=%s node=%s anytime move: %s (%s)",
        ctx.run_id,
        move.node_id,
        move.kind,
        "; ".join(move.reasons),
    )
    fold.begin(move)
    if move.kind == "branch":
        return [Job("branch", move.node_id)]
    picks = strategy_for(ctx.params).select(
        fold.nodes, runnable(fold.nodes, busy), busy, ctx.pool.free_slots()
    )
    return [Job("execute", n["id"]) for n in picks]


async def launch(ctx: RunContext, fold: TreeFold) -> None:
    """Start the planned jobs, each checked against the budgets first."""
    ctx.pool.slots.freed.clear()  # a slot freed from now on wakes the round's wait again
    starts: list[tuple[Job, dict[str, NodeRecord]]] = []
    for job in plan_jobs(ctx, fold):
        reason = ctx.accountant.exhausted()
        if reason is not None:
            fold.budget_hit = reason
            break
        starts.append((job, dict(fold.nodes)))
        fold.started(job)
    # Announced together before any task exists, so their tool_call events always come after.
    await _flush(ctx, fold)
    for job, snapshot in starts:
        if job.kind == "execute":
            ctx.pool.start(job, execute(ctx, snapshot, job.node_id))
        elif job.kind == "expand":
            ctx.pool.start(job, expand(ctx, snapshot, job.node_id))
        elif job.kind == "branch":
            ctx.pool.start(job, branch(ctx, snapshot, job.node_id))
        else:
            ctx.pool.start(job, respond(ctx, snapshot, job.node_id))
        logger.debug("run=%s node=%s started %s", ctx.run_id, job.node_id, job.kind)


# Stops after which the calls in flight are worth finishing: the search had enough, not less
# than it wanted (a deadline or an exhausted budget says the opposite).
_GRACEFUL_STOPS: frozenset[StopReason] = frozenset({"max_paths", "early_stop"})


async def wind_down(ctx: RunContext, fold: TreeFold, stop: StopReason) -> None:
    """The search stopped: in-flight jobs end now, or (after max_paths or an early stop, with
    the cache on and a grace period) finish silently in the background so the model calls they
    paid for are cached; either way their nodes are cancelled in the tree."""
    params = ctx.params
    if stop in _GRACEFUL_STOPS and params.use_cache and params.stop_grace_s > 0:
        jobs = ctx.pool.detach(params.stop_grace_s, ctx.run_id)
    else:
        jobs = await ctx.pool.cancel()
    metrics = ctx.accountant.snapshot()
    for job in sorted(jobs, key=lambda j: (by_id(fold.nodes[j.node_id]), j.kind)):
        fold.stopped(job, "search stopped", metrics)
    await _flush(ctx, fold)


async def _next_finished(
    ctx: RunContext, fold: TreeFold
) -> list[tuple[Job, JobOutcome | BaseException]] | None:
    """Wait until a job ends; None at the deadline. A slot that comes free meanwhile (a job
    went into a tool call) is filled at once, within the round."""
    while True:
        finished = await ctx.pool.wait_any(within_s=max(0.0, ctx.time_left_s()))
        if finished:
            return finished
        if not ctx.pool.slots.freed.is_set():
            return None
        await launch(ctx, fold)


async def search(state: RunState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """One scheduling round (see the module docstring)."""
    ctx = runtime.context
    fold = fold_of(ctx.run_id, ctx.params, state)
    stop: StopReason | None = None
    steered = state.get("steered_through", 0)
    try:
        steered = await take_commands(ctx, fold, steered)
        stop = fold.stop_reason()
        if stop is None and ctx.time_left_s() <= 0:
            stop = "deadline"
        elif stop is None and fold.budget_hit is None:
            await launch(ctx, fold)
        # With `reserve`: nothing runs, nothing is left, paths are still wanted and the budget
        # let everything start: the best pruned candidate runs after all, one at a time.
        while (
            stop is None
            and ctx.params.reserve
            and not len(ctx.pool)
            and not (fold.held_back or fold.capped or fold.budget_hit)
            and fold.revive() is not None
        ):
            await launch(ctx, fold)
        if stop is None and not len(ctx.pool):
            # Nothing runs and nothing could start: the search is over.
            stop = fold.budget_hit or (
                "budget_llm_calls"  # what is left could carry no path to an answer
                if fold.held_back
                else ("max_nodes" if fold.capped else "frontier_exhausted")
            )
        if stop is None:
            finished = await _next_finished(ctx, fold)
            if finished is None:
                stop = "deadline"
            for job, outcome in finished or []:
                fold.apply(job, outcome, ctx.accountant.snapshot(), ctx.elapsed_s())
            await _flush(ctx, fold)
            stop = stop or fold.stop_reason()
        if stop is not None:
            await wind_down(ctx, fold, stop)
    except asyncio.CancelledError:
        await ctx.pool.cancel()
        raise
    update: dict[str, Any] = {
        "nodes": fold.changed,
        "budget_hit": fold.budget_hit,
        "capped": fold.capped,
        "metrics": ctx.accountant.snapshot(),
        "elapsed_s": round(ctx.elapsed_s(), 4),
        "steered_through": steered,
        "first": fold.first,
        "branched_at": fold.branched_at,
    }
    if stop is not None:
        logger.info("run=%s search stopped: %s", ctx.run_id, stop)
        update |= {"phase": "finish", "stop_reason": stop}
    return update
