"""When the evaluator's progress call is bought: only where its judgement can change the search."""

from __future__ import annotations

from agents.jobs import Judged
from agents.nodes.evaluator import judges_ends, progress_wanted
from agents.params import RunParams

SCORED = Judged(0.7, True, "")


def test_scored_live_continuations_make_the_progress_call_redundant() -> None:
    assert not progress_wanted(RunParams(), [SCORED])
    assert not progress_wanted(RunParams(), [None, SCORED])
    assert not progress_wanted(RunParams(satisfaction=0.9), [SCORED])


def test_only_unscored_continuations_are_observed_through_the_evaluator() -> None:
    assert progress_wanted(RunParams(), [None, None])


def test_a_path_end_is_judged_only_when_early_stop_reads_the_judgement() -> None:
    assert not progress_wanted(RunParams(), [])
    assert progress_wanted(RunParams(satisfaction=0.9), [])
    assert judges_ends(RunParams(satisfaction=0.9))
    assert not judges_ends(RunParams())


def test_without_evaluation_the_evaluator_is_never_called() -> None:
    off = RunParams(evaluate=False, satisfaction=0.9)

    assert not progress_wanted(off, [])
    assert not progress_wanted(off, [None])
    assert not judges_ends(off)
