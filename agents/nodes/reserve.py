"""Budget-aware admission of jobs: near the end of the call budget, work that could no longer
turn into an answer is not started, so the calls left finish the paths already under way.

A path's answer is its last step's execution, that step's expansion and the responder; a
step executed when too few calls are left for the rest of that chain is paid for and lost
(its path never gets an answer, so the vote never sees it). Pure functions of the tree, the
jobs and the number of calls left.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from agents.jobs import Job
from agents.nodes.evaluator import judges_ends
from agents.params import RunParams
from agents.state import NodeRecord


def expand_calls(node: NodeRecord, params: RunParams) -> int:
    """Model calls of expanding `node` when its path ends there: below `max_depth`, the
    replanner; the progress judgement when ends are judged (`judges_ends`)."""
    at_limit = node["depth"] + 1 >= params.max_depth
    return (1 if judges_ends(params) else 0) + (0 if at_limit else 1)


def to_answer(job: Job, node: NodeRecord, params: RunParams) -> int:
    """The fewest model calls from starting `job` to an answer on its path (the path ending
    right after it): execute, then expand, then respond."""
    if job.kind == "respond":
        return 1
    if job.kind == "expand":
        return expand_calls(node, params) + 1
    if job.kind == "branch":  # the proposal, then an alternative's step, expansion, answer
        return 1 + 1 + expand_calls(node, params) + 1
    return 1 + expand_calls(node, params) + 1


def still_owed(job: Job, node: NodeRecord, params: RunParams) -> int:
    """The calls an in-flight job's path needs after the job's own calls (which the budget has
    counted as they started) to reach an answer."""
    if job.kind == "execute":
        return expand_calls(node, params) + 1
    if job.kind == "expand":
        return 1
    if job.kind == "branch":
        return 1 + expand_calls(node, params) + 1
    return 0


def affordable(
    plan: Sequence[Job],
    nodes: Mapping[str, NodeRecord],
    in_flight: Iterable[Job],
    params: RunParams,
    calls_left: int,
) -> list[Job]:
    """The planned jobs (in priority order) that the calls left can still carry to an answer,
    after what the jobs in flight owe. Answers are always admitted: they are what the calls
    were spent for."""
    free = calls_left - sum(still_owed(j, nodes[j.node_id], params) for j in in_flight)
    admitted: list[Job] = []
    for job in plan:
        cost = to_answer(job, nodes[job.node_id], params)
        if job.kind != "respond" and cost > free:
            continue
        free -= cost
        admitted.append(job)
    return admitted
