"""The multi-hop benchmark's questions of one data set and setting measured with several models,
taken together: a question measured by a larger model on the first questions and by a smaller one
on the rest still pairs the default with its chain from one run, so the paired figures pool.

Results are pooled only where they ran the same default and set it against the same chain
(`bench.multihop_versus`), at the same call budget, on the same data set and setting. Results that
answered a question in common are two models on the same questions, not one set of questions,
and are not pooled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from bench.multihop_compare import both, head_to_head, mcnemar, paired, ratio
from bench.multihop_corpus import LABELS
from bench.multihop_data import dataset_name
from bench.multihop_versus import against, chain_of, default_of

Group = tuple[str, str, int, str, str]
"""(data set, setting, call budget, default, chain): what results must share to pool."""


def _group(multihop: Mapping[str, Any]) -> Group:
    config = multihop["config"]
    data = str(config.get("dataset") or dataset_name(config.get("data", "")))
    setting = str(config.get("corpus", "distractor"))
    return (
        data,
        setting,
        int(config["max_llm_calls"]),
        default_of(dict(multihop)),
        chain_of(dict(multihop)),
    )


def _model(multihop: Mapping[str, Any]) -> str:
    return str(multihop.get("model_detail", multihop.get("model", "?")))


def pooled_rows(
    measured: Sequence[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[tuple[str, int]]]:
    """The default's and the chain's rows of every question of `measured` (results of one
    `Group`, on questions none of the others answered) that has both; and how many such
    questions each model gave, in order."""
    rows: list[Mapping[str, Any]] = []
    counts: dict[str, int] = {}
    for multihop in measured:
        default, chain = default_of(dict(multihop)), chain_of(dict(multihop))
        pairs = both(multihop["rows"], default, chain)
        rows += [row for pair in pairs for row in pair]
        counts[_model(multihop)] = counts.get(_model(multihop), 0) + len(pairs)
    return rows, [(model, n) for model, n in counts.items() if n]


def _pooled(
    measured: Sequence[Mapping[str, Any]],
) -> list[tuple[Group, list[Mapping[str, Any]], list[tuple[str, int]]]]:
    """Each group of results measured with two models or more: its pooled rows and how many
    questions each model gave."""
    groups: dict[Group, list[Mapping[str, Any]]] = {}
    for multihop in measured:
        groups.setdefault(_group(multihop), []).append(multihop)
    found = []
    for group, members in groups.items():
        rows, counts = pooled_rows(members)
        if len(counts) >= 2 and not _overlap(members):
            found.append((group, rows, counts))
    return found


def _overlap(members: Sequence[Mapping[str, Any]]) -> bool:
    """Whether two of the results answered a question in common: then they are two models on
    the same questions, compared table by table, not one set of questions to take together."""
    seen: set[str] = set()
    for multihop in members:
        mine = {row["id"] for row in multihop["rows"]}
        if seen & mine:
            return True
        seen |= mine
    return False


def across_lines(measured: Sequence[Mapping[str, Any]]) -> list[str]:
    """A paragraph for each group of results measured with two models or more (each followed
    by a blank line): the default against its chain over all their questions together."""
    lines: list[str] = []
    for (data, setting, budget, default, chain), rows, counts in _pooled(measured):
        heading = f"{data}, {LABELS[setting]}"
        lines += [_paragraph(heading, budget, default, chain, rows, counts), ""]
    return lines


def across_headlines(measured: Sequence[Mapping[str, Any]]) -> list[str]:
    """A sentence for the top of the page for each group of results measured with two models
    or more."""
    lines = []
    for (data, setting, budget, default, chain), rows, counts in _pooled(measured):
        models = " and ".join(f"{count} with {model}" for model, count in counts)
        mine, theirs = _means(rows, default, "f1"), _means(rows, chain, "f1")
        mean, low, high = paired(rows, default, chain, "f1")
        lines.append(
            f"On {sum(c for _, c in counts)} {data} questions in the {LABELS[setting]} "
            f"({models}, {budget} model calls each) the default search scores answer F1 "
            f"{mine:.2f} against {theirs:.2f} {against(chain)}: "
            f"{mean:+.3f}, 95 % paired interval {low:+.3f} to {high:+.3f}."
        )
    return lines


def _means(rows: Sequence[Mapping[str, Any]], config: str, key: str) -> float:
    return fmean(float(r[key]) for r in rows if r["config"] == config)


def _paragraph(
    heading: str,
    budget: int,
    default: str,
    chain: str,
    rows: Sequence[Mapping[str, Any]],
    counts: Sequence[tuple[str, int]],
) -> str:
    n = sum(count for _, count in counts)
    models = ", ".join(f"{count} with {model}" for model, count in counts)
    scores = []
    for key, label in (("f1", "answer F1"), ("sp_f1", "supporting-fact F1")):
        won, lost, tied = head_to_head(rows, default, chain, key)
        mean, low, high = paired(rows, default, chain, key)
        mine, theirs = _means(rows, default, key), _means(rows, chain, key)
        scores.append(
            f"{label} {mine:.2f} against {theirs:.2f} (better on {won}, worse on {lost}, "
            f"tied on {tied}; mean difference {mean:+.3f}, 95 % paired-bootstrap interval "
            f"{low:+.3f} to {high:+.3f})"
        )
    only_mine, only_theirs, p = mcnemar(rows, default, chain)
    answers = [r for r in rows if r["config"] == default]
    misverified = sum(int(r.get("misverified", 0)) for r in answers)
    citations = sum(int(r.get("citations", 0)) for r in answers)
    return (
        f"**{heading}, the models together** ({n} questions at {budget} model calls: "
        f"{models}; each question's `{default}` and `{chain}` rows from one run, so the pairs "
        f"pool across models): " + "; ".join(scores) + f". On exact match, right for the "
        f"default alone on {only_mine} and for the chain alone on {only_theirs} (exact McNemar "
        f"test, two-sided p = {p:.3f}). Model calls {ratio(rows, default, chain, 'llm_calls'):.2f} "
        f"times the chain's; of the default's {citations} verified citations, {misverified} "
        "misverified." + _headroom(answers)
    )


def _headroom(answers: Sequence[Mapping[str, Any]]) -> str:
    """What the best of the paths each tree reached would have scored (an oracle that knows the
    gold answers): the most any rule choosing among those paths could reach."""
    rows = [r for r in answers if r.get("candidates")]
    if not rows:
        return ""
    best = fmean(max(float(c["f1"]) for c in r["candidates"]) for r in rows)
    chosen = fmean(float(r["f1"]) for r in rows)
    return (
        f" Had the choice always taken the best answer its tree reached (an oracle that knows "
        f"the gold answer), answer F1 would have been {best:.2f} against {chosen:.2f} chosen, "
        f"on the {len(rows)} questions whose rows carry their candidates: the most that any "
        "rule choosing among these paths could add."
    )
