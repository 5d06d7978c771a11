"""Steering at the start of a scheduling round: the run's new commands (agents/steering.py)
taken from its command source and folded into the tree, each announced as a `steered` event;
the jobs of pruned nodes are cancelled."""

from __future__ import annotations

import logging

from agents.context import RunContext
from agents.events import CommandApplied, NodeBrief
from agents.nodes.fold import TreeFold
from agents.steering import steer

logger = logging.getLogger(__name__)


async def take_commands(ctx: RunContext, fold: TreeFold, after: int) -> int:
    """Apply the commands sent since command id `after`; the id of the last one taken. A
    source that cannot be read costs this round its commands, not the run."""
    if ctx.commands is None:
        return after
    try:
        commands = await ctx.commands.commands_after(ctx.run_id, after)
    except Exception as e:
        logger.warning("run=%s steering commands not read (%s)", ctx.run_id, type(e).__name__)
        return after
    for command in commands:
        outcome = steer(fold.nodes, command, ctx.params)
        for node in outcome.updates.values():
            fold.put(node)
        if outcome.stop:
            await ctx.pool.cancel(nodes=outcome.stop)
        created = fold.nodes[outcome.created] if outcome.created else None
        await ctx.emit(
            CommandApplied(
                run_id=ctx.run_id,
                command=command.command,
                node_id=command.node_id,
                step=command.step,
                by=command.by,
                applied=outcome.refused is None,
                reason=outcome.refused,
                pruned=sorted(outcome.stop),
                node=NodeBrief(
                    node_id=created["id"],
                    parent_id=created["parent_id"],
                    depth=created["depth"],
                    step=created["step"],
                    score=created["prior"],
                )
                if created
                else None,
            )
        )
        logger.info(
            "run=%s %s %s by %s: %s",
            ctx.run_id,
            command.command,
            command.node_id,
            command.by or "the caller",
            outcome.refused or "applied",
        )
        after = command.id
    return after
