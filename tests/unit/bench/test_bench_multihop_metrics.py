"""The official HotpotQA metrics, on cases computed by hand."""

from __future__ import annotations

import pytest

from bench.multihop_metrics import (
    Scores,
    aggregate,
    answer_scores,
    best_answer_scores,
    joint_scores,
    normalize_answer,
    score_question,
    supporting_fact_scores,
)


def test_normalisation_lowers_and_collapses_whitespace() -> None:
    assert normalize_answer("  Robert   Erskine\tCHILDERS \n") == "robert erskine childers"


def test_normalisation_removes_articles_as_whole_words_only() -> None:
    assert normalize_answer("The Theatre of an Anagram, a tale") == "theatre of anagram tale"


def test_normalisation_removes_punctuation_before_articles() -> None:
    # "The-End" loses its hyphen first and becomes one word, which is no article.
    assert normalize_answer("The Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("The-End") == "theend"
    assert normalize_answer("(the) U.S.A.") == "usa"


def test_articles_and_punctuation_do_not_break_an_exact_match() -> None:
    scores = answer_scores("the Beatles.", "Beatles")

    assert scores == Scores(em=1.0, f1=1.0, precision=1.0, recall=1.0)


def test_a_partial_answer_gets_token_precision_and_recall() -> None:
    scores = answer_scores("Robert Erskine Childers", "Robert Erskine Childers DSC")

    assert scores.em == 0.0
    assert scores.precision == 1.0
    assert scores.recall == 0.75
    assert scores.f1 == pytest.approx(2 * 0.75 / 1.75)  # 0.857...


def test_repeated_tokens_count_only_as_often_as_in_the_other_answer() -> None:
    scores = answer_scores("new new york", "New York")

    assert scores.precision == pytest.approx(2 / 3)
    assert scores.recall == 1.0
    assert scores.f1 == pytest.approx(0.8)


def test_a_different_yes_no_answer_gets_no_f1_credit() -> None:
    # "no it is not" shares "no" with the gold answer: 0.4 by tokens, 0 by the official rule.
    assert answer_scores("no it is not", "no") == Scores(0.0, 0.0, 0.0, 0.0)
    assert answer_scores("yes", "yes, it is") == Scores(0.0, 0.0, 0.0, 0.0)
    assert answer_scores("yes", "no") == Scores(0.0, 0.0, 0.0, 0.0)


def test_noanswer_is_a_closed_answer_too() -> None:
    assert answer_scores("noanswer", "noanswer Paris") == Scores(0.0, 0.0, 0.0, 0.0)


def test_matching_yes_answers_score_fully() -> None:
    assert answer_scores("Yes.", "yes") == Scores(1.0, 1.0, 1.0, 1.0)


def test_an_empty_prediction_scores_zero() -> None:
    assert answer_scores("", "Paris") == Scores(0.0, 0.0, 0.0, 0.0)


def test_an_answer_that_normalises_to_nothing_matches_exactly_but_has_no_f1() -> None:
    # The official script's behaviour: EM compares strings, F1 needs a shared token.
    assert answer_scores("", "The") == Scores(em=1.0, f1=0.0, precision=0.0, recall=0.0)


def test_supporting_facts_partly_right() -> None:
    predicted = [("Henry Roth", 0), ("Henry Roth", 1), ("Irish Bulletin", 2)]
    gold = [("Henry Roth", 0), ("Robert Erskine Childers", 0)]

    scores = supporting_fact_scores(predicted, gold)

    assert scores.em == 0.0
    assert scores.precision == pytest.approx(1 / 3)
    assert scores.recall == 0.5
    assert scores.f1 == pytest.approx(0.4)


def test_supporting_facts_match_as_sets_of_pairs() -> None:
    predicted = [["Robert Erskine Childers", 0], ["Henry Roth", 0], ["Henry Roth", 0]]
    gold = [("Henry Roth", 0), ("Robert Erskine Childers", 0)]

    scores = supporting_fact_scores(predicted, gold)  # type: ignore[arg-type]  # JSON pairs

    assert scores == Scores(em=1.0, f1=1.0, precision=1.0, recall=1.0)


def test_a_fact_needs_its_sentence_not_only_its_title() -> None:
    scores = supporting_fact_scores([("Henry Roth", 1)], [("Henry Roth", 0)])

    assert scores == Scores(0.0, 0.0, 0.0, 0.0)


def test_no_predicted_facts_score_zero() -> None:
    assert supporting_fact_scores([], [("Henry Roth", 0)]) == Scores(0.0, 0.0, 0.0, 0.0)


def test_joint_scores_multiply_precision_recall_and_em() -> None:
    answer = Scores(em=0.0, f1=6 / 7, precision=1.0, recall=0.75)
    support = Scores(em=0.0, f1=0.4, precision=1 / 3, recall=0.5)

    joint = joint_scores(answer, support)

    assert joint.precision == pytest.approx(1 / 3)
    assert joint.recall == pytest.approx(0.375)
    # 2 * (1/3 * 0.375) / (1/3 + 0.375) = 0.25 / 0.7083...
    assert joint.f1 == pytest.approx(0.25 / (1 / 3 + 0.375))
    assert joint.em == 0.0


def test_joint_em_needs_both_exact() -> None:
    exact = Scores(1.0, 1.0, 1.0, 1.0)

    assert joint_scores(exact, exact) == exact
    assert joint_scores(exact, Scores(0.0, 0.5, 0.5, 0.5)).em == 0.0


def test_a_question_without_predicted_facts_scores_only_its_answer() -> None:
    scores = score_question("Paris", [("France", 0)], "paris", None)

    assert scores.answer == Scores(1.0, 1.0, 1.0, 1.0)
    assert scores.supporting == Scores(0.0, 0.0, 0.0, 0.0)
    assert scores.joint == Scores(0.0, 0.0, 0.0, 0.0)


def test_a_question_without_an_answer_scores_zero_on_answer_and_joint() -> None:
    scores = score_question("Paris", [("France", 0)], None, [("France", 0)])

    assert scores.answer == Scores(0.0, 0.0, 0.0, 0.0)
    assert scores.supporting == Scores(1.0, 1.0, 1.0, 1.0)
    assert scores.joint == Scores(0.0, 0.0, 0.0, 0.0)


def test_aggregate_is_the_mean_over_questions_under_the_official_names() -> None:
    right = score_question("Paris", [("France", 0)], "Paris", [("France", 0)])
    half = score_question(
        "Robert Erskine Childers DSC",
        [("Henry Roth", 0), ("Robert Erskine Childers", 0)],
        "Robert Erskine Childers",
        [("Henry Roth", 0)],
    )

    means = aggregate([right, half])

    assert set(means) == {
        *("em", "f1", "prec", "recall"),
        *("sp_em", "sp_f1", "sp_prec", "sp_recall"),
        *("joint_em", "joint_f1", "joint_prec", "joint_recall"),
    }
    assert means["em"] == 0.5
    assert means["f1"] == pytest.approx((1 + 6 / 7) / 2)
    assert means["recall"] == pytest.approx((1 + 0.75) / 2)
    assert means["sp_prec"] == 1.0
    assert means["sp_recall"] == 0.75
    assert means["joint_recall"] == pytest.approx((1 + 0.75 * 0.5) / 2)
    assert means["joint_em"] == 0.5


def test_aggregating_no_questions_is_refused() -> None:
    with pytest.raises(ValueError, match="no questions"):
        aggregate([])


def test_an_alias_matching_exactly_is_an_exact_match() -> None:
    scores = best_answer_scores("Menzies", ["Robert Menzies", "Sir Robert Menzies", "Menzies"])

    assert scores == Scores(em=1.0, f1=1.0, precision=1.0, recall=1.0)


def test_the_best_f1_over_the_answer_and_its_aliases_counts() -> None:
    # Three predicted tokens, two shared with each. Against the gold "Sir Robert Gordon
    # Menzies": precision 2/3, recall 2/4, F1 4/7; against the alias "Robert Menzies":
    # precision 2/3, recall 2/2, F1 0.8. The alias's counts, with its precision and recall.
    scores = best_answer_scores(
        "Robert Menzies PM", ["Sir Robert Gordon Menzies", "Robert Menzies"]
    )

    assert scores.em == 0.0
    assert scores.f1 == pytest.approx(0.8)
    assert (scores.precision, scores.recall) == (pytest.approx(2 / 3), 1.0)


def test_exact_match_and_f1_are_each_the_best_over_the_answers() -> None:
    # "no" matches the alias exactly; the closed-answer rule gives the gold answer F1 0.
    scores = best_answer_scores("no", ["not at all", "no"])

    assert (scores.em, scores.f1) == (1.0, 1.0)
    assert best_answer_scores("Leeds", ["Paris"]) == answer_scores("Leeds", "Paris")
    with pytest.raises(ValueError, match="no gold answer"):
        best_answer_scores("Leeds", [])


def test_a_question_with_aliases_scores_its_answer_against_every_one() -> None:
    scores = score_question(("Robert Menzies", "Menzies"), [("Leeds", 0)], "menzies", [])

    assert (scores.answer.em, scores.answer.f1) == (1.0, 1.0)
    assert score_question("Robert Menzies", [], "menzies", []).answer.em == 0.0
