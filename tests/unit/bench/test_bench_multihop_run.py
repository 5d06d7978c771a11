"""The multi-hop benchmark's pure parts: the configuration table, what of an answer is
scored, and the supporting-fact hook."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.params import RunParams
from bench.engine_runs import bench_settings
from bench.multihop import (
    CONFIGS,
    DEFAULT,
    DEFAULT_CONFIGS,
    FIXED,
    engine_settings_for,
    params_for,
    predicted_answer,
    supporting_fact_metrics,
)
from bench.multihop_data import HOTPOTQA_DEV_100, load
from bench.multihop_rows import FIRST_ROWS


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_configuration_gets_the_same_call_budget(name: str) -> None:
    assert params_for(name, 37).max_llm_calls == 37


@pytest.mark.parametrize("name", ["chain", "chain-again"])
def test_the_single_chain_never_branches_never_revives_and_stops_at_one_path(name: str) -> None:
    params = params_for(name, 40)

    assert (params.max_paths, params.max_candidates, params.reserve) == (1, 1, False)


def test_the_searches_stop_on_the_budget_not_on_paths() -> None:
    chains = {"chain", "chain-again"}
    assert {params_for(name, 40).max_paths for name in CONFIGS if name not in chains} == {50}


def test_only_the_reserve_configuration_revives() -> None:
    assert [name for name in CONFIGS if params_for(name, 40).reserve] == ["reserve"]
    assert params_for("reserve", 40) == params_for("mcts", 40).model_copy(update={"reserve": True})


def test_breadth_scores_nothing_and_prunes_nothing() -> None:
    params = params_for("breadth", 40)

    assert (params.evaluate, params.min_score) == (False, 0.0)


@pytest.mark.parametrize("name", ["anytime", "anytime-again"])
def test_the_default_configuration_is_the_service_default(name: str) -> None:
    assert params_for(name, 40) == RunParams(max_llm_calls=40, **FIXED)


@pytest.mark.parametrize("name", ["mcts", "mcts-again", "reserve"])
def test_the_puct_configurations_search_by_puct(name: str) -> None:
    assert (params_for(name, 40).strategy, params_for(name, 40).evaluate) == ("mcts", True)


def test_one_run_of_the_default_gives_the_chain_s_row_too() -> None:
    assert DEFAULT == "anytime"
    assert FIRST_ROWS[DEFAULT] == "chain@first"
    # The chain runs on its own too: the two chains' answers are checked to be the same.
    assert DEFAULT_CONFIGS == ("chain", "anytime")


def test_the_scored_answer_is_the_first_line_without_citation_links() -> None:
    answer = "Robert Erskine Childers [Robert Erskine Childers](corpus://Robert%20Erskine)\n\nWhy"

    assert predicted_answer(answer) == "Robert Erskine Childers"
    assert predicted_answer(None) is None
    assert predicted_answer("  \n") == ""


def test_supporting_facts_are_scored_against_the_question_s_gold_pairs() -> None:
    question = load(HOTPOTQA_DEV_100, limit=1)[0]  # gold: (Henry Roth, 0), (R. E. Childers, 0)

    scores = supporting_fact_metrics(question, [("Henry Roth", 0), ("Henry Roth", 1)])

    assert (scores.precision, scores.recall, scores.em) == (0.5, 0.5, 0.0)


def test_the_runs_engine_has_the_settings_a_user_of_the_model_has(tmp_path: Path) -> None:
    local = bench_settings(tmp_path, **engine_settings_for("local"))
    scripted = bench_settings(tmp_path, **engine_settings_for("scripted"))

    assert (local.model, local.quote_choices) == ("local", True)
    assert scripted.quote_choices is False
