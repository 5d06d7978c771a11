"""Recording the bundled SmolLM2's token confidence changes nothing it writes: with the logits
processor (calls/local_confidence.py) or without, a reply has the same bytes and token counts,
greedy or sampled with a seed, under a grammar (structured output, a tool choice) or free; in a
fresh runner, a warm one with saved KV states, and with other calls in flight. And what it
records is the log-softmax of the logits the model gave, at the token it wrote."""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from calls import local_runner
from calls.local_confidence import TOKEN_CONFIDENCE, TokenLogprobs, confidence_in
from calls.local_model import LocalChatModel, default_model_path
from calls.local_runner import LlamaRunner
from tests.support.lookup_tool import TOOLS

N_CTX = 2048
# Long enough for calls sharing them to reuse whole blocks of KV entries.
NOTES = SystemMessage(
    content="You answer from these notes.\n\n"
    + " ".join(
        f"Survey {n}: the {n * 1000} workers of hive {n} forage up to {n + 2} kilometres away."
        for n in range(1, 9)
    )
)
ASK = [NOTES, HumanMessage(content="How far do the bees of survey 3 forage?")]
COLOUR = [SystemMessage(content="You are terse."), HumanMessage(content="Name a colour.")]
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "sure": {"type": "boolean"}},
    "required": ["answer", "sure"],
}
JSON = {"response_format": {"type": "json_object", "schema": ANSWER_SCHEMA}}


@dataclass(frozen=True)
class Call:
    messages: list[BaseMessage]
    options: dict[str, Any] = field(default_factory=dict)


CALLS = {
    "greedy": Call(ASK),
    "sampled": Call(ASK, {"temperature": 0.9, "seed": 7}),
    "hot": Call(COLOUR, {"temperature": 1.5, "seed": 3}),
    "json greedy": Call(ASK, JSON),
    "json sampled": Call(ASK, {**JSON, "temperature": 0.9, "seed": 11}),
    "tool sampled": Call(ASK, {"tools": TOOLS, "temperature": 0.9, "seed": 5}),
}


def _model() -> LocalChatModel:
    return LocalChatModel(
        model_path=default_model_path(), temperature=0.0, seed=0, max_tokens=40, n_ctx=N_CTX
    )


def _runner(*, confidence: bool, kv_cache_mb: int = 0) -> LlamaRunner:
    """A runner of its own, not the process's shared one: it has served no call yet."""
    return LlamaRunner(default_model_path(), N_CTX, None, kv_cache_mb << 20, confidence=confidence)


def _complete(runner: LlamaRunner, call: Call) -> dict[str, Any]:
    request, _ = _model()._request(call.messages, None, **call.options)
    return runner.complete(request, threading.Event())


@dataclass(frozen=True)
class Reply:
    text: str
    finish: str
    prompt_tokens: int
    completion_tokens: int

    @classmethod
    def of(cls, completion: dict[str, Any]) -> Reply:
        choice = completion["choices"][0]
        usage = completion["usage"]
        return cls(
            choice["message"]["content"],
            choice["finish_reason"],
            usage["prompt_tokens"],
            usage["completion_tokens"],
        )


@pytest.fixture(scope="module")
def plain() -> dict[str, Reply]:
    """Each call's reply from a fresh runner without the processor."""
    return {name: Reply.of(_complete(_runner(confidence=False), c)) for name, c in CALLS.items()}


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, Any]]:
    """Each call's completion from a fresh runner recording its confidence."""
    return {name: _complete(_runner(confidence=True), c) for name, c in CALLS.items()}


@pytest.mark.parametrize("name", list(CALLS))
def test_recording_the_confidence_leaves_the_reply_byte_identical(
    name: str, plain: dict[str, Reply], recorded: dict[str, dict[str, Any]]
) -> None:
    reply = Reply.of(recorded[name])

    assert reply == plain[name]
    assert reply.text.encode() == plain[name].text.encode()
    assert reply.completion_tokens > 1
    found = confidence_in(recorded[name])
    assert found is not None
    assert found.mean_logprob <= 0
    assert found.min_logprob <= found.mean_logprob
    # The last token counts only when the model fed it back, which it does not at the limit.
    last_fed_back = reply.finish == "stop"
    assert found.tokens == reply.completion_tokens - (0 if last_fed_back else 1)


