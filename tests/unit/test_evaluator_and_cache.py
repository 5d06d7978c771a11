"""Evaluator replies, the model-call cache, and the call accounting around them."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration

from agents.accounting import Accountant
from agents.cache import CACHE_HIT, MemoryStore, RoleCache, SqliteStore
from agents.nodes.evaluator import candidates_schema, read_scores
from agents.params import RunParams


def test_candidate_scores_come_back_in_key_order_with_missing_ones_unscored() -> None:
    out = {
        "c2": {"score": 0.9, "viable": True, "reason": "direct"},
        "c1": {"score": 0.1, "viable": False},
        "c9": {"score": 1.0, "viable": True},  # an id we never gave: ignored
    }

    scores = read_scores(out, ["c1", "c2", "c3"])

    assert [s.score if s else None for s in scores] == [0.1, 0.9, None]
    assert scores[0] is not None
    assert scores[0].viable is False


def test_a_malformed_entry_is_unscored_not_a_crash() -> None:
    scores = read_scores({"c1": {"score": 7}, "c2": "great"}, ["c1", "c2"])

    assert scores == [None, None]


def test_a_reply_that_is_not_an_object_is_an_error_to_retry() -> None:
    with pytest.raises(ValueError, match="object keyed by candidate id"):
        read_scores(["c1"], ["c1"])


def test_the_candidates_schema_has_one_bounded_entry_per_id() -> None:
    schema = candidates_schema(["c1", "c2"])

    assert sorted(schema["properties"]) == ["c1", "c2"]
    score = schema["properties"]["c1"]["properties"]["score"]
    assert (score["type"], score["minimum"], score["maximum"]) == ("number", 0, 1)


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


def test_the_sqlite_store_outlives_its_process_handle(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path / "cache.sqlite")
    RoleCache(first, "executor").update("p", "m", _reply("found"))
    first.close()

    again = RoleCache(SqliteStore(tmp_path / "cache.sqlite"), "executor").lookup("p", "m")

    assert again is not None
    assert again[0].text == "found"


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
    acct.candidate_batches, acct.candidates_scored = 1, 3

    snap = acct.snapshot()

    assert snap["llm_calls"] == 3
    assert snap["cache_hits"] == 1
    assert snap["evaluations"] == 2
    # 3 calls + 1 hit, with the one batch of 3 candidates priced as 3 calls: 3 + 1 - 1 + 3.
    assert snap["naive_calls"] == 6
