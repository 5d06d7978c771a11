"""The multi-hop benchmark's configurations set side by side, question by question, as the
page's sentences: the default against the chain (its own first answer where the rows have it),
what one anytime run gives, runs repeated, and the other searches against the default. The
figures come from `bench.multihop_compare`; the tables and commands from
`bench.multihop_report`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from bench.multihop_compare import (
    both,
    by_question,
    head_to_head,
    mcnemar,
    medians,
    paired,
    ratio,
    same_answers,
)
from bench.multihop_data import short_id
from bench.multihop_rows import FIRST_ROWS

# The page's order of configurations: the chain and the default's two rows first, reruns last.
ORDER = (
    "chain",
    "chain@first",
    "anytime",
    "breadth",
    "mcts",
    "beam",
    "reserve",
    "chain-again",
    "chain@first-again",
    "anytime-again",
    "mcts-again",
    "chain@first-threads",
    "anytime-threads",
)


def default_of(multihop: dict[str, Any]) -> str:
    """The default configuration of the run that made the results (`mcts` before it said)."""
    return str(multihop.get("config", {}).get("default", "mcts"))


def _names(multihop: dict[str, Any]) -> set[str]:
    """The configurations with rows (from the totals where they are given)."""
    totals = multihop.get("totals")
    if totals is not None:
        return set(totals)
    return {row["config"] for row in multihop.get("rows", [])}


def chain_of(multihop: dict[str, Any]) -> str:
    """What the default is set against: its own first answer where the rows have it, else the
    chain run on its own."""
    first = FIRST_ROWS.get(default_of(multihop))
    return first if first is not None and first in _names(multihop) else "chain"


def against(chain: str) -> str:
    """What the default is said to be set against, for `chain_of`'s name."""
    return "for a single chain" if chain == "chain" else "for its first answer (a chain's)"


def run_as(rows: Sequence[str]) -> list[str]:
    """The configurations whose runs made rows of these names (a first answer's row comes
    from its configuration's run)."""
    made_by = {first: name for name, first in FIRST_ROWS.items()}
    return list(dict.fromkeys(made_by.get(row, row) for row in rows))


def _chain_name(multihop: dict[str, Any]) -> str:
    if chain_of(multihop) == "chain":
        return "the single chain"
    return f"its own first answer (`{chain_of(multihop)}`, the single chain's path)"


def _compared(multihop: dict[str, Any], a: str, b: str) -> tuple[list[str], list[dict[str, Any]]]:
    """`a` against `b` on answer and supporting-fact F1, as phrases for the page, with `a`'s
    rows of the questions both ran; nothing unless both ran."""
    totals = multihop["totals"]
    if a not in totals or b not in totals:
        return [], []
    rows = multihop["rows"]
    parts = []
    for key, label in (("f1", "answer F1"), ("sp_f1", "supporting-fact F1")):
        won, lost, tied = head_to_head(rows, a, b, key)
        parts.append(f"{label}: better on {won}, worse on {lost}, tied on {tied}")
    return parts, [dict(mine) for mine, _ in both(rows, a, b)]


def _interval(rows: list[dict[str, Any]], a: str, b: str) -> str:
    parts = []
    for key, label in (("f1", "answer F1"), ("sp_f1", "supporting-fact F1")):
        mean, low, high = paired(rows, a, b, key)
        parts.append(f"{label} {mean:+.3f} ({low:+.3f} to {high:+.3f})")
    return "; ".join(parts)


def _mcnemar(rows: list[dict[str, Any]], a: str, b: str) -> str:
    """The exact McNemar test on exact match, as a sentence; none for rows without EM."""
    if not all("em" in row for pair in both(rows, a, b) for row in pair):
        return ""
    only_a, only_b, p = mcnemar(rows, a, b)
    return (
        f" On exact match, right for the default alone on {only_a} and for the chain alone on "
        f"{only_b} (exact McNemar test, two-sided p = {p:.3f})."
    )


