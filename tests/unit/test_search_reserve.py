"""Budget-aware admission: near the end of the call budget, only work that can still reach an
answer starts."""

from __future__ import annotations

from agents.jobs import Job
from agents.nodes.reserve import affordable, to_answer
from agents.params import RunParams
from agents.state import NodeRecord
from tests.support.trees import tree

PARAMS = RunParams(max_depth=3, satisfaction=0.9)  # early stop on: path ends are judged


def _nodes() -> dict[str, NodeRecord]:
    return tree(("A", None), ("B", "A"), ("C", "B"), ("D", "B"))


def test_the_calls_to_an_answer_follow_the_job_and_the_depth() -> None:
    nodes = _nodes()
    plain = RunParams(max_depth=3)

    # Below max_depth: execute 1 + (progress 1 + replanner 1) + respond 1.
    assert to_answer(Job("execute", "n1.1"), nodes["n1.1"], PARAMS) == 4
    # At max_depth the expansion is the progress judgement alone.
    assert to_answer(Job("execute", "n1.1.1"), nodes["n1.1.1"], PARAMS) == 3
    assert to_answer(Job("expand", "n1.1.1"), nodes["n1.1.1"], PARAMS) == 2
    assert to_answer(Job("respond", "n1.1.1"), nodes["n1.1.1"], PARAMS) == 1
    # By default a path's end is not judged: no progress call.
    assert to_answer(Job("execute", "n1.1"), nodes["n1.1"], plain) == 3
    assert to_answer(Job("execute", "n1.1.1"), nodes["n1.1.1"], plain) == 2
    # Nor without evaluation, early stop or not.
    quick = RunParams(max_depth=3, evaluate=False, satisfaction=0.9)
    assert to_answer(Job("execute", "n1.1.1"), nodes["n1.1.1"], quick) == 2


def test_with_plenty_left_every_planned_job_starts() -> None:
    plan = [Job("execute", "n1.1.1"), Job("execute", "n1.1.2")]

    assert affordable(plan, _nodes(), [], PARAMS, 100) == plan


def test_near_the_end_steps_that_could_not_be_answered_wait() -> None:
    plan = [Job("respond", "n1"), Job("execute", "n1.1.1"), Job("execute", "n1.1.2")]

    # respond 1 + one leaf's chain 3 = 4: the second leaf would be paid for and lost.
    assert affordable(plan, _nodes(), [], PARAMS, 5) == plan[:2]


def test_what_the_jobs_in_flight_still_owe_is_set_aside_first() -> None:
    plan = [Job("execute", "n1.1.2")]
    in_flight = [Job("execute", "n1.1.1")]  # owes its progress call and its answer: 2

    assert affordable(plan, _nodes(), in_flight, PARAMS, 4) == []
    assert affordable(plan, _nodes(), in_flight, PARAMS, 5) == plan


def test_answers_are_always_admitted() -> None:
    plan = [Job("respond", "n1.1.1")]

    assert affordable(plan, _nodes(), [Job("execute", "n1.1.2")], PARAMS, 0) == plan
