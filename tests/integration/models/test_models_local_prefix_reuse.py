"""KV prefix reuse with the bundled SmolLM2: two calls sharing a long prompt prefix, with an
unrelated call in between, as sibling branches of the engine's tree arrive. llama.cpp alone
keeps only the last call's tokens; with saved states the second call evaluates only what is
new, from the last block boundary before it (`calls.local_kv.exact_reuse`), and the replies
stay the same."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from calls.local_kv import exact_reuse
from calls.local_model import LocalChatModel, default_model_path
from calls.local_runner import BLOCK, LocalStats

FACTS = " ".join(
    f"Fact {n}: honey bee colonies number {n * 1000} workers in survey {n}, who forage up to "
    f"{n + 2} kilometres from the hive and return nectar, pollen and water to it."
    for n in range(1, 11)
)
SHARED = SystemMessage(content="You answer questions from these notes.\n\n" + FACTS)
CALLS: list[list[BaseMessage]] = [
    [SHARED, HumanMessage(content="How far do the bees of survey 3 forage?")],
    [SystemMessage(content="You are terse."), HumanMessage(content="Name a colour.")],
    [SHARED, HumanMessage(content="How many workers are in survey 7?")],
]


@dataclass
class Outcome:
    replies: list[str]
    per_call: list[LocalStats]


def _run(kv_cache_mb: int) -> Outcome:
    # A context size no other test uses: a runner of its own, which no earlier call in this
    # process has held tokens in (the floor and the first call's reuse depend on that).
    model = LocalChatModel(
        model_path=default_model_path(),
        temperature=0.0,
        seed=0,
        max_tokens=24,
        n_ctx=2112,
        kv_cache_mb=kv_cache_mb,
    )
    engine = model._engine()
    replies, per_call = [], []
    for messages in CALLS:
        before = engine.stats
        replies.append(model.invoke(messages).text)
        per_call.append(engine.stats - before)
    return Outcome(replies, per_call)


@pytest.fixture(scope="module")
def without_cache() -> Outcome:
    return _run(kv_cache_mb=0)


@pytest.fixture(scope="module")
def with_cache() -> Outcome:
    return _run(kv_cache_mb=64)


def test_a_call_sharing_an_earlier_prefix_evaluates_only_the_rest(
    without_cache: Outcome, with_cache: Outcome
) -> None:
    plain, reused = without_cache.per_call[2], with_cache.per_call[2]

    assert plain.prompt_tokens == reused.prompt_tokens > 400
    assert plain.prompt_evaluated > 0.9 * plain.prompt_tokens  # the colour call broke it
    # What the first call's prompt shares with it, up to the last block boundary before that.
    shared = reused.prompt_tokens - reused.prompt_floor
    assert shared > 0.9 * reused.prompt_tokens
    taken = exact_reuse(shared, reused.prompt_tokens, BLOCK)
    assert reused.prompt_evaluated == reused.prompt_tokens - taken < 0.15 * reused.prompt_tokens
    assert reused.restores == 1
    total = sum(s.prompt_evaluated for s in with_cache.per_call)
    assert total < 0.7 * sum(s.prompt_evaluated for s in without_cache.per_call)


def test_replies_are_the_same_with_and_without_saved_states(
    without_cache: Outcome, with_cache: Outcome
) -> None:
    assert all(without_cache.replies)
    assert with_cache.replies == without_cache.replies


def test_saved_states_come_within_a_block_of_the_floor_that_last_call_reuse_misses(
    without_cache: Outcome, with_cache: Outcome
) -> None:
    # The floor depends on the prompts only: the same with or without saved states.
    floors = [s.prompt_floor for s in with_cache.per_call]
    assert floors == [s.prompt_floor for s in without_cache.per_call]
    # Nothing held before the first call: all of it.
    assert floors[0] == without_cache.per_call[0].prompt_evaluated
    assert floors[2] < 0.1 * with_cache.per_call[2].prompt_tokens
    assert floors[2] <= with_cache.per_call[2].prompt_evaluated < floors[2] + BLOCK
    assert without_cache.per_call[2].prompt_evaluated > floors[2] + BLOCK
