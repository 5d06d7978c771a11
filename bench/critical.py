"""The critical-path lower bound of a run, computed from the run's own events.

A child step can start only once its parent's step ran and the parent was expanded; a path's
answer only once its leaf was expanded; the vote only once every answer exists. So no schedule
can finish sooner than

    plan + max over the voted paths of Σ_nodes (step + expansion) + the leaf's answer + vote

with each term the job's own wall time as its event reports it (`plan.seconds`,
`node_finished.seconds`, `candidates.seconds`, `path_completed.seconds`, `vote.seconds`).
Wall time runs from `run_started.ts` to the terminal event's `ts`; wall ÷ bound is what the
orchestration (scheduling, checkpoints, events, concurrency limits) adds on top.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

# The order a run's end is looked for in its first-seen times.
TERMINAL_ORDER = ("done", "error", "cancelled")


class CriticalPath(TypedDict):
    """One run's timing as its events tell it."""

    wall_s: float
    bound_s: float
    ratio: float
    work_s: float
    chain: list[str]
    paths: int


def timestamp(event: Mapping[str, Any]) -> datetime:
    """An event's creation time (`ts` as a datetime or its ISO text)."""
    ts = event["ts"]
    return ts if isinstance(ts, datetime) else datetime.fromisoformat(ts)


def _seconds(event: Mapping[str, Any] | None) -> float:
    if event is None:
        return 0.0
    return float(event.get("seconds") or 0.0)


def critical_path(events: Sequence[Mapping[str, Any]]) -> CriticalPath:
    """The run's wall time, its critical-path bound, their ratio, and the total job time.

    Raises ValueError when the events lack a start, an end or a plan.
    """
    first: dict[str, Mapping[str, Any]] = {}
    steps: dict[str, Mapping[str, Any]] = {}  # node id -> its last finished step
    expansions: dict[str, Mapping[str, Any]] = {}  # node id -> its expansion
    answers: dict[str, Mapping[str, Any]] = {}  # leaf id -> path_completed
    work = 0.0
    for event in events:
        kind = event["type"]
        first.setdefault(kind, event)
        if kind == "node_finished":
            steps[event["node_id"]] = event
        elif kind == "candidates":
            expansions[event["parent_id"]] = event
        elif kind == "path_completed":
            answers[event["node_id"]] = event
        if kind in ("plan", "node_finished", "candidates", "path_completed", "vote"):
            work += _seconds(event)
    end = next((first[k] for k in TERMINAL_ORDER if k in first), None)
    reused = end is not None and bool(end.get("reused_from"))  # no search: no plan, no bound
    if "run_started" not in first or end is None or ("plan" not in first and not reused):
        raise ValueError("the events lack run_started, plan or a terminal event")
    vote = first.get("vote")
    voted = list(vote["candidates"]) if vote is not None else list(answers)
    best_chain: list[str] = []
    best = 0.0
    for leaf in voted:
        answer = answers.get(leaf)
        if answer is None:
            continue
        chain = list(answer["path"])
        length = sum(_seconds(steps.get(n)) + _seconds(expansions.get(n)) for n in chain)
        length += _seconds(answer)
        if length > best:
            best, best_chain = length, chain
    bound = _seconds(first.get("plan")) + best + _seconds(vote)
    wall = (timestamp(end) - timestamp(first["run_started"])).total_seconds()
    return {
        "wall_s": wall,
        "bound_s": bound,
        "ratio": wall / bound if bound > 0 else float("nan"),
        "work_s": work,
        "chain": best_chain,
        "paths": len(answers),
    }
