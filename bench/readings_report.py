"""The figures of `bench.readings` (a first path read again), for the terminal and for
docs/benchmarks.md §11: the greedy reading against each rule over the readings, paired, and how
often a sampled reading was right where the greedy one was wrong.

A results file is `{"model", "samples", "temperature", "traces", "rows"}`; each row holds the
question's readings (the greedy one first) and the reading each rule kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from bench.multihop_candidates import RIGHT_F1
from bench.multihop_corpus import LABELS
from bench.stats import paired_interval

RULES = {
    "replaced": "the rule (another answer only when more readings reached it, two at least, "
    "one of them verified)",
    "majority": "plain self-consistency (the answer most readings reached)",
}


@dataclass(frozen=True, slots=True)
class RuleFigures:
    """One rule's answer F1 over the questions, against the greedy reading's."""

    mean: float
    difference: float
    low: float
    high: float
    better: int
    worse: int


@dataclass(frozen=True, slots=True)
class Figures:
    questions: int
    samples: int
    reproduced: int  # the greedy reading gave the run's own first answer
    greedy: float
    rules: dict[str, RuleFigures]
    wrong: int  # questions whose greedy reading was wrong
    rescued: int  # of those, a sampled reading was right
    best: float  # the best reading of each question, averaged


def figures(rows: Sequence[Mapping[str, Any]]) -> Figures | None:
    """The figures of `rows`; None without any."""
    if not rows:
        return None
    greedy = [float(r["readings"][0]["f1"]) for r in rows]
    rules = {}
    for rule in RULES:
        chosen = [float(r["readings"][r[rule]]["f1"]) for r in rows]
        mean, low, high = paired_interval(chosen, greedy)
        rules[rule] = RuleFigures(
            fmean(chosen),
            mean,
            low,
            high,
            sum(1 for c, g in zip(chosen, greedy, strict=True) if c > g),
            sum(1 for c, g in zip(chosen, greedy, strict=True) if c < g),
        )
    wrong = [r for r in rows if r["readings"][0]["f1"] < RIGHT_F1]
    return Figures(
        questions=len(rows),
        samples=len(rows[0]["readings"]) - 1,
        reproduced=sum(1 for r in rows if r["readings"][0]["predicted"] == r["recorded"]),
        greedy=fmean(greedy),
        rules=rules,
        wrong=len(wrong),
        rescued=sum(1 for r in wrong if any(x["f1"] >= RIGHT_F1 for x in r["readings"][1:])),
        best=fmean(max(float(x["f1"]) for x in r["readings"]) for r in rows),
    )


def summary(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Lines for the terminal."""
    found = figures(rows)
    if found is None:
        return ["readings: no trace with a first answer"]
    lines = [
        f"readings: {found.questions} first paths, {found.samples} sampled readings each; the "
        f"greedy reading gave the run's own first answer on {found.reproduced} of "
        f"{found.questions}",
        f"  greedy reading  answer F1 {found.greedy:.3f}",
    ]
    for rule, f in found.rules.items():
        lines.append(
            f"  {rule:<15} answer F1 {f.mean:.3f}: {f.difference:+.3f} ({f.low:+.3f} to "
            f"{f.high:+.3f}), better on {f.better}, worse on {f.worse}"
        )
    lines.append(
        f"  where the greedy reading was wrong ({found.wrong}), a sampled reading was right on "
        f"{found.rescued}; the best reading of each path: answer F1 {found.best:.3f}"
    )
    return lines


def readings_lines(results: Mapping[str, Any], where: str) -> list[str]:
    """A paragraph of §11 for one results file (`where`: its path as the page shows it)."""
    found = figures(results["rows"])
    if found is None:
        return []
    rules = "; ".join(
        f"{RULES[rule]} {f.mean:.2f} ({f.difference:+.3f}, 95 % paired-bootstrap interval "
        f"{f.low:+.3f} to {f.high:+.3f}; better on {f.better}, worse on {f.worse})"
        for rule, f in found.rules.items()
    )
    traces = " ".join(results.get("traces", []))
    settings = Counter(str(r.get("corpus", "distractor")) for r in results["rows"])
    where_from = ", ".join(f"{n} {LABELS.get(s, s)}" for s, n in sorted(settings.items()))
    return [
        f"**Reading the same evidence again** (`python -m bench.readings --traces {traces} "
        f"--samples {found.samples} --temperature {results['temperature']}`, the local model "
        f"{results['model']}; `{where}`). Where the first answer was wrong its path had mostly "
        "read the gold paragraphs, so this asks whether spending calls on readings rather "
        f"than on paths would pay. On {found.questions} first paths of the default's traces "
        f"({where_from}), "
        f"the responder read each path once greedily, as the run had (it gave the run's own "
        f"first answer on {found.reproduced} of {found.questions}), then {found.samples} "
        f"times sampled at temperature {results['temperature']}, each with a seed of its own. "
        f"Answer F1: the greedy reading {found.greedy:.2f}; {rules}. Of the {found.wrong} "
        f"questions whose greedy reading was wrong, a sampled reading was right on "
        f"{found.rescued}; the best reading of each path would score {found.best:.2f}.",
        "",
    ]
