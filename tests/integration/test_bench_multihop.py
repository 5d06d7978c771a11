"""The multi-hop benchmark through the real engine, with testkit's scripted reader: every
configuration searches each question's own corpus, or the pool of every question's, and is
scored by the official metrics; 2WikiMultihopQA's and MuSiQue's lines are read as they are."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import bench.__main__ as bench_main
import bench.multihop as bench_multihop
from app.settings import Settings
from bench.engine_runs import bench_settings
from bench.multihop import (
    DEFAULT_CONFIGS,
    ModelsFor,
    MultihopConfig,
    corpora,
    corpus_runtime,
    run_multihop,
    scripted_models,
)
from bench.multihop_data import HOTPOTQA_DEV_100, Question, load
from bench.multihop_report import section
from calls.models import ModelFactory
from testkit.multihop_reader import TITLE_QUESTION
from tests.support.bench import run_bench
from tests.support.multihop_lines import MUSIQUE_LINE, TWOWIKI_LINE
from tests.support.text import assert_says

# The rows one question gives under the default configurations: the chain's, and the default
# search's two (its first answer's, when the engine reports one, and its final answer's).
ROWS = ("chain", "chain@first", "anytime")


def _configs(rows: list[dict[str, Any]], question: str) -> list[str]:
    return [row["config"] for row in rows if row["id"] == question]


def _data(tmp_path: Path, *lines: dict[str, Any]) -> Path:
    """A questions file of `lines` in `tmp_path`."""
    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return data


def _noting(asked: list[str]) -> ModelsFor:
    """`scripted_models`, noting in `asked` the id of each question it is asked for."""

    def models(question: Question, settings: Settings) -> ModelFactory:
        asked.append(question.id)
        return scripted_models(question, settings)

    return models


async def test_every_configuration_answers_two_questions_through_the_corpus(
    tmp_path: Path,
) -> None:
    out = await run_multihop(MultihopConfig(limit=2), scripted_models, tmp_path)

    rows = out["rows"]
    first = "5a8133725542995ce29dcbdb"
    assert _configs(rows, first) in (list(ROWS), ["chain", "anytime"])
    assert DEFAULT_CONFIGS == ("chain", "anytime")
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
    assert {"chain", "anytime"} <= set(out["totals"]) <= set(ROWS)
    assert out["totals"]["anytime"]["n"] == 2
    assert {row["corpus"] for row in rows} == {"distractor"}
    # The default's first answer is its greedy first path: the chain's answer, at no more
    # calls than the whole run.
    by_config = {row["config"]: row for row in rows if row["id"] == first}
    if "chain@first" in by_config:
        assert by_config["chain@first"]["answer"] == by_config["chain"]["answer"]
        assert by_config["chain@first"]["llm_calls"] <= by_config["anytime"]["llm_calls"]


async def test_a_right_answer_scores_full_marks_in_every_configuration(tmp_path: Path) -> None:
    data = _data(tmp_path, TITLE_QUESTION)

    out = await run_multihop(MultihopConfig(data=data), scripted_models, tmp_path / "work")

    assert len(out["rows"]) >= len(DEFAULT_CONFIGS)
    assert {(row["predicted"], row["em"], row["f1"]) for row in out["rows"]} == {
        ("Ann Smith", 1.0, 1.0)
    }
    assert out["totals"]["chain"]["em"] == 1.0
    # Its citation quotes sentence 0 of the gold paragraph: the supporting fact, verified.
    for row in out["rows"]:
        assert (row["citations"], row["misverified"], row["groundedness"]) == (1, 0, 1.0)
        assert (row["sp_em"], row["sp_precision"], row["joint_f1"]) == (1.0, 1.0, 1.0)


def test_python_m_bench_only_multihop_writes_multihop_json_with_f1_per_question(
    tmp_path: Path,
) -> None:
    data = _data(tmp_path, TITLE_QUESTION)

    code, results = run_bench(
        "multihop", tmp_path, "--data", str(data), "--model", "scripted", "--configs", "chain,mcts"
    )

    out = json.loads((results / "multihop.json").read_text(encoding="utf-8"))
    assert code == 0
    assert [(row["config"], row["f1"]) for row in out["rows"]] == [("chain", 1.0), ("mcts", 1.0)]


def test_a_results_directory_below_the_results_is_the_same_benchmark_with_another_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _data(tmp_path, TITLE_QUESTION)
    options = ("--data", str(data), "--model", "scripted")
    code, results = run_bench("multihop", tmp_path, *options, "--configs", "chain,anytime")
    assert code == 0
    first = (results / "b.md").read_text(encoding="utf-8")
    # The other model's run, its results below the page's: the page is drawn from the page's
    # results, the other model's as a table of their own.
    monkeypatch.setattr(bench_main, "RESULTS", results)
    other, page = results / "other", tmp_path / "page.md"
    argv = ["--only", "multihop", *options, "--configs", "chain,anytime", "--results", str(other)]

    assert bench_main.main([*argv, "--docs", str(page)]) == 0

    headline = "On 1 HotpotQA questions (distractor paragraphs as the only tool, scripted"
    assert (first.count(headline), page.read_text(encoding="utf-8").count(headline)) == (1, 2)
    main_section, more = page.read_text(encoding="utf-8").split(
        "### The same questions with scripted (testkit's reader)"
    )
    section_11 = first.split("## 11.")[1].split("Published points of reference")[0]
    assert main_section.split("## 11.")[1] == section_11
    assert f"--configs chain,anytime --budget 40 --results {other}\n" in more
    assert "| chain | 1 |" in more
    assert "| anytime | 1 |" in more


async def test_an_offset_takes_the_questions_after_the_first_ones(tmp_path: Path) -> None:
    asked: list[str] = []
    everything = [q.id for q in load(HOTPOTQA_DEV_100, 4)]

    out = await run_multihop(
        MultihopConfig(offset=2, limit=2, configs=("chain",)), _noting(asked), tmp_path
    )

    assert asked == everything[2:4]
    assert (out["config"]["offset"], out["config"]["questions"]) == (2, 2)
    with pytest.raises(ValueError, match="offset must be at least 0"):
        await run_multihop(MultihopConfig(offset=-1), scripted_models, tmp_path / "b")


async def test_rows_already_in_the_progress_file_are_kept_not_run_again(tmp_path: Path) -> None:
    data = _data(tmp_path, TITLE_QUESTION)
    progress = tmp_path / "progress.jsonl"
    config = MultihopConfig(data=data, configs=("chain", "mcts"), progress=progress)
    first = await run_multihop(config, scripted_models, tmp_path / "a")
    asked: list[str] = []

    again = await run_multihop(config, _noting(asked), tmp_path / "b")

    assert asked == []  # both rows came from the progress file
    assert again["rows"] == first["rows"]
    assert len(progress.read_text(encoding="utf-8").splitlines()) == 2


async def test_shards_split_the_questions_and_a_last_run_reads_every_row_back(
    tmp_path: Path,
) -> None:
    progress = tmp_path / "progress.jsonl"
    base = MultihopConfig(limit=3, configs=("chain",), progress=progress)
    asked: list[str] = []

    first = await run_multihop(replace(base, shard=(0, 2)), _noting(asked), tmp_path / "a")
    second = await run_multihop(replace(base, shard=(1, 2)), _noting(asked), tmp_path / "b")
    ran = list(asked)
    whole = await run_multihop(base, _noting(asked), tmp_path / "c")

    assert [len(first["rows"]), len(second["rows"])] == [2, 1]  # questions 1, 3 and 2
    assert asked == ran
    assert len(set(ran)) == 3
    assert [row["id"] for row in whole["rows"]] == [ran[0], ran[2], ran[1]]
    assert whole["config"]["questions"] == 3


async def test_the_threaded_default_runs_with_the_loop_s_threads_and_answers_as_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inline = bench_multihop.inline_threads
    entered: list[str] = []

    @contextlib.contextmanager
    def noted() -> Iterator[None]:
        entered.append("inline")
        with inline():
            yield

    monkeypatch.setattr(bench_multihop, "inline_threads", noted)
    configs = ("anytime", "anytime-threads")

    out = await run_multihop(MultihopConfig(limit=2, configs=configs), scripted_models, tmp_path)

    assert entered == ["inline", "inline"]  # the inline runs only, one a question
    by = {(row["id"], row["config"]): row for row in out["rows"]}
    for question in {row["id"] for row in out["rows"]}:
        for inline_name, threaded in (
            ("anytime", "anytime-threads"),
            ("chain@first", "chain@first-threads"),
        ):
            assert by[question, threaded]["answer"] == by[question, inline_name]["answer"]
            assert by[question, threaded]["llm_calls"] == by[question, inline_name]["llm_calls"]
    assert_says("\n".join(section(out)), "With the service's threads", "`anytime` 2 of 2 (100%)")


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

    out = await run_multihop(
        MultihopConfig(limit=3, configs=("chain",), measured=("reserve",), progress=progress),
        _noting(asked),
        tmp_path / "b",
    )

    assert len(asked) == 3  # chain on each question; reserve on none
    assert out["totals"]["chain"]["n"] == 3
    assert out["totals"]["reserve"]["n"] == 1
    assert out["config"]["measured"] == ["reserve"]
    assert_says(
        "\n".join(section(out)), "--configs chain --budget 40 --measured reserve", "| reserve | 1 |"
    )


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


async def test_a_2wikimultihopqa_line_without_a_level_runs_and_scores(tmp_path: Path) -> None:
    data = _data(tmp_path, TWOWIKI_LINE)

    out = await run_multihop(
        MultihopConfig(data=data, configs=("chain",)), scripted_models, tmp_path / "work"
    )

    [row] = out["rows"]
    assert (row["predicted"], row["em"], row["status"]) == ("Cold Moon", 1.0, "done")
    assert (row["sp_precision"], row["sp_recall"], row["misverified"]) == (1.0, 0.5, 0)


async def test_a_musique_line_is_scored_by_its_supporting_paragraph_and_aliases(
    tmp_path: Path,
) -> None:
    data = _data(tmp_path, MUSIQUE_LINE)

    out = await run_multihop(
        MultihopConfig(data=data, configs=("chain",)), scripted_models, tmp_path / "work"
    )

    [row] = out["rows"]
    # "Liberal Party" is an alias of the gold answer: right.
    assert (row["predicted"], row["em"], row["f1"]) == ("Liberal Party", 1.0, 1.0)
    assert row["gold"] == "the Liberals"
    # Its citation quotes the supporting "Liberal Party" paragraph (context[2]), not the
    # other one of that title: a supporting fact of the two.
    assert (row["citations"], row["misverified"]) == (1, 0)
    assert (row["sp_precision"], row["sp_recall"]) == (1.0, 0.5)
    assert out["config"]["dataset"] == "HotpotQA"  # named by its file, which says no set


async def test_in_the_pooled_setting_every_question_searches_every_paragraph(
    tmp_path: Path,
) -> None:
    data = _data(tmp_path, TITLE_QUESTION, TWOWIKI_LINE, MUSIQUE_LINE)
    config = MultihopConfig(data=data, limit=2, configs=("chain",), corpus="pooled")

    out = await run_multihop(config, scripted_models, tmp_path / "work")

    # Every paragraph of all three lines, each (title, text) once (Cold Moon's twice given,
    # and "Leeds is a city." in two questions); the first two questions run.
    assert out["config"]["corpus"] == "pooled"
    assert out["config"]["pool"] == {"documents": 6}
    assert [(row["corpus"], row["predicted"], row["em"]) for row in out["rows"]] == [
        ("pooled", "Ann Smith", 1.0),
        ("pooled", "Cold Moon", 1.0),
    ]
    # Supporting facts are still scored: each citation names a gold sentence by the pool's id.
    assert [(row["sp_precision"], row["misverified"]) for row in out["rows"]] == [(1.0, 0)] * 2
    assert_says(
        "\n".join(section(out)),
        "--corpus pooled",
        "open corpus: every question searches one pool of 6 paragraphs",
    )


async def test_shards_of_both_settings_resume_without_redoing_a_finished_row(
    tmp_path: Path,
) -> None:
    data = _data(tmp_path, TITLE_QUESTION, TWOWIKI_LINE, MUSIQUE_LINE)
    progress = tmp_path / "progress.jsonl"
    base = MultihopConfig(data=data, configs=DEFAULT_CONFIGS, progress=progress)
    asked: list[tuple[str, str]] = []

    def counting(setting: str) -> Any:
        def models(question: Any, settings: Any) -> Any:
            asked.append((setting, question.id))
            return scripted_models(question, settings)

        return models

    for setting in ("distractor", "pooled"):
        for shard in ((0, 2), (1, 2)):
            config = replace(base, corpus=setting, shard=shard)
            await run_multihop(config, counting(setting), tmp_path / "a")
    # Each setting ran each question once per configuration: a setting's rows are its own.
    questions = ("t1", "w1", "2hop__1_2")
    assert sorted(asked) == sorted(
        (setting, q)
        for setting in ("distractor", "pooled")
        for q in questions
        for _ in DEFAULT_CONFIGS
    )

    # The last process (the pooled setting's shard 1/2, question w1) was killed while writing
    # its last run's rows: that run, and no other, runs again.
    text = progress.read_text(encoding="utf-8")
    progress.write_text(text[: text.rstrip("\n").rfind("\n") + 20], encoding="utf-8")
    asked.clear()
    whole = await run_multihop(replace(base, corpus="pooled"), counting("pooled"), tmp_path / "b")

    assert asked == [("pooled", "w1")]
    assert {row["corpus"] for row in whole["rows"]} == {"pooled"}
    assert [row["id"] for row in whole["rows"] if row["config"] == "anytime"] == list(questions)
    assert whole["totals"]["chain"]["n"] == whole["totals"]["anytime"]["n"] == 3


async def test_the_pool_holds_every_question_of_the_file_as_one_collection(
    tmp_path: Path,
) -> None:
    questions = load(HOTPOTQA_DEV_100)
    async with corpora(MultihopConfig(limit=1, corpus="pooled"), tmp_path) as (corpus_of, pool):
        assert pool is not None
        # 992 paragraphs over the 100 questions, 4 of them given to two questions.
        assert len(pool.documents) == 988
        corpus = corpus_of(questions[99])
        assert corpus.gold_documents <= set(pool.texts)
        # The run's tool is the documents tool over the store's one collection.
        tool = corpus.tool(corpus_runtime(bench_settings(tmp_path)))
        _, found = await tool.coroutine(questions[99].question)  # type: ignore[misc]
    async with corpora(MultihopConfig(limit=1), tmp_path) as (_, none):
        assert none is None  # the distractor setting has none
    assert tool.name == "documents"
    assert {corpus.doc_of(s["url"]) for s in found["sources"]} & corpus.gold_documents


@pytest.mark.parametrize("offset", ["-1", "two"])
def test_a_bad_offset_is_refused_before_anything_runs(
    offset: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        bench_main.main(["--only", "multihop", "--offset", offset])

    assert refused.value.code == 2
    assert "argument --offset: want" in capsys.readouterr().err