def head_to_head_lines(multihop: dict[str, Any]) -> list[str]:
    """The default against the chain over the questions both answered: win/tie/loss counts,
    paired intervals, the exact McNemar test on EM, and what the default's runs did."""
    default, chain = default_of(multihop), chain_of(multihop)
    parts, mine = _compared(multihop, default, chain)
    if not parts:
        return []
    rows = multihop["rows"]
    wide = sum(1 for row in mine if row["paths"] >= 2)
    revived = sum(1 for row in mine if row.get("revived", 0) > 0)
    agreeing = sum(1 for row in mine if row.get("agreeing", 0) > 0)
    exhausted = sum(1 for row in mine if row["stop_reason"] == "frontier_exhausted")
    budget = sum(1 for row in mine if str(row["stop_reason"]).startswith("budget"))
    return [
        "",
        f"Question by question, the default search against {_chain_name(multihop)} — "
        + "; ".join(parts)
        + ". Mean difference, default minus chain, with its 95 % paired-bootstrap interval "
        f"over the questions: {_interval(rows, default, chain)}."
        + _mcnemar(rows, default, chain)
        + " From the runs' ends: the "
        f"default completed two paths or more on {wide} of {len(mine)} questions, {revived} "
        f"of them with a path from the reserve, and another path agreed with the chosen "
        f"answer (lending it its quotes) on {agreeing}; {exhausted} ended with nothing left "
        f"to run (`frontier_exhausted`) and {budget} on the call budget."
        + _why_lines(multihop)
        + _loss_lines(multihop)
        + _sp_loss_lines(multihop),
    ]


