"""Wires the engine's graph: plan -> (approve, with `approve_plan`) -> search (one round per
step) -> finish. Nothing else.

The routers are coroutines: LangGraph runs a plain function in the default thread pool, and a
thread hand-off per round costs more than the routing itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from agents.context import RunContext
from agents.nodes.approval import approve
from agents.nodes.planner import plan
from agents.nodes.search import search
from agents.nodes.vote import finish
from agents.state import Phase, RunState

Route = TypeVar("Route", bound=str)


def _route(state: RunState, routes: Mapping[Phase, Route], after: str) -> Route:
    """The node that follows for the run's phase; any other phase is a bug, never a route."""
    phase = state.get("phase")
    if phase is not None and phase in routes:
        return routes[phase]
    raise RuntimeError(f"impossible phase after {after}: {phase!r}")


async def route_after_plan(state: RunState) -> Literal["search", "approve"]:
    return _route(state, {"search": "search", "review": "approve"}, "planning")


async def route_after_approval(state: RunState) -> Literal["search", "__end__"]:
    return _route(state, {"search": "search", "rejected": "__end__"}, "the plan's review")


async def route_after_search(state: RunState) -> Literal["search", "finish"]:
    return _route(state, {"search": "search", "finish": "finish"}, "a search round")


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
