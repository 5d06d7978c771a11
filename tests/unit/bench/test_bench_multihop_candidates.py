"""Every answer a run's tree reached, scored against the gold: the headroom of the choice and
the token-confidence figures the report draws from them."""

from __future__ import annotations

from typing import Any

import pytest

from bench.multihop_candidates import (
    Candidate,
    auroc,
    candidate_lines,
    candidates_of,
    weakness_lines,
    wrong_first_lines,
)
from bench.multihop_rows import predicted_answer
from tests.support.text import assert_says
from tests.unit.search.trees import answered, cited, done, grounding


def _tree() -> list[Any]:
    """The first path answers "Paris" (grounded, confident); a sibling "Lyon" (one rejected
    citation, less confident); a step that never answered."""
    first = answered(
        done(None, 1, "find the capital"),
        "Paris [1]",
        grounding(1.0, [cited("n1", "Paris is the capital")]),
    )
    first["confidence"] = -0.05
    other = answered(
        done(None, 2, "look elsewhere"),
        "Lyon, said to be [1]",
        grounding(0.5, [cited("n2", "Lyon")], rejected=1),
    )
    other["confidence"] = -0.9
    unanswered = done(None, 3, "a step with no answer")
    return [first, other, unanswered]


def test_each_answered_leaf_is_scored_with_its_grounding_confidence_and_place() -> None:
    found = candidates_of(_tree(), ["Paris"], "n1", predicted_answer)

    assert [c["node"] for c in found] == ["n1", "n2"]
    paris, lyon = found
    assert (paris["predicted"], paris["f1"], paris["em"]) == ("Paris", 1.0, 1.0)
    assert (paris["verified"], paris["first"], paris["chosen"]) == (True, True, True)
    assert paris["confidence"] == -0.05
    assert lyon["predicted"] == "Lyon, said to be"
    assert (lyon["f1"], lyon["em"]) == (0.0, 0.0)
    # A rejected citation: not every citation verified; off the first path; not chosen.
    assert (lyon["verified"], lyon["first"], lyon["chosen"]) == (False, False, False)
    assert lyon["groundedness"] == 0.5


def test_a_candidate_scores_against_the_best_of_the_gold_answers() -> None:
    found = candidates_of(_tree(), ["Marseille", "Lyon"], None, predicted_answer)

    # "lyon said to be" against "lyon": precision 1/4, recall 1.
    assert found[1]["f1"] == pytest.approx(0.4)
    assert not any(c["chosen"] for c in found)


@pytest.mark.parametrize(
    ("right", "wrong", "expected"),
    [
        ([-0.1, -0.2], [-0.5, -0.9], 1.0),
        ([-0.5], [-0.1], 0.0),
        ([-0.3, -0.1], [-0.3], 0.75),  # a tie counts a half
        ([], [-0.3], None),
    ],
)
def test_auroc_is_the_chance_a_right_answer_ranks_above_a_wrong_one(
    right: list[float], wrong: list[float], expected: float | None
) -> None:
    assert auroc(right, wrong) == expected


def _row(config: str, f1: float, predicted: str, candidates: list[Candidate]) -> dict[str, Any]:
    return {"config": config, "f1": f1, "predicted": predicted, "candidates": candidates}


def test_the_report_says_what_a_better_choice_could_add_and_how_confidence_sorts() -> None:
    won = candidates_of(_tree(), ["Paris"], "n1", predicted_answer)
    lost = candidates_of(_tree(), ["Lyon"], "n1", predicted_answer)
    rows = [
        _row("anytime", 1.0, "Paris", won),
        _row("anytime", 0.0, "Paris", lost),  # "Lyon, said to be" scored 0.4: headroom
        {"config": "anytime", "f1": 0.0, "predicted": "x"},  # an old row: left out
        _row("chain", 0.0, "Paris", lost),  # another configuration: left out
    ]

    [blank, text] = candidate_lines({"rows": rows}, "anytime")

    assert blank == ""
    assert "in the 2 `anytime` rows" in text
    assert "higher F1 than the chosen one on 1 question(s)" in text
    assert "mean answer F1 was 0.70 against 0.50 chosen" in text
    assert "another answer than the chosen on 2" in text
    assert (
        "Paths a question that reached the first answer: 1.0 on average; reached the most "
        "common other answer: 1.0; another answer reached by two paths or more (what the "
        "choice rule asks before it may replace a grounded first answer) on 0." in text
    )
    # Right (F1 >= 0.5): the first row's Paris (-0.05); wrong: its Lyon (-0.9) and both of the
    # second row (-0.05 and -0.9). Paris ranks above two of three wrong ones and ties one.
    assert "over 4 answers" in text
    assert "-0.050 for the 1 right ones (F1 ≥ 0.5) against -0.617 for the 3 wrong ones" in text
    assert "probability 0.83" in text


