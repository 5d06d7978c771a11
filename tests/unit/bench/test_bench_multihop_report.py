"""The multi-hop section of docs/benchmarks.md: the question-by-question counts, the default's
two rows from one run, and both settings."""

from __future__ import annotations

import pytest

from bench.multihop_compare import head_to_head
from bench.multihop_report import code_lines, command, headline, section, table, wall_lines
from bench.multihop_versus import (
    again_lines,
    agreement_lines,
    anytime_lines,
    head_to_head_lines,
    repeat_lines,
    reserve_lines,
    wide_lines,
)
from bench.stats import paired_interval
from tests.support.text import assert_says


def _paragraph(lines: list[str]) -> str:
    """The one paragraph of a part of the section, after the blank line that opens it."""
    [blank, line] = lines
    assert blank == ""
    return line


def _compared(
    rows: list[dict[str, object]], *configs: str, budget: int | None = None
) -> dict[str, object]:
    """The results of `configs` as the report reads them: their `rows`, no totals of their own,
    and the call budget when given."""
    multihop: dict[str, object] = {"totals": {config: {} for config in configs}, "rows": rows}
    if budget is not None:
        multihop["config"] = {"max_llm_calls": budget}
    return multihop


def test_head_to_head_counts_only_questions_both_configurations_answered() -> None:
    rows = [
        {"id": "q1", "config": "mcts", "f1": 1.0},
        {"id": "q1", "config": "chain", "f1": 0.5},
        {"id": "q2", "config": "mcts", "f1": 0.0},
        {"id": "q2", "config": "chain", "f1": 0.4},
        {"id": "q3", "config": "mcts", "f1": 0.2},
        {"id": "q3", "config": "chain", "f1": 0.2},
        {"id": "q4", "config": "mcts", "f1": 1.0},  # no chain row: not counted
    ]

    assert head_to_head(rows, "mcts", "chain", "f1") == (1, 1, 1)


def _row(question: str, config: str, f1: float, paths: int, calls: int = 6) -> dict[str, object]:
    return {
        "id": question,
        "config": config,
        "f1": f1,
        "sp_f1": 0.0,
        "paths": paths,
        "llm_calls": calls,
    }


def test_the_wide_configurations_are_counted_against_the_default_on_their_questions() -> None:
    rows = [
        _row("q1", "mcts", 1.0, 1, calls=5),
        _row("q1", "breadth", 0.0, 3, calls=10),  # wider and worse
        _row("q2", "mcts", 0.0, 2, calls=7),
        _row("q2", "breadth", 0.5, 2, calls=8),  # wider and better
        # No breadth row: not counted, neither its calls nor its F1 in the default's figures.
        _row("q3", "mcts", 0.9, 2, calls=16),
    ]
    # The totals are over every question a configuration ran; the comparison is not.
    totals = {"mcts": {"llm_calls": 9.3, "f1": 0.63}, "breadth": {"llm_calls": 9.0, "f1": 0.25}}
    multihop = {"totals": totals, "rows": rows}

    line = _paragraph(wide_lines(multihop))

    assert "on the same 2 questions — answer F1: better on 1, worse on 1, tied on 0" in line
    assert "two paths or more on 2 of them (the default on 1), and on 1 of those" in line
    assert line.endswith(
        "On those questions it made 9.0 model calls a question against the default's 6.0, "
        "for an answer F1 of 0.25 against 0.50."
    )


