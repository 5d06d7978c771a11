"""Replanner replies (proposals with their judgements), the model-call cache, and the call
accounting around them."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration
from pydantic import ValidationError

from agents.accounting import Accountant
from agents.nodes.replanner import Replan, read_replan
from agents.params import RunParams
from calls.cache import CACHE_HIT, MemoryStore, RoleCache


def test_a_replan_carries_each_candidates_judgement_in_order() -> None:
    out = {
        "complete": False,
        "candidates": [
            {"step": "read the paper", "score": 0.9, "viable": True, "reason": "direct"},
            {"step": "ask a forum", "score": 0.1, "viable": False},
        ],
    }

    complete, proposals = read_replan(out)

    assert complete is False
    assert [(step, j.score, j.viable, j.reason) for step, j in proposals if j] == [
        ("read the paper", 0.9, True, "direct"),
        ("ask a forum", 0.1, False, ""),
    ]


def test_a_candidate_scored_out_of_bounds_is_an_error_to_retry() -> None:
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        read_replan({"complete": False, "candidates": [{"step": "a", "score": 7}]})


def test_the_replan_schema_asks_for_a_bounded_score_per_candidate() -> None:
    schema = Replan.model_json_schema()
    candidate = schema["$defs"]["Candidate"]

    assert candidate["required"] == ["step", "score"]
    assert (
        candidate["properties"]["score"]["minimum"],
        candidate["properties"]["score"]["maximum"],
    ) == (0, 1)


def _reply(text: str) -> list[ChatGeneration]:
    usage = {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
    return [ChatGeneration(message=AIMessage(content=text, usage_metadata=usage))]


def test_a_cached_reply_comes_back_marked_as_a_hit() -> None:
    cache = RoleCache(MemoryStore(), "planner")
    cache.update("prompt", "model-x", _reply("plan!"))

    hit = cache.lookup("prompt", "model-x")

    assert hit is not None
    assert hit[0].text == "plan!"
    assert hit[0].generation_info == {CACHE_HIT: True}


def test_the_key_covers_role_model_and_messages() -> None:
    store = MemoryStore()
    RoleCache(store, "planner").update("prompt", "model-x", _reply("plan!"))

    assert RoleCache(store, "voter").lookup("prompt", "model-x") is None
    assert RoleCache(store, "planner").lookup("prompt", "model-y") is None
    assert RoleCache(store, "planner").lookup("prompt on another path", "model-x") is None


def test_the_memory_store_forgets_the_least_recently_used() -> None:
    store = MemoryStore(max_entries=2)
    store.put("a", "1")
    store.put("b", "2")
    store.get("a")
    store.put("c", "3")

    assert (store.get("a"), store.get("b"), store.get("c")) == ("1", None, "3")


def test_a_hit_is_not_a_model_call_and_naive_calls_price_candidates_one_by_one() -> None:
    acct = Accountant(RunParams())
    for role in ("planner", "evaluator", "evaluator", "executor"):
        acct.before_call(role)  # type: ignore[arg-type]
    acct.count_hit("executor")
    acct.candidates_scored = 3

    snap = acct.snapshot()

    assert snap["llm_calls"] == 3
    assert snap["cache_hits"] == 1
    assert snap["evaluations"] == 2
    # 3 calls + 1 hit, with the 3 candidates the replanner judged priced as 3 calls.
    assert snap["naive_calls"] == 7
