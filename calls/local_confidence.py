"""The local model's own confidence in a reply: the log-probability it gave each token it wrote,
recorded while it writes, summed up per reply, carried in the reply's `response_metadata` and
read back from there. Pure (numpy, no model).

llama-cpp-python gives log-probabilities only to a model loaded with `logits_all=True`, which
keeps a row of logits for every position of the context (4,096 by 151,936 floats for a Qwen:
2.5 GB). `TokenLogprobs` needs none of that: it is a logits processor, which llama-cpp-python
runs as a custom sampler stage placed first in the sampler chain, before the penalties, the
grammar and the sampling itself. At each step it is handed the next token's raw logits (the
whole vocabulary, in token id order) and the tokens evaluated so far; it keeps a copy of the
logits and, at the next step, when the token chosen from them comes back as the last
evaluated token, looks that token up in their log-softmax. It returns the logits it was given,
unchanged, so sampling is untouched (tests/integration/models/test_models_local_confidence.py).

What it measures is the model's own distribution, before the repeat penalty, the grammar and
the temperature shape it: a token a grammar forced counts at the probability the model gave
it. The reply's last token is never fed back to the model (llama.cpp stops at an end-of-
generation token, or at the token limit, before evaluating it), so it is not counted: a reply
that ended on an end-of-generation token counts every token of its text, one cut at the token
limit all but its last.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

TOKEN_CONFIDENCE = "token_confidence"
"""The key of the figures in a llama.cpp reply and in the LangChain message's
`response_metadata`."""


@dataclass(frozen=True, slots=True)
class TokenConfidence:
    """A reply's token log-probabilities summed up: their mean, the lowest, how many."""

    mean_logprob: float
    min_logprob: float
    tokens: int

    @classmethod
    def of(cls, logprobs: Sequence[float]) -> TokenConfidence | None:
        """The summary of `logprobs` (None for none)."""
        if not logprobs:
            return None
        return cls(math.fsum(logprobs) / len(logprobs), min(logprobs), len(logprobs))

    def as_metadata(self) -> dict[str, float | int]:
        """As plain data, for a reply's `response_metadata`."""
        return {
            "mean_logprob": self.mean_logprob,
            "min_logprob": self.min_logprob,
            "tokens": self.tokens,
        }


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def confidence_in(metadata: Mapping[str, Any] | None) -> TokenConfidence | None:
    """The figures a reply's `response_metadata` carries, or None: a model other than the local
    one gives none, and anything malformed counts as none."""
    found = (metadata or {}).get(TOKEN_CONFIDENCE)
    if not isinstance(found, Mapping):
        return None
    mean, lowest, tokens = (
        _finite(found.get("mean_logprob")),
        _finite(found.get("min_logprob")),
        found.get("tokens"),
    )
    if mean is None or lowest is None or not isinstance(tokens, int) or tokens < 1:
        return None
    return TokenConfidence(mean, lowest, tokens)


def token_logprob(logits: npt.NDArray[np.float32], token: int) -> float:
    """log softmax(`logits`)[`token`]: one logsumexp, computed in place (`logits` is
    overwritten, so no vocabulary-sized array is allocated per token)."""
    top = logits.max()
    chosen = float(logits[token] - top)
    np.subtract(logits, top, out=logits)
    np.exp(logits, out=logits)
    return chosen - math.log(float(logits.sum(dtype=np.float64)))


class TokenLogprobs:
    """A llama-cpp-python logits processor that records the log-probability of each token the
    model writes and leaves the logits as they are (the module docstring). One per reply."""

    def __init__(self, n_vocab: int) -> None:
        self.n_vocab = n_vocab
        self.tokens: list[int] = []
        self.logprobs: list[float] = []
        self._held: npt.NDArray[np.float32] | None = None  # the last step's logits, copied
        self._length = -1  # how many tokens had been evaluated at the last step
        self.failed = False

    def __call__(
        self, input_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]
    ) -> npt.NDArray[np.single]:
        # llama-cpp-python calls this from a C callback, which would print an exception and
        # go on: one is logged instead, and the reply gets no figures.
        if not self.failed:
            try:
                self._step(input_ids, scores)
            except Exception:
                self.failed = True
                logger.exception("local model: token log-probabilities not recorded")
        return scores

    def _step(self, input_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]) -> None:
        length = len(input_ids)
        if self._held is not None and length == self._length + 1:
            token = int(input_ids[-1])
            self.tokens.append(token)
            self.logprobs.append(token_logprob(self._held, token))
        if len(scores) != self.n_vocab:
            # Not the whole vocabulary in id order (candidates a backend sampler kept): the
            # next token cannot be looked up, so this step is not counted.
            self._length = -1
            return
        if self._held is None:
            self._held = np.empty(self.n_vocab, dtype=np.float32)
        self._held[:] = scores
        self._length = length

    def summary(self) -> TokenConfidence | None:
        """The reply's figures (None when nothing was counted or recording failed)."""
        if self.failed:
            return None
        return TokenConfidence.of([p for p in self.logprobs if math.isfinite(p)])