def test_a_runner_without_the_processor_reports_no_confidence(plain: dict[str, Reply]) -> None:
    completion = _complete(_runner(confidence=False), CALLS["greedy"])

    assert TOKEN_CONFIDENCE not in completion
    assert Reply.of(completion) == plain["greedy"]


def test_a_warm_runner_with_saved_states_replies_and_records_as_fresh_ones(
    plain: dict[str, Reply], recorded: dict[str, dict[str, Any]]
) -> None:
    runner = _runner(confidence=True, kv_cache_mb=64)
    order = ["hot", "greedy", "json greedy", "sampled", "tool sampled", "greedy", "json sampled"]

    warm = [_complete(runner, CALLS[name]) for name in order]

    assert [Reply.of(c) for c in warm] == [plain[name] for name in order]
    # The figures too depend on the request alone.
    assert [c[TOKEN_CONFIDENCE] for c in warm] == [recorded[n][TOKEN_CONFIDENCE] for n in order]
    assert runner.stats.prompt_evaluated < runner.stats.prompt_tokens  # it did reuse


def test_calls_in_flight_together_reply_as_fresh_runners_without_the_processor(
    plain: dict[str, Reply],
) -> None:
    runner = _runner(confidence=True, kv_cache_mb=64)
    order = [*reversed(CALLS), "sampled", "json greedy"]

    with ThreadPoolExecutor(max_workers=len(order)) as pool:
        replies = list(pool.map(lambda name: Reply.of(_complete(runner, CALLS[name])), order))

    assert replies == [plain[name] for name in order]


async def test_the_local_chat_model_puts_the_figures_in_the_messages_metadata() -> None:
    model = _model().model_copy(update={"kv_cache_mb": 64})

    reply = await model.ainvoke(ASK)
    structured = await model.with_structured_output(ANSWER_SCHEMA, include_raw=True).ainvoke(ASK)

    assert confidence_in(reply.response_metadata) is not None
    assert confidence_in(structured["raw"].response_metadata) is not None  # type: ignore[index]


KEPT: list[TokenLogprobs] = []


class _Kept(TokenLogprobs):
    """The processor, kept for the test to read once the reply is written."""

    def __init__(self, n_vocab: int) -> None:
        super().__init__(n_vocab)
        KEPT.append(self)


@pytest.mark.parametrize("name", ["greedy", "json sampled"])
def test_the_figures_are_the_log_softmax_of_the_models_logits_at_the_tokens_it_wrote(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_runner, "TokenLogprobs", _Kept)
    KEPT.clear()
    runner = _runner(confidence=True)
    request, _ = _model()._request(CALLS[name].messages, None, **CALLS[name].options)
    prompt = runner.prompt_tokens(request["messages"])
    assert prompt is not None

    completion = runner.complete(request, threading.Event())

    [kept] = KEPT
    llama = runner.llama
    written = llama.detokenize(kept.tokens, prev_tokens=list(prompt)).decode()
    assert Reply.of(completion).text.startswith(written)
    # Replay: the prompt evaluated from scratch in the runner's blocks, then each written token
    # one at a time, as generation evaluates them; the logits after each are the model's.
    llama.reset()
    llama.eval(prompt)
    expected = []
    for token in kept.tokens:
        logits = np.ctypeslib.as_array(
            runner._llama_cpp.llama_get_logits_ith(runner._ctx, -1), shape=(llama.n_vocab(),)
        ).astype(np.float64)
        top = logits.max()
        expected.append(float(logits[token] - top - math.log(np.exp(logits - top).sum())))
        llama.eval([token])
    assert kept.logprobs == pytest.approx(expected, abs=1e-4)
