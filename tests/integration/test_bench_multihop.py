"""The multi-hop benchmark through the real engine, with testkit's scripted reader: every
configuration searches each question's own corpus and is scored by the official metrics."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import bench.__main__ as bench_main
from bench.multihop import DEFAULT_CONFIGS, MultihopConfig, run_multihop, scripted_models
from bench.multihop_report import section
from testkit.multihop_reader import TITLE_QUESTION
from tests.support.bench import run_bench


async def test_every_configuration_answers_two_questions_through_the_corpus(
    tmp_path: Path,
) -> None:
    out = await run_multihop(MultihopConfig(limit=2), scripted_models, tmp_path)

    rows = out["rows"]
    assert [(row["id"], row["config"]) for row in rows[:4]] == [
        ("5a8133725542995ce29dcbdb", name) for name in DEFAULT_CONFIGS
    ]
    assert len(rows) == 8
    for row in rows:
        assert row["status"] == "done"
        assert row["tool_calls"] == 1
        assert row["llm_calls"] <= out["config"]["max_llm_calls"]
        assert row["gold_seen"] == 1.0  # the question's own words find both gold paragraphs
        assert 0.0 <= row["f1"] <= 1.0
        assert 0 <= row["branched"] < row["nodes"]
        assert row["pruned"] < row["nodes"]
    # One candidate a node: the chain's tree never branches, whatever its model proposes.
    assert [row["branched"] for row in rows if row["config"] == "chain"] == [0, 0]
    assert rows[0]["predicted"] == "Henry Roth"  # the reader's guess: the first passage
    assert (rows[0]["em"], rows[0]["f1"]) == (0.0, 0.0)
    assert set(out["totals"]) == set(DEFAULT_CONFIGS)
    assert out["totals"]["mcts"]["n"] == 2


async def test_a_right_answer_scores_full_marks_in_every_configuration(tmp_path: Path) -> None:
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(TITLE_QUESTION) + "\n", encoding="utf-8")

    out = await run_multihop(MultihopConfig(data=data), scripted_models, tmp_path / "work")

    assert [(row["predicted"], row["em"], row["f1"]) for row in out["rows"]] == [
        ("Ann Smith", 1.0, 1.0)
    ] * len(DEFAULT_CONFIGS)
    assert out["totals"]["chain"]["em"] == 1.0
    # Its citation quotes sentence 0 of the gold paragraph: the supporting fact, verified.
    for row in out["rows"]:
        assert (row["citations"], row["misverified"], row["groundedness"]) == (1, 0, 1.0)
        assert (row["sp_em"], row["sp_precision"], row["joint_f1"]) == (1.0, 1.0, 1.0)


def test_python_m_bench_only_multihop_writes_multihop_json_with_f1_per_question(
    tmp_path: Path,
) -> None:
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(TITLE_QUESTION) + "\n", encoding="utf-8")

    code, results = run_bench(
        "multihop", tmp_path, "--data", str(data), "--model", "scripted", "--configs", "chain,mcts"
    )

    out = json.loads((results / "multihop.json").read_text(encoding="utf-8"))
    assert code == 0
    assert [(row["config"], row["f1"]) for row in out["rows"]] == [("chain", 1.0), ("mcts", 1.0)]


def test_a_results_directory_below_the_results_is_the_same_benchmark_with_another_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(TITLE_QUESTION) + "\n", encoding="utf-8")
    options = ("--data", str(data), "--model", "scripted")
    code, results = run_bench("multihop", tmp_path, *options, "--configs", "chain,mcts")
    assert code == 0
    first = (results / "b.md").read_text(encoding="utf-8")
    # The other model's run, its results below the page's: the page is drawn from the page's
    # results, the other model's as a table of their own.
    monkeypatch.setattr(bench_main, "RESULTS", results)
    other, page = results / "other", tmp_path / "page.md"
    argv = ["--only", "multihop", *options, "--configs", "chain,mcts", "--results", str(other)]

    assert bench_main.main([*argv, "--docs", str(page)]) == 0

    headline = "On 1 HotpotQA questions (distractor paragraphs as the only tool, scripted"
    assert (first.count(headline), page.read_text(encoding="utf-8").count(headline)) == (1, 2)
    main_section, more = page.read_text(encoding="utf-8").split(
        "### The same questions with scripted (testkit's reader)"
    )
    section_11 = first.split("## 11.")[1].split("Published points of reference")[0]
    assert main_section.split("## 11.")[1] == section_11
    assert f"--configs chain,mcts --budget 40 --results {other}\n" in more
    assert "| chain | 1 |" in more
    assert "| mcts | 1 |" in more


async def test_rows_already_in_the_progress_file_are_kept_not_run_again(tmp_path: Path) -> None:
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(TITLE_QUESTION) + "\n", encoding="utf-8")
    progress = tmp_path / "progress.jsonl"
    config = MultihopConfig(data=data, configs=("chain", "mcts"), progress=progress)
    first = await run_multihop(config, scripted_models, tmp_path / "a")
    asked: list[str] = []

    def counting(question: Any, settings: Any) -> Any:
        asked.append(question.id)
        return scripted_models(question, settings)

    again = await run_multihop(config, counting, tmp_path / "b")

    assert asked == []  # both rows came from the progress file
    assert again["rows"] == first["rows"]
    assert len(progress.read_text(encoding="utf-8").splitlines()) == 2


async def test_shards_split_the_questions_and_a_last_run_reads_every_row_back(
    tmp_path: Path,
) -> None:
    progress = tmp_path / "progress.jsonl"
    base = MultihopConfig(limit=3, configs=("chain",), progress=progress)
    asked: list[str] = []

    def counting(question: Any, settings: Any) -> Any:
        asked.append(question.id)
        return scripted_models(question, settings)

    first = await run_multihop(replace(base, shard=(0, 2)), counting, tmp_path / "a")
    second = await run_multihop(replace(base, shard=(1, 2)), counting, tmp_path / "b")
    ran = list(asked)
    whole = await run_multihop(base, counting, tmp_path / "c")

    assert [len(first["rows"]), len(second["rows"])] == [2, 1]  # questions 1, 3 and 2
    assert asked == ran
    assert len(set(ran)) == 3
    assert [row["id"] for row in whole["rows"]] == [ran[0], ran[2], ran[1]]
    assert whole["config"]["questions"] == 3


async def test_a_measured_configuration_is_reported_where_it_has_rows_and_never_run(
    tmp_path: Path,
) -> None:
    progress = tmp_path / "progress.jsonl"
    # `reserve` measured on the first question only, then the others run on three.
    await run_multihop(
        MultihopConfig(limit=1, configs=("reserve",), progress=progress),
        scripted_models,
        tmp_path / "a",
    )
    asked: list[str] = []

    def counting(question: Any, settings: Any) -> Any:
        asked.append(question.id)
        return scripted_models(question, settings)

    out = await run_multihop(
        MultihopConfig(limit=3, configs=("chain",), measured=("reserve",), progress=progress),
        counting,
        tmp_path / "b",
    )

    assert len(asked) == 3  # chain on each question; reserve on none
    assert out["totals"]["chain"]["n"] == 3
    assert out["totals"]["reserve"]["n"] == 1
    assert out["config"]["measured"] == ["reserve"]
    lines = "\n".join(section(out))
    assert "--configs chain --budget 40 --measured reserve" in lines
    assert "| reserve | 1 |" in lines


async def test_chosen_questions_run_alone_and_leave_their_trees_as_traces(
    tmp_path: Path,
) -> None:
    all_three = await run_multihop(
        MultihopConfig(limit=3, configs=("chain",)), scripted_models, tmp_path / "a"
    )
    second = all_three["rows"][1]["id"]
    traces = tmp_path / "traces"

    out = await run_multihop(
        MultihopConfig(limit=3, configs=("chain", "mcts"), ids=(second[:8],), traces=traces),
        scripted_models,
        tmp_path / "b",
    )

    assert [(row["id"], row["config"]) for row in out["rows"]] == [
        (second, "chain"),
        (second, "mcts"),
    ]
    written = sorted(path.name for path in traces.iterdir())
    assert written == [f"{second}-chain.json", f"{second}-mcts.json"]
    trace = json.loads((traces / f"{second}-mcts.json").read_text(encoding="utf-8"))
    row = out["rows"][1]
    assert trace["gold"] == row["gold"]
    assert trace["result"]["answer"] == row["answer"]
    nodes = trace["result"]["nodes"]
    assert len(nodes) == row["nodes"]
    assert sum(len(node["tool_calls"]) for node in nodes) == row["tool_calls"]
    assert trace["result"]["chosen_id"] in {node["id"] for node in nodes}
    with pytest.raises(ValueError, match="no question's id starts with"):
        await run_multihop(MultihopConfig(limit=3, ids=("nope",)), scripted_models, tmp_path)
