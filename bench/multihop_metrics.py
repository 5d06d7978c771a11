"""HotpotQA's official metrics: answer EM/F1, supporting-fact EM/F1, joint EM/F1.

The rules follow the official evaluation script (hotpot_evaluate_v1.py), so the numbers can be
set beside published ones:

- an answer is normalised before comparing: lower case, ASCII punctuation removed, the
  articles a/an/the removed, whitespace collapsed;
- answer F1 is over normalised tokens, and is 0 when either answer normalises to "yes", "no"
  or "noanswer" and the two differ;
- supporting facts are compared as sets of (title, sent_id) pairs; EM means the sets are equal;
- joint precision and recall are the products of the answer's and the facts'; joint EM is
  both EMs; joint F1 comes from the joint precision and recall;
- a question without a prediction scores 0, and every metric is a mean over all questions;
- where a question has several right answers (MuSiQue's aliases), an answer's EM and F1 are
  each the best over them, as the official MuSiQue evaluation takes them.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

SupportingFact = tuple[str, int]
"""(paragraph title, sentence index), the title exactly as in the question's context."""

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CLOSED_ANSWERS = frozenset({"yes", "no", "noanswer"})


@dataclass(frozen=True, slots=True)
class Scores:
    """Exact match, F1, precision and recall of one prediction, each in [0, 1]."""

    em: float
    f1: float
    precision: float
    recall: float


ZERO = Scores(em=0.0, f1=0.0, precision=0.0, recall=0.0)


@dataclass(frozen=True, slots=True)
class QuestionScores:
    """One question's answer, supporting-fact and joint scores."""

    answer: Scores
    supporting: Scores
    joint: Scores


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces, in the official order:
    "The Eiffel-Tower!" becomes "eiffeltower" (punctuation goes before articles do)."""
    lowered = text.lower()
    unpunctuated = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", unpunctuated).split())


def answer_scores(prediction: str, gold: str) -> Scores:
    """EM and token F1 (with its precision and recall) of `prediction` against `gold`."""
    predicted, expected = normalize_answer(prediction), normalize_answer(gold)
    em = float(predicted == expected)
    # A yes/no answer is right or wrong: sharing a token with a different answer is no credit.
    if predicted != expected and (predicted in _CLOSED_ANSWERS or expected in _CLOSED_ANSWERS):
        return Scores(em=em, f1=0.0, precision=0.0, recall=0.0)
    predicted_tokens, expected_tokens = predicted.split(), expected.split()
    same = sum((Counter(predicted_tokens) & Counter(expected_tokens)).values())
    if same == 0:
        return Scores(em=em, f1=0.0, precision=0.0, recall=0.0)
    precision = same / len(predicted_tokens)
    recall = same / len(expected_tokens)
    return Scores(em=em, f1=_f1(precision, recall), precision=precision, recall=recall)


def best_answer_scores(prediction: str, golds: Sequence[str]) -> Scores:
    """`answer_scores` against each of `golds`: the best EM and the best F1 (with the precision
    and recall of the gold answer that gives that F1). Raises ValueError for no gold answer."""
    if not golds:
        raise ValueError("no gold answer to score against")
    scored = [answer_scores(prediction, gold) for gold in golds]
    best = max(scored, key=lambda s: s.f1)
    return replace(best, em=max(s.em for s in scored))


def supporting_fact_scores(
    prediction: Iterable[SupportingFact], gold: Iterable[SupportingFact]
) -> Scores:
    """EM, F1, precision and recall of the predicted (title, sent_id) set against the gold one."""
    predicted = {(title, sent_id) for title, sent_id in prediction}
    expected = {(title, sent_id) for title, sent_id in gold}
    hits = len(predicted & expected)
    false_positives = len(predicted - expected)
    false_negatives = len(expected - predicted)
    precision = hits / len(predicted) if predicted else 0.0
    recall = hits / len(expected) if expected else 0.0
    em = float(false_positives == 0 and false_negatives == 0)
    return Scores(em=em, f1=_f1(precision, recall), precision=precision, recall=recall)


def joint_scores(answer: Scores, supporting: Scores) -> Scores:
    """The official joint metric: products of precisions, of recalls and of EMs."""
    precision = answer.precision * supporting.precision
    recall = answer.recall * supporting.recall
    return Scores(
        em=answer.em * supporting.em,
        f1=_f1(precision, recall),
        precision=precision,
        recall=recall,
    )


def score_question(
    gold_answer: str | Sequence[str],
    gold_facts: Iterable[SupportingFact],
    answer: str | None,
    facts: Iterable[SupportingFact] | None,
) -> QuestionScores:
    """All scores of one question against its gold answer (or every right answer, the best
    counting); a missing answer or missing facts (None) score 0, and so does the joint metric
    then, as in the official script. An empty answer is a prediction."""
    golds = [gold_answer] if isinstance(gold_answer, str) else list(gold_answer)
    answered = best_answer_scores(answer, golds) if answer is not None else ZERO
    supported = supporting_fact_scores(facts, gold_facts) if facts is not None else ZERO
    joint = joint_scores(answered, supported) if answer is not None and facts is not None else ZERO
    return QuestionScores(answer=answered, supporting=supported, joint=joint)


def aggregate(scores: Sequence[QuestionScores]) -> dict[str, float]:
    """Means over the questions, under the official script's names (`em`, `f1`, `prec`,
    `recall`, then the same with `sp_` and `joint_` in front). Raises ValueError when empty."""
    if not scores:
        raise ValueError("no questions to aggregate")
    totals: dict[str, float] = {}
    for question in scores:
        for prefix, part in (
            ("", question.answer),
            ("sp_", question.supporting),
            ("joint_", question.joint),
        ):
            for name, value in (
                ("em", part.em),
                ("f1", part.f1),
                ("prec", part.precision),
                ("recall", part.recall),
            ):
                totals[prefix + name] = totals.get(prefix + name, 0.0) + value
    return {name: total / len(scores) for name, total in totals.items()}


def _f1(precision: float, recall: float) -> float:
    total = precision + recall
    return 2 * precision * recall / total if total > 0 else 0.0
