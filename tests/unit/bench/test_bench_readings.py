"""Readings: a first path read again by the responder, greedily and then sampled, and the rules
that may keep another reading's answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.engine_runs import bench_settings
from bench.multihop import TASK
from bench.readings import Reading, majority, read_again, replaced, traces_in
from bench.readings_report import readings_lines, summary
from testkit.fakes import FakeCall, FakeModels
from tests.support.text import assert_says
from tests.unit.search.trees import answered, done, grounding

FACT = "Franconia is a town in Grafton County, New Hampshire."


def _reading(predicted: str, *, verified: bool = True, f1: float = 0.0) -> Reading:
    return Reading(predicted, f1, float(f1 == 1.0), verified)


@pytest.mark.parametrize(
    ("readings", "kept"),
    [
        # A lone other answer never replaces the greedy one, however verified.
        (["Paris", "Lyon", "Paris"], 0),
        (["Paris", "Lyon"], 0),
        # Two agreeing readings against a lone greedy one: replaced, by a verified one.
        (["Paris", "Lyon", "lyon"], 1),
        # As many readings as the greedy answer's: it stands.
        (["Paris", "Lyon", "Lyon", "Paris"], 0),
        # Readings without an answer count for nothing.
        (["Paris", "", "", "Lyon"], 0),
    ],
)
def test_another_answer_replaces_the_greedy_reading_only_when_more_readings_reach_it(
    readings: list[str], kept: int
) -> None:
    assert replaced([_reading(r) for r in readings]) == kept


def test_agreeing_readings_none_of_them_verified_do_not_replace() -> None:
    readings = [
        _reading("Paris"),
        _reading("Lyon", verified=False),
        _reading("Lyon", verified=False),
    ]

    assert replaced(readings) == 0
    # Self-consistency counts them all the same.
    assert majority(readings) == 1


def test_the_replacing_reading_is_a_verified_one_of_its_answer() -> None:
    readings = [_reading("Paris"), _reading("Lyon", verified=False), _reading("Lyon")]

    assert replaced(readings) == 2


def test_self_consistency_keeps_the_greedy_answer_on_a_tie() -> None:
    assert majority([_reading("Paris"), _reading("Lyon")]) == 0
    assert majority([_reading(""), _reading("Lyon"), _reading("Lyon"), _reading("Nice")]) == 1
    assert majority([_reading("")]) == 0


def _trace() -> dict[str, Any]:
    first = answered(
        done(None, 1, "find the town", [("Franconia", FACT)]),
        "Franconia [1]",
        grounding(1.0),
    )
    return {
        "id": "q1",
        "question": "Which town is the Frost Place in?",
        "gold": "Franconia, New Hampshire",
        "aliases": [],
        "corpus": "distractor",
        "result": {"first": {"node_id": "n1", "answer": "Franconia [1]"}, "nodes": [first]},
    }


def _responder(call: FakeCall) -> dict[str, Any]:
    """Greedy: "Franconia"; sampled: the full answer; each quoting the evidence."""
    assert call.decoding is not None
    answer = "Franconia [1]" if call.decoding.greedy else "Franconia, New Hampshire [1]"
    quote = {"marker": 1, "evidence_id": "E1", "quote": "Franconia is a town in Grafton County"}
    return {"answer": answer, "citations": [quote]}


async def test_a_trace_s_first_path_is_read_greedily_then_sampled_with_seeds_of_their_own(
    tmp_path: Path,
) -> None:
    models = FakeModels(_responder)
    settings = bench_settings(tmp_path, quote_choices=False)

    row = await read_again(_trace(), TASK, models, settings, samples=2, temperature=0.7)

    assert row is not None
    calls = models.recorder.by_role("responder")
    decodings = [c.decoding for c in calls]
    assert [d.greedy for d in decodings if d is not None] == [True, False, False]
    assert len({d.seed for d in decodings if d is not None}) == 3
    assert [d.temperature for d in decodings if d is not None] == [None, 0.7, 0.7]
    # The task is the benchmark's, around the trace's question; the path's evidence is shown.
    assert "Which town is the Frost Place in?" in calls[0].prompt
    assert "Answer with the shortest phrase" in calls[0].prompt
    assert FACT in calls[0].prompt
    assert [r["predicted"] for r in row["readings"]] == [
        "Franconia",
        "Franconia, New Hampshire",
        "Franconia, New Hampshire",
    ]
    assert row["recorded"] == "Franconia"
    assert all(r["verified"] for r in row["readings"])
    assert row["readings"][1]["em"] == 1.0
    # Two verified readings reached another answer than the greedy one's single reading.
    assert (row["replaced"], row["majority"]) == (1, 1)


async def test_a_trace_without_a_first_answer_is_not_read(tmp_path: Path) -> None:
    trace = {**_trace(), "result": {"first": None, "nodes": []}}

    assert (
        await read_again(trace, TASK, FakeModels(_responder), bench_settings(tmp_path), 2) is None
    )


def test_the_summary_says_each_rule_against_the_greedy_reading_and_the_headroom() -> None:
    def row(*readings: tuple[str, float], recorded: str = "a") -> dict[str, Any]:
        found = [{"predicted": p, "f1": f1, "em": 0.0, "verified": True} for p, f1 in readings]
        made = [_reading(p, f1=f1) for p, f1 in readings]
        return {"id": "q", "recorded": recorded, "readings": found, "replaced": replaced(made),
                "majority": majority(made)}  # fmt: skip

    rows = [
        row(("a", 0.0), ("b", 1.0), ("b", 1.0)),  # replaced, rightly
        # Kept; the replay's greedy answer was not the run's.
        row(("a", 1.0), ("a", 1.0), ("c", 0.0), recorded="x"),
    ]

    lines = summary(rows)

    assert_says(
        "\n".join(lines),
        "2 first paths, 2 sampled readings each; the greedy reading gave the run's own first "
        "answer on 1 of 2",
        "greedy reading  answer F1 0.500",
        "replaced        answer F1 1.000: +0.500",
        "better on 1, worse on 0",
        "where the greedy reading was wrong (1), a sampled reading was right on 1; the best "
        "reading of each path: answer F1 1.000",
    )
    assert summary([]) == ["readings: no trace with a first answer"]


def test_traces_are_the_default_search_s_in_every_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "5abc-anytime.json").write_text(json.dumps({"question": "q1"}))
    (tmp_path / "a" / "5abc-chain.json").write_text(json.dumps({"question": "q1"}))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "5def-anytime-pooled.json").write_text(json.dumps({"question": "q2"}))

    found = traces_in([tmp_path / "a", tmp_path / "b"])

    assert [(t["id"], t["question"]) for t in found] == [("5abc", "q1"), ("5def", "q2")]


def test_the_page_gets_a_paragraph_of_the_readings_with_the_command_that_made_them() -> None:
    def row(*readings: tuple[str, float]) -> dict[str, Any]:
        found = [{"predicted": p, "f1": f1, "em": 0.0, "verified": True} for p, f1 in readings]
        made = [_reading(p, f1=f1) for p, f1 in readings]
        return {"id": "q", "corpus": "distractor", "recorded": readings[0][0], "readings": found,
                "replaced": replaced(made), "majority": majority(made)}  # fmt: skip

    results = {
        "model": "qwen2.5-coder-0.5b",
        "samples": 2,
        "temperature": 0.7,
        "traces": ["/work/traces-d"],
        "rows": [row(("a", 0.0), ("b", 1.0), ("b", 1.0)), row(("a", 1.0), ("c", 0.0), ("a", 1.0))],
    }

    [text, blank] = readings_lines(results, "bench/results/r/readings.json")

    assert blank == ""
    assert_says(
        text,
        "`python -m bench.readings --traces /work/traces-d --samples 2 --temperature 0.7`",
        "qwen2.5-coder-0.5b; `bench/results/r/readings.json`",
        "On 2 first paths of the default's traces (2 distractor setting), ",
        "(it gave the run's own first answer on 2 of 2)",
        "Answer F1: the greedy reading 0.50; the rule (another answer only when more readings "
        "reached it, two at least, one of them verified) 1.00 (+0.500",
        "better on 1, worse on 0",
        "Of the 1 questions whose greedy reading was wrong, a sampled reading was right on 1",
    )
    assert readings_lines({**results, "rows": []}, "x") == []