def _chain_and_default(multihop: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(the chain's row, the default's row) of every question both answered."""
    found = both(multihop["rows"], chain_of(multihop), default_of(multihop))
    return [(dict(chain), dict(mine)) for chain, mine in found]


def _sp_loss_lines(multihop: dict[str, Any]) -> str:
    """The questions on which the default's supporting-fact F1 fell below the chain's: how many
    of its trees had no choice to make, and how few sentences its answers quoted."""
    lost = [(c, m) for c, m in _chain_and_default(multihop) if m["sp_f1"] < c["sp_f1"]]
    if not lost or any("branched" not in m for _, m in lost):
        return ""
    unbranched = sum(1 for _, m in lost if m["branched"] == 0)
    quoted_one = sum(1 for _, m in lost if m["citations"] <= 1)
    text = (
        f" Where its supporting-fact F1 was lower ({len(lost)} question"
        f"{'s' if len(lost) != 1 else ''}): its tree never branched on {unbranched} and its "
        f"answer quoted one sentence or none on {quoted_one}."
    )
    if unbranched == len(lost):
        text += (
            " With no choice made, the default ran a path like the chain's, and the sentence "
            "the model chose to quote decided the score, not the search."
        )
    return text


def _loss_lines(multihop: dict[str, Any]) -> str:
    """The questions on which the default's answer F1 fell below the chain's, each with what
    its row says of the search, and whether its path had read less of the gold paragraphs."""
    lost = [(c, m) for c, m in _chain_and_default(multihop) if m["f1"] < c["f1"]]
    if not lost:
        return ""
    cases = []
    for chain, mine in lost:
        tree = f" on {mine['nodes']} nodes" if "nodes" in mine else ""
        cases.append(
            f'`{short_id(mine["id"])}` (the chain "{chain["predicted"]}", F1 {chain["f1"]:.2f}; '
            f'the default "{mine["predicted"]}", F1 {mine["f1"]:.2f}, from '
            f"{mine['paths']} completed path{'s' if mine['paths'] != 1 else ''} after "
            f"{mine['llm_calls']} calls{tree})"
        )
    text = " Where its answer F1 was lower: " + "; ".join(cases) + "."
    if all("gold_on_path" in m and m["gold_on_path"] >= c["gold_on_path"] for c, m in lost):
        text += (
            " On each of these the default's chosen path had read as much of the gold "
            "paragraphs as the chain's: the search found the evidence, and the model read it "
            "into a different answer."
        )
    return text


def _why_lines(multihop: dict[str, Any]) -> str:
    """Why the default's tree ended where it did, from the rows that record the tree (rows
    read back from runs older than the `branched` field do not)."""
    default = default_of(multihop)
    traced = [r for r in multihop["rows"] if r["config"] == default and "branched" in r]
    if not traced:
        return ""
    budget = multihop["config"]["max_llm_calls"]
    never = [r for r in traced if r["branched"] == 0]
    exhausted = [r for r in traced if r["stop_reason"] == "frontier_exhausted"]
    unfinished = [r for r in traced if r["paths"] == 0]
    pruned = sum(1 for r in traced if r["pruned"] > 0)
    text = (
        f" Why, from the {len(traced)} of its runs whose rows record the tree: the replanner "
        f"gave one next step at every node (the tree never branched) on {len(never)}; "
        f"candidates were pruned on {pruned}; the call budget ran out before any path was "
        f"complete on {len(unfinished)} (the answer is then written from the deepest step "
        "done)"
    )
    if exhausted:
        unused = fmean(budget - r["llm_calls"] for r in exhausted)
        text += (
            f"; the {len(exhausted)} that ran out of nodes left {unused:.1f} of the {budget} "
            "calls unspent on average"
        )
    text += "."
    if 2 * len(never) > len(traced):
        text += (
            " A tree that does not branch is a chain: where the model proposes one step, the "
            "search has nothing to choose between, and the two give the same answer."
        )
    if 2 * len(unfinished) > len(traced):
        text += (
            " Where the budget ends the search before a path is complete, the search's calls "
            "went to branches that were never finished, while the chain spent them all on "
            "its one path."
        )
    return text


def reserve_lines(multihop: dict[str, Any]) -> list[str]:
    """`reserve` (the default search reviving pruned candidates) against the default, over the
    questions both have: what the revived paths and corroboration changed."""
    name = default_of(multihop)
    parts, mine = _compared(multihop, "reserve", name)
    if not parts:
        return []
    default = {r["id"]: r for r in multihop["rows"] if r["config"] == name}
    theirs = [default[row["id"]] for row in mine]
    revived = sum(1 for row in mine if row.get("revived", 0) > 0)
    agreeing = sum(1 for row in mine if row.get("agreeing", 0) > 0)
    same = sum(1 for row in mine if row["predicted"] == default[row["id"]]["predicted"])
    (calls, calls_default), (wall, wall_default) = (
        (fmean(r[key] for r in mine), fmean(r[key] for r in theirs))
        for key in ("llm_calls", "wall_s")
    )
    return [
        "",
        f"`reserve` (the default search with `reserve: true`) against the default on the same "
        f"{len(mine)} questions — {'; '.join(parts)}; mean difference "
        f"{_interval(multihop['rows'], 'reserve', name)}. A revived path ran to an answer "
        f"on {revived} of them and a path agreeing with the chosen answer lent it its quotes on "
        f"{agreeing}; the two gave the same answer text on {same}. It cost {calls:.1f} model "
        f"calls a question against {calls_default:.1f}, and {wall:.0f} s against "
        f"{wall_default:.0f} s (means), so `reserve` is off by default. A revived path is "
        "never voted on while a searched path has an answer: an earlier form of the reserve "
        "let the vote pick one, and on the first 7 questions its answer F1 was worse on 2 and "
        "better on none, the model's vote preferring the revived answers.",
    ]


def repeat_lines(multihop: dict[str, Any]) -> list[str]:
    """The chain run twice (`chain-again` against `chain`): the run-to-run variation that any
    difference between configurations is to be read against."""
    parts, mine = _compared(multihop, "chain-again", "chain")
    if not parts:
        return []
    first = {r["id"]: r for r in multihop["rows"] if r["config"] == "chain"}
    changed = sum(1 for row in mine if row["predicted"] != first[row["id"]]["predicted"])
    return [
        "",
        f"Run to run: the chain run a second time (`chain-again`, the same code and "
        f"parameters) on {len(mine)} questions gave a different answer on {changed}; against "
        f"its first run — {'; '.join(parts)}; mean difference "
        f"{_interval(multihop['rows'], 'chain-again', 'chain')}. Differences between "
        "configurations smaller than this are not differences this benchmark can tell.",
    ]


def again_lines(multihop: dict[str, Any]) -> list[str]:
    """The default and the chain run again (`<default>-again` and the chain's `-again` row) on
    questions where the two had differed: whether each difference holds on a second run of
    both, or was the luck of one run's samples."""
    default, chain = default_of(multihop), chain_of(multihop)
    names = (chain, default, chain + "-again", default + "-again")
    again = [q for q in by_question(multihop["rows"]).values() if all(name in q for name in names)]
    if not again:
        return []

    def sign(q: Mapping[str, Mapping[str, Any]], suffix: str = "") -> int:
        mine, theirs = float(q[default + suffix]["f1"]), float(q[chain + suffix]["f1"])
        return (mine > theirs) - (mine < theirs)

    def changed(name: str) -> int:
        return sum(1 for q in again if q[name + "-again"]["predicted"] != q[name]["predicted"])

    groups = []
    held_all = differed = 0
    for first, label, held_as, other_as in (
        (-1, "lost", "held", "a win"),
        (1, "won", "held", "a loss"),
    ):
        group = [q for q in again if sign(q) == first]
        if not group:
            continue
        held = sum(1 for q in group if sign(q, "-again") == first)
        flipped = sum(1 for q in group if sign(q, "-again") == -first)
        held_all, differed = held_all + held, differed + len(group)
        f1 = {name: fmean(q[name]["f1"] for q in group) for name in names}
        groups.append(
            f"where the default had {label} ({len(group)}): its answer F1 {f1[default]:.2f} "
            f"then {f1[default + '-again']:.2f}, the chain's {f1[chain]:.2f} then "
            f"{f1[chain + '-again']:.2f}; {held} {held_as}, {flipped} turned into {other_as} "
            f"and {len(group) - held - flipped} into a tie"
        )
    ids = ",".join(sorted(short_id(q[default]["id"]) for q in again))
    configs = ",".join(run_as([chain + "-again", default + "-again"]))
    # Runs before the default became `anytime` sampled every role; say how they were made.
    how = (
        "the same parameters, the local model sampling with its fixed seed at the roles' "
        "temperatures, 0.2 to 0.8"
        if default == "mcts"
        else "the same parameters"
    )
    text = (
        f"Run again: the default and the chain a second time on {len(again)} questions "
        f"(`--ids {ids} --configs {configs}`, {how}). Answers that changed: the default's on "
        f"{changed(default)}, the chain's on {changed(chain)}."
    )
    said = "; ".join(groups)
    if said:  # none when the first run's answers tied everywhere
        text += " " + said[:1].upper() + said[1:] + "."
    if differed and 2 * held_all < differed:
        text += (
            f" {held_all} of the {differed} differences held on a second run. A run's answer "
            "is not a function of its question alone: the sampled tokens can also depend on "
            "what the process did before (the KV states of earlier calls it reuses) and on the "
            "order in which parallel branches reach the model. On this many "
            "questions that variation decides more differences than the search does, so a "
            "difference between two configurations is to be read against how far one "
            "configuration's runs differ from each other."
        )
    return ["", text]


_AGREEMENT = {
    "-again": "Rerun agreement (the same question run again, its answer the same text after the "
    "official normalisation): ",
    "-threads": "With the service's threads (`-threads`: every blocking call, the model's "
    "included, in a worker thread as the service makes it, not inline), the same answer text "
    "as the benchmark's inline run: ",
}
"""A suffix of a configuration run again, and what the agreement of the two runs is called."""


def agreement_lines(multihop: dict[str, Any]) -> list[str]:
    """Rerun agreement: for each configuration run again (`<name>-again`, or `<name>-threads`
    with the service's threads), the share of the questions both runs answered whose answers
    are the same text after normalisation."""
    names = _names(multihop)
    lines = []
    for suffix, said in _AGREEMENT.items():
        parts = []
        for name in ORDER:
            if name not in names or name + suffix not in names:
                continue
            same, n = same_answers(multihop["rows"], name, name + suffix)
            if n:
                parts.append(f"`{name}` {same} of {n} ({same / n:.0%})")
        if parts:
            lines += ["", said + "; ".join(parts) + "."]
    return lines


def anytime_lines(multihop: dict[str, Any]) -> list[str]:
    """What one run of the anytime default gives: its first answer (the chain's path) against
    the chain run on its own, and how long and how many calls the first verified answer took
    against the final one."""
    default = default_of(multihop)
    first = FIRST_ROWS.get(default)
    names = _names(multihop)
    if first is None or first not in names or default not in names:
        return []
    rows = multihop["rows"]
    paired_runs = both(rows, first, default)
    (wall_first, wall_final), (calls_first, calls_final) = (
        medians(rows, first, default, key) for key in ("wall_s", "llm_calls")
    )
    text = (
        f"One run of the default gives two rows: `{first}`, its first verified answer (its "
        "greedy first path, which is the single chain), scored with the calls, tokens and "
        f"seconds of the moment it was ready, and `{default}`, its final answer. Over "
        f"{len(paired_runs)} questions the first answer was ready after {wall_first:.0f} s "
        f"and {calls_first:.1f} model calls (medians), the final one after {wall_final:.0f} s "
        f"and {calls_final:.1f}; the final answer was the first one, kept, on "
        f"{same_answers(rows, first, default, normalised=False)[0]}."
    )
    if "chain" in names and both(rows, first, "chain"):
        same, n = same_answers(rows, first, "chain", normalised=False)
        calls, wall = (ratio(rows, first, "chain", key) for key in ("llm_calls", "wall_s"))
        text += (
            f" Against the chain run on its own (`chain`, the equivalence check): the same "
            f"answer text on {same} of {n} questions; the first answer's model calls "
            f"{_times(calls)} and its wall {_times(wall)} the chain's (totals over those "
            "questions; the first answer's wall is the engine's time until it was ready, a "
            "run's the benchmark's time around the whole run)."
        )
    return ["", text]


def _times(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f} times"


def wide_lines(multihop: dict[str, Any]) -> list[str]:
    """The seed notebook's breadth and `beam` against the default, question by question."""
    lines = []
    for name, what in (
        ("breadth", "the seed notebook's breadth: no evaluator, no pruning, 8 nodes a layer"),
        ("beam", "the evaluator's best 2 nodes a layer"),
    ):
        parts, mine = _compared(multihop, name, default_of(multihop))
        if not parts:
            continue
        default = {r["id"]: r for r in multihop["rows"] if r["config"] == default_of(multihop)}
        wide = [row for row in mine if row["paths"] >= 2]
        lost = sum(1 for row in wide if row["f1"] < default[row["id"]]["f1"])
        lines += [
            "",
            f"`{name}` ({what}) against the default on the same {len(mine)} questions — "
            f"{'; '.join(parts)}. It completed two paths or more on {len(wide)} of them "
            f"(the default on {sum(1 for r in mine if default[r['id']]['paths'] >= 2)}), and on "
            f"{lost} of those its answer scored lower than the default's one path.",
        ]
        ours = [default[row["id"]] for row in mine]
        theirs_calls, ours_calls = (fmean(r["llm_calls"] for r in rs) for rs in (mine, ours))
        theirs_f1, ours_f1 = (fmean(r["f1"] for r in rs) for rs in (mine, ours))
        if theirs_calls > ours_calls and theirs_f1 <= ours_f1:
            lines[-1] += (
                f" On those questions it made {theirs_calls:.1f} model calls a question against "
                f"the default's {ours_calls:.1f}, for an answer F1 of {theirs_f1:.2f} against "
                f"{ours_f1:.2f}."
            )
    return lines
