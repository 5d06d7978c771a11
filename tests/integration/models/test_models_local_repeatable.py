"""The bundled SmolLM2 gives the same bytes for the same request whatever the process ran
before: with saved KV states or without, in a fresh runner or one that served other calls
(unrelated ones, ones sharing a prefix of the prompt, the one whose reply the prompt carries
on, as a conversation does), with other calls in flight, and sampled at a temperature with a
fixed seed; only another seed changes a sampled reply."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from calls.local_model import LocalChatModel, default_model_path
from calls.local_runner import BLOCK, LlamaRunner

N_CTX = 2048
FACTS = " ".join(
    f"Fact {n}: honey bee colonies number {n * 1000} workers in survey {n}, who forage up to "
    f"{n + 2} kilometres from the hive."
    for n in range(1, 8)
)
SHARED = SystemMessage(content="You answer questions from these notes.\n\n" + FACTS)
ASK_3 = [SHARED, HumanMessage(content="How far do the bees of survey 3 forage?")]
ASK_7 = [SHARED, HumanMessage(content="How many workers are in survey 7?")]
SUMMARY = [SHARED, HumanMessage(content="Summarise the notes.")]
COLOUR = [SystemMessage(content="You are terse."), HumanMessage(content="Name a colour.")]
# Sampling follows small changes of the logits that greedy choice often hides: reusing the KV
# entries of the reply that a follow-up's prompt carries on changed this one.
SAMPLED = {"temperature": 0.9, "seed": 7}


@dataclass(frozen=True)
class Call:
    messages: list[BaseMessage]
    options: dict[str, Any] = field(default_factory=dict)  # a call's temperature and seed


def _model() -> LocalChatModel:
    return LocalChatModel(
        model_path=default_model_path(), temperature=0.0, seed=0, max_tokens=32, n_ctx=N_CTX
    )


def _runner(kv_cache_mb: int = 0) -> LlamaRunner:
    """A runner of its own, not the process's shared one: it has served no call yet."""
    return LlamaRunner(default_model_path(), N_CTX, None, kv_cache_mb << 20)


def _complete(runner: LlamaRunner, call: Call) -> dict[str, Any]:
    request, _ = _model()._request(call.messages, None, **call.options)
    return runner.complete(request, threading.Event())


def _text(completion: dict[str, Any]) -> str:
    return str(completion["choices"][0]["message"]["content"])


def _cold(call: Call) -> str:
    return _text(_complete(_runner(), call))


@pytest.fixture(scope="module")
def calls() -> dict[str, Call]:
    """The calls, the follow-up built on the reply the summary gets."""
    summary = _cold(Call(SUMMARY))
    follow = [*SUMMARY, AIMessage(content=summary), HumanMessage(content="Say more about that.")]
    return {
        "ask3": Call(ASK_3),
        "ask7": Call(ASK_7),
        "colour": Call(COLOUR),
        "summary": Call(SUMMARY),
        "follow": Call(follow, SAMPLED),
        "sampled": Call(ASK_7, SAMPLED),
    }


@pytest.fixture(scope="module")
def cold(calls: dict[str, Call]) -> dict[str, str]:
    """Each call's reply from a runner that has served nothing before it."""
    return {name: _cold(call) for name, call in calls.items()}


@pytest.mark.parametrize("kv_cache_mb", [0, 64], ids=["context only", "saved states"])
def test_a_runner_that_served_other_calls_replies_as_a_fresh_one(
    calls: dict[str, Call], cold: dict[str, str], kv_cache_mb: int
) -> None:
    runner = _runner(kv_cache_mb)
    # The follow-up right after the question it carries on (its reply is in the context),
    # questions sharing the notes with other calls between them, a sampled one twice.
    order = ["colour", "summary", "follow", "ask3", "sampled", "colour", "ask7", "follow"]

    warm = []
    for name in order:
        before = runner.stats
        counter = runner._llama_cpp.llama_perf_context(runner._ctx).n_p_eval
        completion = _complete(runner, calls[name])
        warm.append(_text(completion))
        evaluated = completion["usage"]["prompt_tokens_evaluated"]
        assert evaluated == (runner.stats - before).prompt_evaluated
        if before.calls and evaluated % BLOCK != 1:  # a one-token batch counts as generation
            # llama.cpp evaluated what the runner left it, no more and no less.
            assert runner._llama_cpp.llama_perf_context(runner._ctx).n_p_eval - counter == (
                evaluated
            )

    assert warm == [cold[name] for name in order]
    assert all(warm)
    assert runner.stats.prompt_evaluated < 0.75 * runner.stats.prompt_tokens  # it did reuse
    assert runner.stats.restores >= (1 if kv_cache_mb else 0)


def test_calls_in_flight_together_reply_as_one_at_a_time(
    calls: dict[str, Call], cold: dict[str, str]
) -> None:
    runner = _runner(kv_cache_mb=64)
    orders = [list(reversed(calls)), ["sampled", "summary", "follow", "ask3"]]

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        for order in orders:
            replies = list(pool.map(lambda name: _text(_complete(runner, calls[name])), order))
            assert replies == [cold[name] for name in order]


async def test_a_calls_temperature_and_seed_reach_the_shared_runner(
    calls: dict[str, Call], cold: dict[str, str]
) -> None:
    # The model's own temperature is 0; the call asks for sampling with its seed.
    model = _model().model_copy(update={"kv_cache_mb": 64})
    names = ["summary", "follow", "sampled", "ask3", "follow"]

    replies = await asyncio.gather(
        *(model.ainvoke(calls[name].messages, **calls[name].options) for name in names)
    )

    assert [reply.text for reply in replies] == [cold[name].strip() for name in names]


def test_another_seed_can_change_a_sampled_reply() -> None:
    runner = _runner()

    replies = {
        seed: _text(_complete(runner, Call(COLOUR, {"temperature": 1.5, "seed": seed})))
        for seed in (1, 2, 3, 4)
    }

    assert len(set(replies.values())) > 1
    assert _text(_complete(runner, Call(COLOUR, {"temperature": 1.5, "seed": 3}))) == replies[3]


def test_at_temperature_zero_the_seed_does_not_matter() -> None:
    runner = _runner()

    replies = {_text(_complete(runner, Call(ASK_7, {"seed": seed}))) for seed in (1, 2)}

    assert len(replies) == 1
