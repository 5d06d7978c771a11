"""Results of one data set and setting measured with two models, taken together: the default and
its chain paired question by question from one run each, whichever model ran it."""

from __future__ import annotations

from typing import Any

from bench.multihop_across import across_headlines, across_lines, pooled_rows
from tests.support.text import assert_says


def _row(question: str, config: str, f1: float, **more: Any) -> dict[str, Any]:
    return {
        "id": question,
        "config": config,
        "corpus": "pooled",
        "f1": f1,
        "em": 1.0 if f1 == 1.0 else 0.0,
        "sp_f1": more.pop("sp_f1", 0.5),
        "llm_calls": more.pop("calls", 10),
        "citations": more.pop("citations", 1),
        "misverified": 0,
        **more,
    }


def _results(model: str, rows: list[dict[str, Any]], budget: int = 32) -> dict[str, Any]:
    return {
        "model": "local",
        "model_detail": f"local ({model})",
        "config": {
            "dataset": "HotpotQA",
            "corpus": "pooled",
            "max_llm_calls": budget,
            "default": "anytime",
        },
        "totals": {"anytime": {}, "chain@first": {}},
        "rows": rows,
    }


LARGE = _results(
    "large",
    [
        _row("q1", "chain@first", 0.0, calls=8),
        _row("q1", "anytime", 1.0, calls=24, sp_f1=1.0),
        _row("q2", "chain@first", 1.0, calls=8),
        _row("q2", "anytime", 1.0, calls=24),
    ],
)
SMALL = _results(
    "small",
    [
        _row("q3", "chain@first", 0.5),
        _row("q3", "anytime", 0.5, citations=2),
        _row("q4", "anytime", 1.0),  # its first answer never came: no pair
    ],
)


def test_each_model_gives_the_questions_it_paired() -> None:
    rows, counts = pooled_rows([LARGE, SMALL])

    assert counts == [("local (large)", 2), ("local (small)", 1)]
    assert sorted((r["id"], r["config"], r["f1"]) for r in rows) == [
        ("q1", "anytime", 1.0),
        ("q1", "chain@first", 0.0),
        ("q2", "anytime", 1.0),
        ("q2", "chain@first", 1.0),
        ("q3", "anytime", 0.5),
        ("q3", "chain@first", 0.5),
    ]


def test_two_models_on_one_data_set_and_setting_give_one_paragraph_of_paired_figures() -> None:
    [line, blank] = across_lines([LARGE, SMALL])

    assert blank == ""
    assert_says(
        line,
        "**HotpotQA, open-corpus setting, the models together** (3 questions at 32 model "
        "calls: 2 with local (large), 1 with local (small);",
        "answer F1 0.83 against 0.50 (better on 1, worse on 0, tied on 2; mean difference +0.333",
        "supporting-fact F1 0.67 against 0.50 (better on 1, worse on 0, tied on 2",
        "right for the default alone on 1 and for the chain alone on 0",
        # (24 + 24 + 10) / (8 + 8 + 10)
        "Model calls 2.23 times the chain's",
        "of the default's 4 verified citations, 0 misverified",
    )


def test_results_that_differ_in_budget_share_questions_or_come_from_one_model_are_apart() -> None:
    other_budget = {**SMALL, "config": {**SMALL["config"], "max_llm_calls": 16}}
    # The small model on one of the large one's questions too: two models on the same
    # questions, which their own tables compare.
    shared = {**SMALL, "rows": [*SMALL["rows"], _row("q2", "chain@first", 0.0)]}

    assert across_lines([LARGE, other_budget]) == []
    assert across_lines([LARGE, shared]) == []
    assert across_headlines([LARGE, shared]) == []
    assert across_lines([LARGE]) == []


def test_the_page_s_top_gets_a_sentence_for_the_models_together() -> None:
    [sentence] = across_headlines([LARGE, SMALL])

    assert sentence.startswith(
        "On 3 HotpotQA questions in the open-corpus setting (2 with local (large) and 1 with "
        "local (small), 32 model calls each) the default search scores answer F1 0.83 against "
        "0.50 for its first answer (a chain's): +0.333, 95 % paired interval"
    )
    assert across_headlines([LARGE]) == []


def test_the_paragraph_says_what_the_best_path_would_have_scored_where_rows_carry_paths() -> None:
    def paths(*f1s: float) -> list[dict[str, Any]]:
        return [{"node": f"n{i}", "f1": f1} for i, f1 in enumerate(f1s, start=1)]

    small = {
        **SMALL,
        "rows": [
            _row("q3", "chain@first", 0.5),
            _row("q3", "anytime", 0.5, candidates=paths(0.5, 1.0)),
        ],
    }
    large = {
        **LARGE,
        "rows": [
            *LARGE["rows"][:3],
            _row("q2", "anytime", 1.0, candidates=paths(1.0, 0.0)),
        ],
    }

    [line, _] = across_lines([large, small])
    [without, _] = across_lines([LARGE, SMALL])

    # q1 carries no paths; q2's best is its chosen 1.0, q3's best 1.0 against 0.5 chosen.
    assert_says(
        line,
        "answer F1 would have been 1.00 against 0.75 chosen, on the 2 questions whose rows "
        "carry their candidates",
    )
    assert "oracle" not in without