def test_paths_whose_answers_agree_count_as_one_answer() -> None:
    first = answered(done(None, 1, "a"), "Paris", grounding(1.0, [cited("n1", "Paris")]))
    again = answered(done(None, 2, "b"), "paris.", grounding(1.0, [cited("n2", "Paris")]))
    lyon = [
        answered(done(None, i, "c"), "Lyon", grounding(1.0, [cited(f"n{i}", "Lyon")]))
        for i in (3, 4, 5)
    ]
    found = candidates_of([first, again, *lyon], ["Paris"], "n1", predicted_answer)

    [_, text] = candidate_lines({"rows": [_row("anytime", 1.0, "Paris", found)]}, "anytime")

    assert "first answer: 2.0 on average; reached the most common other answer: 3.0" in text
    assert "replace a grounded first answer) on 1." in text


def test_no_figures_from_rows_without_candidates() -> None:
    rows = [{"config": "anytime", "f1": 1.0, "predicted": "x"}]
    assert candidate_lines({"rows": rows}, "anytime") == []


def test_the_report_counts_what_held_the_search_on_past_its_first_answer() -> None:
    rows = [
        {"config": "anytime", "first_weak": []},
        {"config": "anytime", "first_weak": ["empty_steps", "undone"]},
        {"config": "anytime", "first_weak": ["undone"]},
        {"config": "anytime", "first_weak": ["missing_entities"]},
        {"config": "anytime"},  # an older row: left out
        {"config": "chain", "first_weak": ["undone"]},  # another search
    ]

    [blank, text] = weakness_lines({"rows": rows}, "anytime")

    assert blank == ""
    assert "sufficient (nothing weak: the run may stop there) on 1 of the 4 `anytime`" in text
    assert text.endswith(
        "what was found weak: an entity of the question no evidence names on 1, a step that "
        "brought no new evidence on 1, planned steps not run on 2."
    )
    assert weakness_lines({"rows": rows[4:]}, "anytime") == []


def _first_and_final(
    question: str, first: str, first_f1: float, found: list[Candidate]
) -> list[Any]:
    """A run's two rows: its first answer's (`chain@first`) and its final answer's."""
    return [
        {"id": question, "config": "chain@first", "f1": first_f1, "predicted": first},
        {**_row("anytime", first_f1, first, found), "id": question},
    ]


def test_where_the_first_answer_was_wrong_the_report_says_what_the_other_paths_reached() -> None:
    tree = _tree()
    paris_only = tree[:1]
    paris_twice = [*paris_only, answered(done(None, 4, "d"), "paris.", grounding(1.0, []))]
    rows = [
        # Gold "Lyon": the first answer "Paris" is wrong and the sibling's "Lyon, ..." (0.4) too.
        *_first_and_final(
            "q1", "Paris", 0.0, candidates_of(tree, ["Lyon"], "n1", predicted_answer)
        ),
        # Gold "Lyon, said to be": the sibling is right.
        *_first_and_final(
            "q2", "Paris", 0.0, candidates_of(tree, ["Lyon said to be"], "n1", predicted_answer)
        ),
        # No path off the first one answered; another's only said the first answer again.
        *_first_and_final(
            "q3", "Paris", 0.0, candidates_of(paris_only, ["Nice"], "n1", predicted_answer)
        ),
        *_first_and_final(
            "q4", "Paris", 0.0, candidates_of(paris_twice, ["Nice"], "n1", predicted_answer)
        ),
        # A right first answer: left out.
        *_first_and_final(
            "q5", "Paris", 1.0, candidates_of(tree, ["Paris"], "n1", predicted_answer)
        ),
    ]
    for row in rows:
        row["corpus"] = "pooled"
    # The gold paragraphs read: q1's first path had read both; q2's tree read both, its first
    # path one; q3 and q4 (older rows) do not say.
    read = {("q1", "chain@first"): 1.0, ("q1", "anytime"): 1.0}
    read |= {("q2", "chain@first"): 0.5, ("q2", "anytime"): 1.0}
    read |= {("q5", "chain@first"): 1.0, ("q5", "anytime"): 1.0}
    for row in rows:
        share = read.get((row["id"], row["config"]))
        if share is not None:
            row["gold_on_path" if row["config"] == "chain@first" else "gold_seen"] = share

    [blank, text] = wrong_first_lines({"rows": rows}, "anytime", "chain@first")

    assert blank == ""
    assert_says(
        text,
        "(F1 below 0.5, 4 of the `anytime` runs that carry their candidates)",
        "reached no answer on 1, only the first answer again on 1, other answers, none right, "
        "on 1, and a right answer on 1",
        "Of the 2 whose rows record the paragraphs read, the first path had read every gold "
        "paragraph on 1, and the tree as a whole on 2",
        "the model read it into a wrong answer",
    )
    assert wrong_first_lines({"rows": rows}, "anytime", "no-such-row") == []

    # q3 read half the gold on every path: now most wrong first answers missed some, and the
    # conclusion is about retrieval, not reading.
    for row in rows:
        if row["id"] == "q3":
            row["gold_on_path" if row["config"] == "chain@first" else "gold_seen"] = 0.5
    [_, text] = wrong_first_lines({"rows": rows}, "anytime", "chain@first")
    assert_says(
        text,
        "Of the 3 whose rows record the paragraphs read, the first path had read every gold "
        "paragraph on 1, and the tree as a whole on 2",
        "most wrong first answers had missed a gold paragraph, and the other paths read it on "
        "1 more: retrieval failed more often than reading.",
    )
    assert "read it into a wrong answer" not in text
