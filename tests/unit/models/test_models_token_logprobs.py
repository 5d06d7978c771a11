"""The local model's token confidence, bookkept without a model: the logits processor records
the log-softmax of each step's logits at the token fed back at the next step, leaves the logits
it is handed as they are, and skips what it cannot look up; the figures travel in a reply's
`response_metadata` and are read back from there, anything malformed read as none."""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from calls.local_confidence import (
    TOKEN_CONFIDENCE,
    TokenConfidence,
    TokenLogprobs,
    confidence_in,
)
from calls.local_model import LocalChatModel, default_model_path

VOCAB = 50
PROMPT = [3, 1, 4, 1, 5]


def _logits(seed: int, scale: float = 3.0, shift: float = 0.0) -> npt.NDArray[np.float32]:
    return (np.random.default_rng(seed).normal(0, scale, VOCAB) + shift).astype(np.float32)


def _reference(logits: npt.NDArray[np.float32], token: int) -> float:
    wide = logits.astype(np.float64)
    top = wide.max()
    return float(wide[token] - top - math.log(np.exp(wide - top).sum()))


def _generate(
    recorder: TokenLogprobs, steps: list[npt.NDArray[np.float32]], tokens: list[int]
) -> None:
    """Drive `recorder` as llama-cpp-python does: the prompt, then each chosen token fed back
    before the next step's logits."""
    ids = list(PROMPT)
    for logits, token in zip(steps, tokens, strict=True):
        recorder(np.array(ids, dtype=np.intc), logits)
        ids.append(token)


def test_each_token_gets_the_log_softmax_of_the_logits_it_was_chosen_from() -> None:
    steps = [_logits(seed) for seed in range(4)]
    tokens = [7, 0, 49, 12]
    recorder = TokenLogprobs(VOCAB)

    _generate(recorder, steps, tokens)

    # The last token was never fed back: it is not counted.
    assert recorder.tokens == tokens[:3]
    assert recorder.logprobs == pytest.approx(
        [_reference(steps[i], tokens[i]) for i in range(3)], abs=1e-5
    )


def test_the_logits_come_back_unchanged_bit_for_bit() -> None:
    # As llama-cpp-python hands them over: the logit field of llama.cpp's token data array.
    dtype = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
    buffer = (ctypes.c_char * (dtype.itemsize * VOCAB))()
    records = np.recarray(shape=(VOCAB,), dtype=dtype, buf=buffer)
    records.logit[:] = _logits(1)
    records.logit[5] = np.float32(-np.inf)
    before = bytes(buffer)
    recorder = TokenLogprobs(VOCAB)

    for length in (5, 6, 7):
        view = records.logit
        out = recorder(np.arange(length, dtype=np.intc), view)
        assert out is view
        records.logit[:] = out

    assert bytes(buffer) == before


def test_large_logits_do_not_overflow() -> None:
    steps = [_logits(seed, scale=20.0, shift=900.0) for seed in range(3)]
    recorder = TokenLogprobs(VOCAB)

    _generate(recorder, steps, [1, 2, 3])

    assert recorder.logprobs == pytest.approx(
        [_reference(steps[0], 1), _reference(steps[1], 2)], abs=1e-4
    )
    assert all(p <= 0 for p in recorder.logprobs)


def test_a_step_after_a_sequence_that_did_not_grow_by_one_token_is_not_counted() -> None:
    recorder = TokenLogprobs(VOCAB)

    recorder(np.array(PROMPT, dtype=np.intc), _logits(0))
    recorder(np.array([*PROMPT, 9, 9], dtype=np.intc), _logits(1))  # two tokens: not a step
    recorder(np.array([*PROMPT, 9, 9, 4], dtype=np.intc), _logits(2))

    assert recorder.tokens == [4]
    assert recorder.logprobs == pytest.approx([_reference(_logits(1), 4)], abs=1e-5)


def test_logits_of_part_of_the_vocabulary_are_not_looked_up() -> None:
    recorder = TokenLogprobs(VOCAB)

    recorder(np.array(PROMPT, dtype=np.intc), _logits(0)[:10])
    recorder(np.array([*PROMPT, 2], dtype=np.intc), _logits(1))
    recorder(np.array([*PROMPT, 2, 8], dtype=np.intc), _logits(2))

    assert recorder.tokens == [8]


def test_the_summary_is_the_mean_the_lowest_and_the_count() -> None:
    recorder = TokenLogprobs(VOCAB)
    recorder.logprobs = [-0.5, -0.1, -2.4]

    summary = recorder.summary()
    assert summary is not None
    assert math.isclose(summary.mean_logprob, -1.0)
    assert (summary.min_logprob, summary.tokens) == (-2.4, 3)
    assert TokenLogprobs(VOCAB).summary() is None


def test_a_failure_inside_the_processor_leaves_the_logits_and_gives_no_figures() -> None:
    recorder = TokenLogprobs(VOCAB)
    logits = _logits(0)

    recorder(np.array(PROMPT, dtype=np.intc), logits)
    out = recorder(np.array([*PROMPT, VOCAB + 5], dtype=np.intc), logits)  # no such token

    assert out is logits
    assert recorder.failed
    assert recorder.summary() is None


def test_figures_read_back_from_response_metadata() -> None:
    found = TokenConfidence(-0.21, -3.5, 40)

    assert confidence_in({TOKEN_CONFIDENCE: found.as_metadata(), "model": "x"}) == found
    assert confidence_in({TOKEN_CONFIDENCE: {**found.as_metadata(), "tokens": 2.0}}) is None


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        {},
        {"finish_reason": "stop"},
        {TOKEN_CONFIDENCE: "high"},
        {TOKEN_CONFIDENCE: {"mean_logprob": -0.2, "min_logprob": -1.0, "tokens": 0}},
        {TOKEN_CONFIDENCE: {"mean_logprob": float("nan"), "min_logprob": -1.0, "tokens": 3}},
        {TOKEN_CONFIDENCE: {"mean_logprob": -0.2, "min_logprob": True, "tokens": 3}},
        {TOKEN_CONFIDENCE: {"mean_logprob": -0.2, "tokens": 3}},
    ],
)
def test_a_reply_without_well_formed_figures_has_no_confidence(
    metadata: dict[str, Any] | None,
) -> None:
    assert confidence_in(metadata) is None


@pytest.mark.parametrize("tool_mode", [False, True], ids=["text", "tool choice"])
def test_the_local_reply_carries_the_figures_into_the_messages_metadata(tool_mode: bool) -> None:
    figures = TokenConfidence(-0.4, -2.0, 12).as_metadata()
    text = '{"action": "Lookup", "action_input": {"query": "bees"}}' if tool_mode else "Bees."
    completion = {
        "choices": [{"message": {"content": text}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 13},
    }
    model = LocalChatModel(model_path=default_model_path())

    [with_figures] = model._result({**completion, TOKEN_CONFIDENCE: figures}, tool_mode).generations
    [without] = model._result(completion, tool_mode).generations

    assert with_figures.message.response_metadata[TOKEN_CONFIDENCE] == figures
    assert confidence_in(with_figures.message.response_metadata) == TokenConfidence(-0.4, -2.0, 12)
    assert TOKEN_CONFIDENCE not in without.message.response_metadata
    assert bool(getattr(with_figures.message, "tool_calls", None)) is tool_mode
