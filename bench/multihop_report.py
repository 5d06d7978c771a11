"""The multi-hop benchmark's section of docs/benchmarks.md, from `results/multihop.json`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from bench.stats import paired_interval

# Published points of reference: the LATS paper's HotpotQA table (Zhou et al., ICML 2024),
# gpt-3.5 with live Wikipedia search, 100 questions, exact match.
REFERENCE = (
    ("CoT", 0.34),
    ("ReAct", 0.32),
    ("Reflexion", 0.51),
    ("ToT", 0.55),
    ("LATS", 0.71),
)
ORDER = ("chain", "breadth", "mcts", "beam", "reserve", "chain-again", "mcts-again")


def _f(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "—"


def headline(multihop: dict[str, Any]) -> str:
    """One sentence for the top of the page (and the README): default against chain."""
    totals = multihop["totals"]
    chain, mcts = totals.get("chain"), totals.get("mcts")
    n = multihop["config"]["questions"]
    if chain is None or mcts is None:
        return ""
    return (
        f"On {n} HotpotQA questions (distractor paragraphs as the only tool, "
        f"{multihop.get('model_detail', multihop.get('model', 'the model'))}, "
        f"{multihop['config']['max_llm_calls']} model "
        f"calls each) the default search scores answer F1 {mcts['f1']:.2f} and "
        f"supporting-fact F1 {mcts['sp_f1']:.2f} against {chain['f1']:.2f} and "
        f"{chain['sp_f1']:.2f} for a single chain; {mcts['misverified'] + chain['misverified']} "
        f"of {mcts['citations'] + chain['citations']} verified citations failed an independent "
        "re-check."
    )


def _pairs(rows: list[dict[str, Any]], a: str, b: str, key: str) -> list[tuple[float, float]]:
    """(`a`'s `key`, `b`'s `key`) for each question both configurations answered."""
    by_question: dict[str, dict[str, float]] = {}
    for row in rows:
        by_question.setdefault(row["id"], {})[row["config"]] = float(row[key])
    return [(q[a], q[b]) for q in by_question.values() if a in q and b in q]


def head_to_head(rows: list[dict[str, Any]], a: str, b: str, key: str) -> tuple[int, int, int]:
    """Over the questions both configurations answered: (a better, b better, tied) on `key`."""
    pairs = _pairs(rows, a, b, key)
    return (
        sum(1 for x, y in pairs if x > y),
        sum(1 for x, y in pairs if x < y),
        sum(1 for x, y in pairs if x == y),
    )


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
    theirs = {row["id"] for row in rows if row["config"] == b}
    return parts, [row for row in rows if row["config"] == a and row["id"] in theirs]


def paired(rows: list[dict[str, Any]], a: str, b: str, key: str) -> tuple[float, float, float]:
    """Over the questions both configurations answered: the mean of `a`'s `key` minus `b`'s,
    with its 95 % paired-bootstrap interval (`bench.stats.paired_interval`)."""
    pairs = _pairs(rows, a, b, key)
    return paired_interval([x for x, _ in pairs], [y for _, y in pairs])


def _interval(rows: list[dict[str, Any]], a: str, b: str) -> str:
    parts = []
    for key, label in (("f1", "answer F1"), ("sp_f1", "supporting-fact F1")):
        mean, low, high = paired(rows, a, b, key)
        parts.append(f"{label} {mean:+.3f} ({low:+.3f} to {high:+.3f})")
    return "; ".join(parts)


def _head_to_head_lines(multihop: dict[str, Any]) -> list[str]:
    parts, mine = _compared(multihop, "mcts", "chain")
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
        "Question by question, the default search against the single chain — "
        + "; ".join(parts)
        + ". Mean difference, default minus chain, with its 95 % paired-bootstrap interval "
        f"over the questions: {_interval(rows, 'mcts', 'chain')}. From the runs' ends: the "
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
    by_question: dict[str, dict[str, dict[str, Any]]] = {}
    for row in multihop["rows"]:
        by_question.setdefault(row["id"], {})[row["config"]] = row
    return [(q["chain"], q["mcts"]) for q in by_question.values() if "chain" in q and "mcts" in q]


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
            f'`{mine["id"][:8]}` (the chain "{chain["predicted"]}", F1 {chain["f1"]:.2f}; '
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
    traced = [r for r in multihop["rows"] if r["config"] == "mcts" and "branched" in r]
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


def _reserve_lines(multihop: dict[str, Any]) -> list[str]:
    """`reserve` (the default search reviving pruned candidates) against the default, over the
    questions both have: what the revived paths and corroboration changed."""
    parts, mine = _compared(multihop, "reserve", "mcts")
    if not parts:
        return []
    default = {r["id"]: r for r in multihop["rows"] if r["config"] == "mcts"}
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
        f"{_interval(multihop['rows'], 'reserve', 'mcts')}. A revived path ran to an answer "
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
    """The default and the chain run again (`mcts-again`, `chain-again`) on questions where
    the two had differed: whether each difference holds on a second run of both, or was the
    luck of one run's samples."""
    by_question: dict[str, dict[str, dict[str, Any]]] = {}
    for row in multihop["rows"]:
        by_question.setdefault(row["id"], {})[row["config"]] = row
    names = ("chain", "mcts", "chain-again", "mcts-again")
    again = [q for q in by_question.values() if all(name in q for name in names)]
    if not again:
        return []

    def sign(q: dict[str, dict[str, Any]], suffix: str = "") -> int:
        mine, chain = float(q["mcts" + suffix]["f1"]), float(q["chain" + suffix]["f1"])
        return (mine > chain) - (mine < chain)

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
            f"where the default had {label} ({len(group)}): its answer F1 {f1['mcts']:.2f} then "
            f"{f1['mcts-again']:.2f}, the chain's {f1['chain']:.2f} then "
            f"{f1['chain-again']:.2f}; {held} {held_as}, {flipped} turned into {other_as} and "
            f"{len(group) - held - flipped} into a tie"
        )
    ids = ",".join(sorted(q["mcts"]["id"][:8] for q in again))
    text = (
        f"Run again: the default and the chain a second time on {len(again)} questions "
        f"(`--ids {ids} --configs chain-again,mcts-again`, the same parameters, the local "
        "model sampling with its fixed seed at the roles' temperatures, 0.2 to 0.8). Answers "
        "that changed: the default's on "
        f"{changed('mcts')}, the chain's on {changed('chain')}. "
    )
    said = "; ".join(groups)
    text += said[:1].upper() + said[1:] + "."
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