def test_the_paired_interval_brackets_the_mean_difference_and_is_seeded() -> None:
    a = [1.0, 0.0, 1.0, 0.5, 0.0, 1.0]
    b = [0.0, 0.0, 1.0, 0.5, 0.5, 0.0]

    mean, low, high = paired_interval(a, b)

    assert mean == pytest.approx(1.5 / 6)
    assert low < mean < high
    assert (low, high) == paired_interval(a, b)[1:]  # the same draws every time
    assert paired_interval([0.3] * 5, [0.3] * 5) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="equal"):
        paired_interval([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-empty"):
        paired_interval([], [])


def _ran(
    question: str, config: str, predicted: str, f1: float, **fields: object
) -> dict[str, object]:
    return {
        "id": question,
        "config": config,
        "predicted": predicted,
        "f1": f1,
        "sp_f1": fields.pop("sp_f1", 0.0),
        "paths": fields.pop("paths", 1),
        "llm_calls": fields.pop("calls", 8),
        "stop_reason": fields.pop("stop", "frontier_exhausted"),
        **fields,
    }


def test_the_reserve_is_compared_with_the_default_on_their_questions() -> None:
    rows = [
        _ran("q1", "reserve", "Paris", 1.0, sp_f1=0.8, paths=2, revived=1, agreeing=1, calls=12),
        _ran("q1", "mcts", "Paris", 1.0, sp_f1=0.5),
        _ran("q2", "reserve", "Lyon", 0.0, paths=2, revived=1, agreeing=0, calls=10),
        _ran("q2", "mcts", "Nice", 0.0, calls=6),
        _ran("q3", "reserve", "yes", 1.0, revived=0, agreeing=0),
        _ran("q3", "mcts", "yes", 1.0),
        # No row of the default: not compared.
        _ran("q4", "reserve", "no", 0.0, revived=1, agreeing=1),
    ]
    for row in rows:
        row["wall_s"] = 10.0 * float(str(row["llm_calls"]))
    multihop = _compared(rows, "mcts", "reserve")

    line = _paragraph(reserve_lines(multihop))

    assert_says(
        line,
        "on the same 3 questions — answer F1: better on 0, worse on 0, tied on 3",
        "supporting-fact F1: better on 1, worse on 0, tied on 2",
        "answer F1 +0.000 (+0.000 to +0.000)",
        "A revived path ran to an answer on 2 of them",
        "lent it its quotes on 1; the two gave the same answer text on 2",
        "It cost 10.0 model calls a question against 7.3, and 100 s against 73 s",
    )


def test_the_default_against_the_chain_counts_paths_and_ends() -> None:
    rows = [
        _ran("q1", "mcts", "Paris", 1.0, paths=2, revived=1, agreeing=1),
        _ran("q1", "chain", "Lyon", 0.0),
        _ran("q2", "mcts", "Nice", 0.0, stop="budget_llm_calls"),
        _ran("q2", "chain", "Nice", 0.0),
    ]
    multihop = _compared(rows, "mcts", "chain")

    line = _paragraph(head_to_head_lines(multihop))

    assert_says(
        line,
        "answer F1: better on 1, worse on 0, tied on 1",
        "answer F1 +0.500 (+0.000 to +1.000)",
        "two paths or more on 1 of 2 questions, 1 of them with a path from the reserve",
        "agreed with the chosen answer (lending it its quotes) on 1; 1 ended",
        "and 1 on the call budget",
    )


def test_the_default_s_ends_are_explained_from_the_rows_that_record_its_tree() -> None:
    rows = [
        _ran("q1", "mcts", "Paris", 1.0, calls=6, branched=0, pruned=0),
        _ran("q1", "chain", "Paris", 1.0),
        _ran("q2", "mcts", "Nice", 0.0, calls=10, branched=2, pruned=1),
        _ran("q2", "chain", "Nice", 0.0),
        _ran("q3", "mcts", "Lyon", 0.0, calls=16, stop="budget_llm_calls", branched=1, pruned=0),
        _ran("q3", "chain", "Lyon", 0.0),
        _ran("q4", "mcts", "Metz", 0.0, calls=4),  # read back from before the tree was recorded
        _ran("q4", "chain", "Metz", 0.0),
    ]
    multihop = _compared(rows, "mcts", "chain", budget=16)

    [_, line] = head_to_head_lines(multihop)

    assert_says(
        line,
        "Why, from the 3 of its runs whose rows record the tree",
        "(the tree never branched) on 1; candidates were pruned on 1",
        "before any path was complete on 0",
        # Over q1 and q2, the two that ran out of nodes: (16 - 6 + 16 - 10) / 2.
        "the 2 that ran out of nodes left 8.0 of the 16 calls unspent on average.",
    )
    assert "A tree that does not branch is a chain" not in line  # 1 of 3 is not most
    assert "never finished" not in line


def test_most_trees_unbranched_or_unfinished_are_said_to_be_so() -> None:
    rows = [
        _ran("q1", "mcts", "Paris", 1.0, calls=6, branched=0, pruned=0, paths=1),
        _ran("q1", "chain", "Paris", 1.0),
        _ran("q2", "mcts", "Nice", 0.0, calls=5, branched=0, pruned=0, paths=1),
        _ran("q2", "chain", "Nice", 0.0),
    ]
    multihop = _compared(rows, "mcts", "chain", budget=16)
    [_, line] = head_to_head_lines(multihop)
    assert "A tree that does not branch is a chain" in line
    assert "never finished" not in line

    for row in rows:
        if row["config"] == "mcts":
            row.update(paths=0, stop_reason="budget_llm_calls", llm_calls=16, branched=2)
    [_, line] = head_to_head_lines(multihop)
    assert "before any path was complete on 2 (the answer is then written from" in line
    assert "ran out of nodes" not in line
    assert "never finished, while the chain spent them all on its one path." in line
    assert "A tree that does not branch is a chain" not in line


def test_a_second_run_of_the_chain_measures_the_run_to_run_variation() -> None:
    rows = [
        _ran("q1", "chain", "Paris", 1.0),
        _ran("q1", "chain-again", "Lyon", 0.0),
        _ran("q2", "chain", "Nice", 0.5),
        _ran("q2", "chain-again", "Nice", 0.5),
        _ran("q3", "chain", "Nice", 0.5),  # not run again: not compared
    ]
    multihop = _compared(rows, "chain", "chain-again")

    line = _paragraph(repeat_lines(multihop))

    assert_says(
        line,
        "on 2 questions gave a different answer on 1",
        "answer F1: better on 0, worse on 1, tied on 1",
        "answer F1 -0.500 (-1.000 to +0.000)",
    )


def test_the_command_names_the_local_model_the_rows_came_from() -> None:
    multihop = {
        "model": "local",
        "model_detail": "local (qwen2.5-coder-1.5b)",
        "config": {"questions": 20, "max_llm_calls": 16, "measured": ["beam"]},
        "totals": {"chain": {}, "mcts": {}, "beam": {}},
    }

    assert command(multihop, "bench/results/qwen1.5b") == (
        "LATS_LOCAL_MODEL=qwen2.5-coder-1.5b .venv/bin/python -m bench --only multihop "
        "--limit 20 --model local --configs chain,mcts --budget 16 --measured beam "
        "--results bench/results/qwen1.5b"
    )
    gemini = {**multihop, "model": "google_genai:gemini-2.5-flash", "model_detail": "g"}
    assert command(gemini).startswith(".venv/bin/python -m bench --only multihop --limit 20 ")


def test_the_rows_are_counted_by_the_commit_that_made_them() -> None:
    rows = [
        {"id": "q1", "config": "mcts", "code": "0125ffa"},
        {"id": "q1", "config": "chain", "code": "0125ffa"},
        {"id": "q2", "config": "mcts", "code": "40fb87c"},
        {"id": "q2", "config": "chain", "code": "0125ffa"},
        {"id": "q3", "config": "beam"},  # read back from before rows recorded it
    ]

    assert code_lines({"rows": rows}) == [
        "",
        "Rows by the commit of the code that made them: `0125ffa`: chain 2, mcts 1; "
        "`40fb87c`: mcts 1; not recorded (earlier runs): beam 1.",
    ]
    assert code_lines({"rows": []}) == []


def test_the_wall_sums_each_configuration_s_runs_counting_a_run_of_two_rows_once() -> None:
    # Each anytime run's first answer is a row of its own (chain@first), within its wall.
    walls = {"anytime": [3000.0, 4200.0], "chain@first": [1000.0, 900.0], "chain": [1800.0]}
    rows: list[dict[str, object]] = [
        {"config": name, "wall_s": wall} for name, runs in walls.items() for wall in runs
    ]
    rows.append({"config": "beam"})  # read back from before rows recorded it

    assert wall_lines({"rows": rows}) == [
        "",
        "Wall, each run's seconds summed: chain 0.5 h over 1 runs; anytime 2.0 h over 2 runs "
        "(the benchmark's processes shared the machine, a run in each, so these hours overlap).",
    ]
    assert wall_lines({"rows": []}) == []


def test_the_questions_the_default_lost_are_named_with_what_its_search_did() -> None:
    rows = [
        _ran("q1-lost-one", "mcts", "1923", 0.5, paths=2, calls=15, nodes=5, gold_on_path=0.5),
        _ran("q1-lost-one", "chain", "1922", 1.0, gold_on_path=0.5),
        _ran("q2", "mcts", "Paris", 1.0, gold_on_path=1.0),
        _ran("q2", "chain", "Lyon", 0.0, gold_on_path=1.0),
        _ran("q3-lost-two", "mcts", "Bar", 0.0, calls=16, gold_on_path=0.5),
        _ran("q3-lost-two", "chain", "Manchester United", 0.8, gold_on_path=0.5),
    ]
    multihop = _compared(rows, "mcts", "chain", budget=16)

    [_, line] = head_to_head_lines(multihop)

    assert (
        'Where its answer F1 was lower: `q1-lost-one` (the chain "1922", F1 1.00; the default '
        '"1923", F1 0.50, from 2 completed paths after 15 calls on 5 nodes); `q3-lost-two` (the '
        'chain "Manchester United", F1 0.80; the default "Bar", F1 0.00, from 1 completed path '
        "after 16 calls)."
    ) in line
    assert "the search found the evidence" in line

    rows[4]["gold_on_path"] = 0.0  # its path read less of the gold than the chain's
    [_, line] = head_to_head_lines(multihop)
    assert "Where its answer F1 was lower" in line
    assert "the search found the evidence" not in line

    for row in rows:
        row["f1"] = 1.0
    [_, line] = head_to_head_lines(multihop)
    assert "Where its answer F1 was lower" not in line


def test_the_questions_whose_supporting_facts_the_default_lost_say_what_its_tree_did() -> None:
    rows = [
        _ran("q1", "mcts", "Childers", 0.9, sp_f1=0.0, branched=0, citations=1, pruned=0),
        _ran("q1", "chain", "Roth", 0.0, sp_f1=0.67, branched=0, citations=1, pruned=0),
        _ran("q2", "mcts", "no", 0.0, sp_f1=0.0, branched=0, citations=0, pruned=0),
        _ran("q2", "chain", "no", 0.0, sp_f1=0.5, branched=0, citations=2, pruned=0),
        _ran("q3", "mcts", "Paris", 1.0, sp_f1=1.0, branched=1, citations=2, pruned=0),
        _ran("q3", "chain", "Paris", 1.0, sp_f1=0.5, branched=0, citations=1, pruned=0),
    ]
    multihop = _compared(rows, "mcts", "chain", budget=16)

    [_, line] = head_to_head_lines(multihop)

    assert (
        "Where its supporting-fact F1 was lower (2 questions): its tree never branched on 2 "
        "and its answer quoted one sentence or none on 2. With no choice made, the default ran "
        "a path like the chain's, and the sentence the model chose to quote decided the score, "
        "not the search."
    ) in line

    rows[0]["branched"] = 1  # a choice was made on one of them: the search may have decided
    [_, line] = head_to_head_lines(multihop)
    assert "its tree never branched on 1 and" in line
    assert "not the search" not in line

    rows[1]["sp_f1"] = 0.0
    rows[3]["sp_f1"] = 0.0
    [_, line] = head_to_head_lines(multihop)
    assert "supporting-fact F1 was lower" not in line


def _answered(question: str, config: str, f1: float, predicted: str) -> dict[str, object]:
    return {"id": question, "config": config, "f1": f1, "predicted": predicted}


def test_the_differences_run_again_say_whether_each_held() -> None:
    rows = [
        # q1: lost, then a tie; q2: lost, then won; q3: lost, and lost again.
        _answered("q1", "chain", 1.0, "A"),
        _answered("q1", "mcts", 0.0, "B"),
        _answered("q1", "chain-again", 1.0, "A"),
        _answered("q1", "mcts-again", 1.0, "A"),
        _answered("q2", "chain", 1.0, "C"),
        _answered("q2", "mcts", 0.5, "C D"),
        _answered("q2", "chain-again", 0.0, "E"),
        _answered("q2", "mcts-again", 1.0, "C"),
        _answered("q3", "chain", 0.6, "F"),
        _answered("q3", "mcts", 0.0, "G"),
        _answered("q3", "chain-again", 0.6, "F"),
        _answered("q3", "mcts-again", 0.0, "H"),
        # q4: won, then lost.
        _answered("q4", "chain", 0.0, "I"),
        _answered("q4", "mcts", 1.0, "J"),
        _answered("q4", "chain-again", 1.0, "J"),
        _answered("q4", "mcts-again", 0.0, "I"),
        _answered("q5", "chain", 1.0, "K"),  # not run again: not counted
        _answered("q5", "mcts", 0.0, "L"),
    ]

    line = _paragraph(again_lines({"rows": rows}))

    assert "on 4 questions (`--ids q1,q2,q3,q4 --configs chain-again,mcts-again`" in line
    assert "the default's on 4, the chain's on 2" in line  # answers that changed
    assert (
        "Where the default had lost (3): its answer F1 0.17 then 0.67, the chain's 0.87 then "
        "0.53; 1 held, 1 turned into a win and 1 into a tie" in line
    )
    assert (
        "where the default had won (1): its answer F1 1.00 then 0.00, the chain's 0.00 then "
        "1.00; 0 held, 1 turned into a loss and 0 into a tie" in line
    )
    assert "1 of the 4 differences held on a second run" in line


def test_differences_that_hold_on_a_second_run_are_not_called_luck() -> None:
    rows = [
        _answered("q1", "chain", 1.0, "A"),
        _answered("q1", "mcts", 0.0, "B"),
        _answered("q1", "chain-again", 1.0, "A"),
        _answered("q1", "mcts-again", 0.0, "B"),
    ]

    [_, line] = again_lines({"rows": rows})

    assert "Where the default had lost (1)" in line
    assert "1 held, 0 turned into a win" in line
    assert "differences held" not in line
    assert "won" not in line
    assert again_lines({"rows": rows[:2]}) == []  # nothing run again: nothing said


def _scored(
    question: str, config: str, predicted: str, em: float, **fields: object
) -> dict[str, object]:
    """A row as the benchmark writes it, with what the report reads."""
    row: dict[str, object] = {
        "id": question,
        "config": config,
        "corpus": fields.pop("corpus", "distractor"),
        "answer": fields.pop("answer", predicted),
        "predicted": predicted,
        "em": em,
        "f1": fields.pop("f1", em),
        "sp_f1": fields.pop("sp_f1", 0.5),
        "paths": 1,
        "llm_calls": fields.pop("calls", 6),
        "wall_s": fields.pop("wall", 60.0),
        "stop_reason": "frontier_exhausted",
        **fields,
    }
    return row


def _anytime_results(setting: str = "distractor") -> dict[str, object]:
    """Three questions: the default's final answer against its first (the chain's path), and
    the chain run on its own."""
    rows = [
        _scored("q1", "chain", "Paris", 1.0, calls=5, wall=50.0),
        _scored("q1", "chain@first", "Paris", 1.0, calls=5, wall=40.0),
        _scored("q1", "anytime", "Paris", 1.0, calls=12, wall=100.0),
        _scored("q2", "chain", "Lyon", 0.0, calls=6, wall=60.0),
        _scored("q2", "chain@first", "Lyon", 0.0, calls=6, wall=60.0),
        _scored("q2", "anytime", "Nice", 1.0, calls=14, wall=120.0),
        _scored("q3", "chain", "Metz", 0.0, calls=5, wall=50.0, answer="Metz [1]"),
        _scored("q3", "chain@first", "metz", 0.0, calls=5, wall=55.0, answer="metz"),
        _scored("q3", "anytime", "metz", 0.0, calls=10, wall=90.0, answer="metz"),
    ]
    for row in rows:
        row["corpus"] = setting
    names = ("chain", "chain@first", "anytime")
    totals = {
        name: {
            "n": 3,
            "em": 0.3,
            "f1": 0.3,
            "sp_f1": 0.5,
            "sp_precision": 0.5,
            "sp_recall": 0.5,
            "joint_f1": 0.1,
            "groundedness": 1.0,
            "citations": 3,
            "misverified": 0,
            "llm_calls": 6.0,
            "tokens": 5000,
            "gold_seen": 1.0,
            "wall_s": 60.0,
        }
        for name in names
    }
    config = {
        "data": "bench/data/hotpotqa/dev_distractor_100.jsonl",
        "dataset": "HotpotQA",
        "corpus": setting,
        "pool": {"documents": 988} if setting == "pooled" else None,
        "questions": 3,
        "max_llm_calls": 16,
        "measured": [],
        "default": "anytime",
    }
    return {
        "model": "scripted",
        "model_detail": "scripted",
        "config": config,
        "totals": totals,
        "rows": rows,
    }


def test_the_default_is_set_against_its_own_first_answer_where_the_rows_have_it() -> None:
    [_, line] = head_to_head_lines(_anytime_results())

    assert line.startswith(
        "Question by question, the default search against its own first answer "
        "(`chain@first`, the single chain's path) — answer F1: better on 1, worse on 0, "
        "tied on 2"
    )
    # q2 is right for the default alone: 1 against 0 discordant questions, p = 2 * 1/2.
    assert (
        "On exact match, right for the default alone on 1 and for the chain alone on 0 "
        "(exact McNemar test, two-sided p = 1.000)."
    ) in line


def test_one_anytime_run_says_when_its_first_and_final_answers_were_ready() -> None:
    line = _paragraph(anytime_lines(_anytime_results()))

    # Medians over the three questions: first 55 s and 5 calls, final 100 s and 12.
    assert_says(
        line,
        "the first answer was ready after 55 s and 5.0 model calls (medians)",
        "the final one after 100 s and 12.0",
        "the final answer was the first one, kept, on 2.",
        # Exactly the same text on q1 and q2 ("Metz [1]" is not "metz"); calls 16/16, wall
        # 155/160 of the chain's.
        "the same answer text on 2 of 3 questions",
        "model calls 1.00 times and its wall 0.97 times the chain's",
    )
    assert anytime_lines({**_anytime_results(), "totals": {"chain": {}, "mcts": {}}}) == []


def test_rerun_agreement_is_the_share_of_the_same_normalised_answers() -> None:
    multihop = _anytime_results()
    rows = list(multihop["rows"])
    rows += [
        _scored("q1", "chain@first-again", "paris.", 1.0),
        _scored("q1", "anytime-again", "Paris", 1.0),
        _scored("q2", "chain@first-again", "Lyon", 0.0),
        _scored("q2", "anytime-again", "Lille", 0.0),
    ]
    # The default run as the service runs it, with threads: said apart from the rerun.
    rows += [
        _scored(q, "chain@first-threads", a, 0.0) for q, a in (("q1", "Paris"), ("q2", "Lyon"))
    ]
    rows += [_scored("q3", "anytime-threads", "Nancy", 0.0)]  # the inline run: "metz"
    totals = dict(multihop["totals"])
    totals.update({name: {} for name in ("chain@first-again", "anytime-again")})
    totals.update({name: {} for name in ("chain@first-threads", "anytime-threads")})

    blank, rerun, also_blank, threads = agreement_lines(
        {**multihop, "rows": rows, "totals": totals}
    )

    assert blank == also_blank == ""
    assert rerun.startswith("Rerun agreement")
    assert rerun.endswith("`chain@first` 2 of 2 (100%); `anytime` 1 of 2 (50%).")
    assert threads.startswith("With the service's threads (`-threads`")
    assert threads.endswith("`chain@first` 2 of 2 (100%); `anytime` 0 of 1 (0%).")
    assert agreement_lines(_anytime_results()) == []


def test_the_command_and_the_caption_say_which_questions_the_rows_are_of() -> None:
    later = _anytime_results()
    later["config"] = {**later["config"], "offset": 40, "ids": []}
    chosen = _anytime_results()
    chosen["config"] = {**chosen["config"], "offset": 0, "ids": ["5a8b57f2", "5a8c7595"]}

    assert " --offset 40 --limit 3 --model" in command(later)
    assert "(3 questions, numbers 41 to 43 of the file; HotpotQA" in "\n".join(table(later))
    assert " --ids 5a8b57f2,5a8c7595 --model" in command(chosen)
    assert "--limit" not in command(chosen)
    assert "(3 questions; HotpotQA" in "\n".join(table(chosen))


def test_the_command_names_the_data_set_and_the_setting() -> None:
    multihop = _anytime_results("pooled")
    multihop["config"]["data"] = "bench/data/musique/dev_100.jsonl"

    assert command(multihop) == (
        ".venv/bin/python -m bench --only multihop --data musique --corpus pooled --limit 3 "
        "--model scripted --configs chain,anytime --budget 16"
    )
    assert "--data" not in command(_anytime_results())
    assert "--corpus" not in command(_anytime_results())


def test_the_report_renders_both_settings_each_under_its_own_heading() -> None:
    distractor, pooled = _anytime_results(), _anytime_results("pooled")

    page = "\n".join(section(distractor, more=[(pooled, "bench/results/pooled")]))

    assert page.startswith("## 11. Multi-hop questions (HotpotQA, distractor setting)")
    assert_says(
        page,
        "### HotpotQA, open-corpus setting, with scripted",
        "--corpus pooled --limit 3 --model scripted --configs chain,anytime",
        "open corpus: every question searches one pool of 988 paragraphs",
        "distractor setting: each question searches its own paragraphs",
    )
    # Each table's rows and comparisons are its own setting's: one table, one comparison each.
    assert page.count("| chain@first | 3 |") == 2
    assert page.count("Question by question, the default search against") == 2
    assert headline(pooled).startswith(
        "On 3 HotpotQA questions (one index of every question's paragraphs as the only tool"
    )
    assert "for its first answer (a chain's)" in headline(distractor)


def test_the_report_takes_one_setting_s_models_together_after_their_tables() -> None:
    larger = _anytime_results()
    # The same three questions, their rows renamed as another model's other questions.
    smaller = {
        **larger,
        "model_detail": "another model",
        "rows": [{**row, "id": row["id"] + "-b"} for row in larger["rows"]],
    }
    pooled = _anytime_results("pooled")

    page = "\n".join(section(larger, more=[(pooled, "p"), (smaller, "b")]))

    together = page.split("### The same questions with another model")[1]
    assert_says(
        together,
        "**HotpotQA, distractor setting, the models together** (6 questions at 16 model calls: "
        "3 with scripted, 3 with another model;",
    )
    assert "open-corpus setting, the models together" not in page  # one model measured it
    assert together.index("the models together") < together.index("Published points")


def test_first_paths_read_again_come_after_the_tables_and_before_the_references() -> None:
    reading = {"predicted": "Paris", "f1": 1.0, "em": 1.0, "verified": True}
    row = {"id": "q1", "recorded": "Paris", "readings": [reading, reading], "replaced": 0}
    readings = {
        "model": "qwen2.5-coder-0.5b",
        "samples": 1,
        "temperature": 0.7,
        "traces": ["t"],
        "rows": [{**row, "majority": 0}],
    }

    page = "\n".join(section(_anytime_results(), readings=[(readings, "r/readings.json")]))

    assert "**Reading the same evidence again**" in page
    assert page.index("Reading the same evidence again") < page.index("Published points")
    assert page.index("| configuration |") < page.index("Reading the same evidence again")


def test_a_table_of_later_questions_is_titled_with_which_they_are() -> None:
    first = _anytime_results()
    later = {**first, "model_detail": "another model"}
    later["config"] = {**first["config"], "offset": 40}

    page = "\n".join(section(first, more=[(later, "b")]))

    assert (
        "### HotpotQA, distractor setting, 3 questions, numbers 41 to 43 of the file, with " in page
    )
    assert "### The same questions with" not in page


def test_rows_of_two_settings_are_never_paired() -> None:
    rows = [
        _scored("q1", "anytime", "Paris", 1.0),
        _scored("q1", "chain@first", "Lyon", 0.0, corpus="pooled"),
    ]

    assert head_to_head(rows, "anytime", "chain@first", "f1") == (0, 0, 0)
