"""Wires the engine's graph: plan -> (approve, with `approve_plan`) -> search (one round per
step) -> finish. Nothing else.

The routers are coroutines: LangGraph runs a plain function in the default thread pool, and a
thread hand-off per round costs more than the routing itself.
"""

from __future__ import annotations

from typing import Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from agents.context import RunContext
from agents.nodes.approval import approve
from agents.nodes.planner import plan
from agents.nodes.search import search
from agents.nodes.vote import finish
from agents.state import RunState


async def route_after_plan(state: RunState) -> Literal["search", "approve"]:
    phase = state.get("phase")
    if phase == "search":
        return "search"
    if phase == "review":
        return "approve"
    raise RuntimeError(f"impossible phase after planning: {phase!r}")


async def route_after_approval(state: RunState) -> Literal["search", "__end__"]:
    phase = state.get("phase")
    if phase == "search":
        return "search"
    if phase == "rejected":
        return "__end__"  # END
    raise RuntimeError(f"impossible phase after the plan's review: {phase!r}")


async def route_after_search(state: RunState) -> Literal["search", "finish"]:
    phase = state.get("phase")
    if phase == "search":
        return "search"
    if phase == "finish":
        return "finish"
    raise RuntimeError(f"impossible phase after a search round: {phase!r}")


def build_graph(
    checkpointer: BaseCheckpointSaver[str] | None = None,
) -> CompiledStateGraph[RunState, RunContext, RunState, RunState]:
    """The compiled engine graph (routers only; the finish node always ends the run, as a
    rejected plan does)."""
    builder = StateGraph(RunState, context_schema=RunContext)
    builder.add_node("plan", plan)
    builder.add_node("approve", approve)
    builder.add_node("search", search)
    builder.add_node("finish", finish)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", route_after_plan, ["search", "approve"])
    builder.add_conditional_edges("approve", route_after_approval, ["search", END])
    builder.add_conditional_edges("search", route_after_search, ["search", "finish"])
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=checkpointer, name="plantree")
