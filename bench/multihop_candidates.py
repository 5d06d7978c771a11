"""Every answer a run's tree reached, scored: what a better choice could have gained (the
headroom of the selection rule), and how the model's own token confidence sorts right answers
from wrong ones (the data a confidence threshold is to be calibrated on).

A final row carries `candidates`: one entry per answered leaf, with its answer F1 and EM against
the gold answers, its grounding, its mean token log-probability where the model reports one
(calls/local_confidence.py), whether it is on the greedy first path, and whether it is the chosen
one. Rows written before the field existed have none and are left out of these figures.

A final row of the anytime search also carries `first_weak`: the signals that found its first
answer weak (agents/anytime.py `Assessment.signals`), which is why it went on instead of
stopping at `first_answer_sufficient`; the report counts each signal, and how each final answer
was chosen (`chosen_by`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from statistics import fmean
from typing import Any, TypedDict

from agents.anytime import on_first_path
from agents.choice import fully_verified
from agents.grounding.corroborate import agreeing_groups, agrees
from agents.state import NodeRecord
from bench.multihop_data import short_id
from bench.multihop_metrics import best_answer_scores

# Each weakness signal (agents/anytime.py `Assessment.signals`) as the report says it.
SIGNALS = {
    "ungrounded": "not fully backed by verified quotes",
    "unsupported": "sentences without a verified quote",
    "rejected": "rejected citations",
    "missing_entities": "an entity of the question no evidence names",
    "empty_steps": "a step that brought no new evidence",
    "undone": "planned steps not run",
}
RIGHT_F1 = 0.5
"""A candidate whose answer F1 reaches this counts as right in the confidence figures."""


class Candidate(TypedDict):
    node: str
    predicted: str
    f1: float
    em: float
    groundedness: float | None
    verified: bool  # it cites, and the verifier rejected none of its citations
    confidence: float | None  # mean token log-probability of its answer, if reported
    first: bool  # on the greedy first path
    chosen: bool


def candidates_of(
    nodes: Iterable[NodeRecord],
    golds: Sequence[str],
    chosen_id: str | None,
    predict: Callable[[str | None], str | None],
) -> list[Candidate]:
    """The answered leaves of a run's tree, in id order, each scored against `golds`
    (`predict` turns an answer into what is scored, as the row's own answer is)."""
    out: list[Candidate] = []
    for node in nodes:
        if not node["answer"]:
            continue
        predicted = predict(node["answer"]) or ""
        scores = best_answer_scores(predicted, golds)
        grounding = node["grounding"]
        confidence = node.get("confidence")
        out.append(
            {
                "node": node["id"],
                "predicted": predicted,
                "f1": round(scores.f1, 4),
                "em": scores.em,
                "groundedness": grounding["groundedness"] if grounding else None,
                "verified": fully_verified(grounding),
                "confidence": None if confidence is None else round(confidence, 4),
                "first": on_first_path(node["id"]),
                "chosen": node["id"] == chosen_id,
            }
        )
    return out


def _option_sizes(candidates: Sequence[Candidate]) -> tuple[int, int]:
    """How many answered paths reached the first path's answer, and how many the most common
    other answer (answers grouped as the choice rule groups them: `agrees`)."""
    first = next((c for c in candidates if c["first"]), None)
    if first is None:
        return 0, 0
    groups = agreeing_groups(candidates, lambda candidate: candidate["predicted"])
    mine = next(g for g in groups if first in g)
    return len(mine), max((len(g) for g in groups if g is not mine), default=0)


def auroc(right: Sequence[float], wrong: Sequence[float]) -> float | None:
    """The chance that a right candidate's score is above a wrong one's (ties count a half);
    None without both."""
    if not right or not wrong:
        return None
    above = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
    return above / (len(right) * len(wrong))


def candidate_lines(multihop: Mapping[str, Any], config: str) -> list[str]:
    """The headroom of the choice and the confidence figures, from `config`'s rows that carry
    their candidates; none when no row does."""
    rows = [r for r in multihop["rows"] if r["config"] == config and "candidates" in r]
    if not rows:
        return []
    best = [max((c["f1"] for c in r["candidates"]), default=0.0) for r in rows]
    chosen = [float(r["f1"]) for r in rows]
    better = sum(1 for b, c in zip(best, chosen, strict=True) if b > c)
    others = [
        r
        for r in rows
        if any(
            not c["first"] and not agrees(c["predicted"], r["predicted"]) for c in r["candidates"]
        )
    ]
    first_paths, other_paths = zip(*(_option_sizes(r["candidates"]) for r in rows), strict=True)
    text = (
        f"Every answer the tree reached (`candidates` in the {len(rows)} `{config}` rows that "
        f"carry them): some path's answer scored a higher F1 than the chosen one on {better} "
        f"question(s); the best path's mean answer F1 was {fmean(best):.2f} against "
        f"{fmean(chosen):.2f} chosen — the most a better choice among these paths could add. "
        f"A path off the first one reached another answer than the chosen on {len(others)}. "
        f"Paths a question that reached the first answer: {fmean(first_paths):.1f} on "
        f"average; reached the most common other answer: {fmean(other_paths):.1f}; another "
        f"answer reached by two paths or more (what the choice rule asks before it may "
        f"replace a grounded first answer) on {sum(1 for n in other_paths if n >= 2)}."
    )
    scored = [c for r in rows for c in r["candidates"] if c["confidence"] is not None]
    right = [c["confidence"] for c in scored if c["f1"] >= RIGHT_F1]
    wrong = [c["confidence"] for c in scored if c["f1"] < RIGHT_F1]
    area = auroc(right, wrong)
    if area is not None:
        text += (
            f" The model's mean token log-probability over {len(scored)} answers: "
            f"{fmean(right):.3f} for the {len(right)} right ones (F1 ≥ {RIGHT_F1}) against "
            f"{fmean(wrong):.3f} for the {len(wrong)} wrong ones; a right answer ranks above "
            f"a wrong one with probability {area:.2f} (0.5 is chance), on too few questions yet "
            "to set a threshold on."
        )
    return ["", text]


def weakness_lines(multihop: Mapping[str, Any], config: str) -> list[str]:
    """How often the first answer was found sufficient, and which signals held the search on,
    from `config`'s rows that record them; none when no row does."""
    rows = [r for r in multihop["rows"] if r["config"] == config and "first_weak" in r]
    if not rows:
        return []
    sufficient = sum(1 for r in rows if not r["first_weak"])
    counts = [
        f"{label} on {n}"
        for signal, label in SIGNALS.items()
        if (n := sum(1 for r in rows if signal in r["first_weak"]))
    ]
    text = (
        f"The first answer was found sufficient (nothing weak: the run may stop there) on "
        f"{sufficient} of the {len(rows)} `{config}` runs that record it"
    )
    text += "; what was found weak: " + ", ".join(counts) + "." if counts else "."
    return ["", text]


def chosen_lines(multihop: Mapping[str, Any], config: str, first_config: str) -> list[str]:
    """How `config`'s final answers were chosen (`chosen_by`), and where the answer is not the
    first one, its F1 against the first answer's (`first_config`'s row of the same run)."""
    rows = [r for r in multihop["rows"] if r["config"] == config and r.get("chosen_by")]
    if not rows:
        return []
    first_rows = {_question(r): r for r in multihop["rows"] if r["config"] == first_config}
    counts = Counter(r["chosen_by"] for r in rows)
    text = f"How the `{config}` answers were chosen: " + ", ".join(
        f"`{how}` {n}" for how, n in counts.most_common()
    )
    changed = [
        (r, first)
        for r in rows
        if r["chosen_by"] not in ("first", "single")
        and (first := first_rows.get(_question(r))) is not None
        and not agrees(first["predicted"], r["predicted"])
    ]
    if changed:
        text += "; where the answer is not the first answer, its F1 against the first's: " + (
            ", ".join(
                f"{short_id(r['id'])} ({r['chosen_by']}) {first['f1']:.2f} → {r['f1']:.2f}"
                for r, first in changed
            )
        )
    return ["", text + ".", *_by_way(rows, first_rows)]


def _by_way(
    rows: Sequence[Mapping[str, Any]], first_rows: Mapping[tuple[str, str], Mapping[str, Any]]
) -> list[str]:
    """Per way of choosing, the final answers against the first answers of the same runs: mean
    differences in answer and supporting-fact F1, and the model calls spent past the first
    answer."""
    ways: dict[str, list[tuple[float, float, float]]] = {}
    for r in rows:
        first = first_rows.get(_question(r))
        if first is not None:
            ways.setdefault(r["chosen_by"], []).append(
                (
                    r["f1"] - first["f1"],
                    r["sp_f1"] - first["sp_f1"],
                    r["llm_calls"] - first["llm_calls"],
                )
            )
    if not ways:
        return []
    parts = [
        f"`{how}` on {len(diffs)}: answer F1 {fmean(d[0] for d in diffs):+.3f}, "
        f"supporting-fact F1 {fmean(d[1] for d in diffs):+.3f}, "
        f"{fmean(d[2] for d in diffs):.1f} calls"
        for how, diffs in sorted(ways.items(), key=lambda item: -len(item[1]))
    ]
    return [
        "",
        "Against the first answer of the same run, by how the final answer was chosen (mean "
        "differences, and the model calls spent after the first answer was ready): "
        + "; ".join(parts)
        + ". Where the first answer is kept (`first`), its supporting facts may still differ: "
        "the final answer also carries the verified quotes of the other paths that reached the "
        "same answer (agents/grounding/corroborate.py).",
    ]


def wrong_first_lines(multihop: Mapping[str, Any], config: str, first_config: str) -> list[str]:
    """Where the first answer (`first_config`'s row) was wrong, what the paths off the first one
    reached (`config`'s candidates): nothing, the same answer, only other wrong answers, or a
    right one. The choice can only pick among these, so they bound what the search could add."""
    first_rows = {_question(r): r for r in multihop["rows"] if r["config"] == first_config}
    ways: Counter[str] = Counter()
    read = Counter[str]()
    for r in multihop["rows"]:
        if r["config"] != config or "candidates" not in r:
            continue
        first = first_rows.get(_question(r))
        if first is None:
            continue
        if first["f1"] >= RIGHT_F1:
            continue
        read["known"] += "gold_on_path" in first and "gold_seen" in r
        read["first"] += first.get("gold_on_path", 0.0) >= 1.0
        read["tree"] += r.get("gold_seen", 0.0) >= 1.0
        others = [c for c in r["candidates"] if not c["first"]]
        if not others:
            ways["none"] += 1
        elif any(c["f1"] >= RIGHT_F1 for c in others):
            ways["right"] += 1
        elif all(agrees(c["predicted"], first["predicted"]) for c in others):
            ways["same"] += 1
        else:
            ways["other"] += 1
    if not ways:
        return []
    return [
        "",
        f"Where the first answer was wrong (F1 below {RIGHT_F1}, {ways.total()} of the "
        f"`{config}` runs that carry their candidates), the paths off the first one reached no "
        f"answer on {ways['none']}, only the first answer again on {ways['same']}, other "
        f"answers, none right, on {ways['other']}, and a right answer on {ways['right']}: "
        "what the choice could have replaced a wrong first answer with." + _reading(read),
    ]


def _reading(read: Counter[str]) -> str:
    """Of the wrong first answers whose rows say which gold paragraphs were read: on how many
    the first path had read every one, and on how many the whole tree had."""
    if not read["known"]:
        return ""
    counts = (
        f" Of the {read['known']} whose rows record the paragraphs read, the first path had "
        f"read every gold paragraph on {read['first']}, and the tree as a whole on "
        f"{read['tree']}"
    )
    if 2 * read["first"] >= read["known"]:
        return (
            counts + ": where the evidence was read and the answer still wrong, the model read "
            "it into a wrong answer, which more paths retrieving more do not mend."
        )
    return (
        counts + ": most wrong first answers had missed a gold paragraph, and the other paths "
        f"read it on {read['tree'] - read['first']} more: retrieval failed more often than "
        "reading."
    )


def _question(row: Mapping[str, Any]) -> tuple[str, str]:
    """A row's question: its id in its setting (rows from before settings were named are of the
    distractor setting)."""
    return row["id"], row.get("corpus", "distractor")