def wide_lines(multihop: dict[str, Any]) -> list[str]:
    """The seed notebook's breadth and `beam` against the default, question by question."""
    lines = []
    for name, what in (
        ("breadth", "the seed notebook's breadth: no evaluator, no pruning, 8 nodes a layer"),
        ("beam", "the evaluator's best 2 nodes a layer"),
    ):
        parts, mine = _compared(multihop, name, "mcts")
        if not parts:
            continue
        default = {r["id"]: r for r in multihop["rows"] if r["config"] == "mcts"}
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


def _configurations(multihop: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The configurations reported, in the page's order, and those of them read back
    (`--measured`) rather than run."""
    names = [name for name in ORDER if name in multihop["totals"]]
    measured = [name for name in names if name in multihop["config"].get("measured", [])]
    return names, measured


def command(multihop: dict[str, Any], results: str | None = None) -> str:
    """The command line that made `multihop`: the local model named in the environment (as
    `LATS_LOCAL_MODEL`, the setting `--model local` reads), its results directory if not the
    default one."""
    config = multihop["config"]
    names, measured = _configurations(multihop)
    ran = [name for name in names if name not in measured]
    detail = str(multihop.get("model_detail", ""))
    local = re.fullmatch(r"local \((.+)\)", detail)
    env = f"LATS_LOCAL_MODEL={local.group(1)} " if local else ""
    return (
        f"{env}.venv/bin/python -m bench --only multihop --limit {config['questions']} "
        f"--model {multihop.get('model', 'local')} --configs {','.join(ran)} "
        f"--budget {config['max_llm_calls']}"
        + (f" --measured {','.join(measured)}" if measured else "")
        + (f" --results {results}" if results else "")
    )


def table(multihop: dict[str, Any], results: str | None = None) -> list[str]:
    """The command, the data and model, and one row a configuration."""
    config = multihop["config"]
    totals = multihop["totals"]
    names, measured = _configurations(multihop)
    lines = [
        "```sh",
        command(multihop, results),
        "```",
        "",
        f"Data: `{config['data']}` ({config['questions']} questions). Model: "
        f"{multihop.get('model_detail', multihop.get('model', '?'))}."
        + (
            f" The rows of {', '.join(f'`{m}`' for m in measured)} are an earlier run's, "
            "read back, which may have been made by other code (the commits are below): "
            "compare their answers with the others' as of different runs."
            if measured
            else ""
        ),
        "",
        "| configuration | questions | answer EM | answer F1 | SP precision | SP recall | SP F1 "
        "| joint F1 | groundedness | citations (misverified) | model calls | tokens "
        "| gold paragraph seen | median wall |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        t = totals[name]
        lines.append(
            f"| {name} | {t['n']} | {_f(t['em'])} | {_f(t['f1'])} | {_f(t['sp_precision'])} | "
            f"{_f(t['sp_recall'])} | {_f(t['sp_f1'])} | {_f(t['joint_f1'])} | "
            f"{_f(t['groundedness'])} | {t['citations']} ({t['misverified']}) | "
            f"{t['llm_calls']:.1f} | {t['tokens']:.0f} | {_f(t['gold_seen'])} | "
            f"{t['wall_s']:.0f} s |"
        )
    lines += code_lines(multihop)
    fewer = [
        f"`{name}` {totals[name]['n']}" for name in names if totals[name]["n"] < config["questions"]
    ]
    if fewer:
        lines += [
            "",
            f"Rows over fewer questions ({', '.join(fewer)}) are over some of them only (the "
            "data's first ones, or those chosen with `--ids`): compare them with the default "
            "over the same questions, as below, not with its row.",
        ]
    return lines


def code_lines(multihop: dict[str, Any]) -> list[str]:
    """Which code made the rows (the commit each row records; rows from before rows recorded
    it say nothing), per configuration."""
    counts: dict[str, dict[str, int]] = {}
    for row in multihop.get("rows", []):
        by_code = counts.setdefault(str(row.get("code", "")), {})
        by_code[row["config"]] = by_code.get(row["config"], 0) + 1
    if not counts:
        return []
    parts = [
        (f"`{code}`" if code else "not recorded (earlier runs)")
        + ": "
        + ", ".join(f"{name} {n}" for name, n in sorted(by_config.items(), key=_order))
        for code, by_config in sorted(counts.items(), key=lambda item: not item[0])
    ]
    return ["", "Rows by the commit of the code that made them: " + "; ".join(parts) + "."]


def _order(item: tuple[str, int]) -> int:
    return ORDER.index(item[0]) if item[0] in ORDER else len(ORDER)


def more_section(multihop: dict[str, Any], results: str) -> list[str]:
    """The same benchmark with another model, its results kept in their own directory."""
    return [
        f"### The same questions with {multihop.get('model_detail', multihop.get('model'))}",
        "",
        *table(multihop, results),
        *_head_to_head_lines(multihop),
        *again_lines(multihop),
        *wide_lines(multihop),
        "",
    ]


def section(multihop: dict[str, Any], more: Sequence[tuple[dict[str, Any], str]] = ()) -> list[str]:
    """The table, the command that made it, and how the published numbers differ; then the
    same benchmark with the other models of `more` (results, their directory)."""
    lines = [
        "## 11. Multi-hop questions (HotpotQA, distractor setting)",
        "",
        "Real questions with known answers: each one's ten Wikipedia paragraphs (two gold, eight "
        "distractors) are its only tool (`tools/local_corpus.py`, BM25, a paragraph a passage); "
        "the real engine runs every configuration at one call budget, and answers are scored "
        "with HotpotQA's official normalisation. The supporting facts an answer predicts are "
        "the sentences its verified citations quote, so supporting-fact scores measure "
        "grounding as much as retrieval. `misverified` counts verified citations whose words "
        "an independent check (nine in ten of the quote's words, in order, in the named "
        "paragraph) does not find: the goal is 0. To read why an answer came out as it did, "
        "`--traces DIR` writes each run's whole tree (every step, tool call, evidence item, "
        "answer, grounding and score, and the chosen path) beside its question, and `--ids` "
        "runs chosen questions only.",
        "",
        *table(multihop),
    ]
    lines += _head_to_head_lines(multihop)
    lines += again_lines(multihop)
    lines += repeat_lines(multihop)
    lines += wide_lines(multihop)
    lines += _reserve_lines(multihop)
    lines += ["", *(line for other, results in more for line in more_section(other, results))]
    reference = ", ".join(f"{name} {em:.2f}" for name, em in REFERENCE)
    lines += [
        f"Published points of reference (the LATS paper's HotpotQA table, exact match): "
        f"{reference}. Their setting differs: gpt-3.5, live Wikipedia search over the whole "
        "encyclopaedia (not ten given paragraphs), 100 questions, and LATS stopped its search "
        "at the first answer matching the gold one, an oracle a service does not have. Here "
        "the model is the one named above, the retrieval is easier (the gold paragraphs are "
        "in every corpus) and nothing knows the gold answer.",
        "",
    ]
    return lines
