"""The search-quality section of docs/benchmarks.md (benchmark 6), from results/quality.json."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

# What each strategy row means, for the reader of the tables.
MEANING = {
    "mcts": "the tree search `mcts` (the default before `anytime`), `evaluate=true` (candidate "
    "scores as priors, pruning; the progress call only where it can change the search)",
    "anytime": "the default: `anytime`, the single chain first, alternatives only at weak steps, "
    "the first answer replaced only by agreeing, verified paths",
    "mcts-noeval": "`mcts` with `evaluate=false` (no scores, no pruning, no evaluator)",
    "beam": "`strategy=beam` (width 2)",
    "dfs": "`strategy=dfs`",
    "chain": "single chain: `max_candidates=1` and `reserve=false`, so it never branches and "
    "never revives (the seed notebook's default)",
    "breadth": "seed breadth: `beam`, `beam_width=8`, `evaluate=false`, `min_score=0` "
    "(all proposals kept, shallowest first in proposal order, no evaluator, no pruning)",
}


def _rel(target: Path, doc: Path) -> str:
    return os.path.relpath(target, doc.parent)


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %"


def _table(q: dict[str, Any], cell: Any, total: Any, strategies: list[str], bold: str) -> list[str]:
    lines = [
        "| structure | " + " | ".join(f"`{s}`" for s in strategies) + " |",
        "| --- | " + " | ".join("---" for _ in strategies) + " |",
    ]
    for structure, by in q["cells"].items():
        budget = q["config"]["structures"][structure]["max_llm_calls"]
        lines.append(
            f"| {structure} ({budget} calls) | "
            + " | ".join(cell(by[s]) for s in strategies)
            + " |"
        )
    lines.append(
        f"| **{bold}** | " + " | ".join(f"**{total(q['totals'][s])}**" for s in strategies) + " |"
    )
    return lines


def diagnosis(q: dict[str, Any], structure: str, strategy: str) -> str:
    """What the runs of `strategy` on `structure` did, from their rows: paths completed, steps
    run, how they stopped, and where the chosen answers came from."""
    rows = [r for r in q["rows"] if r["structure"] == structure and r["strategy"] == strategy]
    if not rows:
        return ""
    paths = sum(r["paths"] for r in rows) / len(rows)
    nodes = sum(r["nodes_run"] for r in rows) / len(rows)
    deepest = sum(r["deepest"] for r in rows) / len(rows)
    full = q["config"]["structures"][structure]["max_depth"]  # steps of a path to a leaf
    stops = Counter(r["stop_reason"] for r in rows).most_common(1)[0][0]
    partial = sum(1 for r in rows if r["paths"] == 0)
    text = (
        f"{paths:.1f} completed paths and {nodes:.1f} steps run per search, its longest path "
        f"{deepest:.1f} steps (a complete one has {full}), stopped by `{stops}`"
    )
    profiles = [r["per_depth"] for r in rows if "per_depth" in r]
    if profiles:
        # Where the steps went, level by level: breadth or depth.
        levels = max(len(p) for p in profiles)
        means = [sum(p[d] for p in profiles if d < len(p)) / len(profiles) for d in range(levels)]
        while len(means) > 1 and means[-1] == 0:
            means.pop()
        text += " (steps per depth " + " / ".join(f"{m:.1f}" for m in means) + ")"
    if partial:
        text += f"; {partial} of {len(rows)} searches completed no path at all"
    answers = [(r["best_key"], a) for r in rows for a in r["answered"]]
    if answers:
        # The first step toward the best answer: did the search's answers come from there?
        toward = sum(1 for best, a in answers if a.split(".")[:2] == best.split(".")[:2])
        text += (
            f"; {toward} of its {len(answers)} answers lay past the first step toward the best one"
        )
    return text


FATES = {
    "answered": "answered, and the vote took another",
    "run": "run, but its path got no answer before the budget ran out",
    "pending": "proposed, and still waiting to run when the budget ran out",
    "pruned": "proposed, and pruned on its candidate score",
    "unproposed": "never proposed: the search did not expand its parent",
}


def _misses(q: dict[str, Any], structure: str, strategy: str) -> str:
    """From the failed searches' trees: what became of the best answer's step, and how the
    replanner's candidate score ranked it among its siblings."""
    rows = [
        r
        for r in q["rows"]
        if r["structure"] == structure and r["strategy"] == strategy and not r["success"]
    ]
    if not rows or "best_fate" not in rows[0]:
        return ""
    fates = Counter(r["best_fate"] for r in rows).most_common()
    ranks = Counter(r["best_rank"] for r in rows if r["best_rank"] is not None)
    searches = f"{len(rows)} failed search{'es' if len(rows) > 1 else ''}"
    text = f" In its {searches}, the best answer's step was " + "; ".join(
        f"{FATES.get(f, f)} ({n})" for f, n in fates
    )
    if ranks:
        text += "; the replanner's score had ranked it " + ", ".join(
            f"{_ordinal(rank)} of its siblings ({n})" for rank, n in sorted(ranks.items())
        )
    return text + "."


def _ordinal(n: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(n, f"{n}th")


def section(q: dict[str, Any], doc: Path, results: Path) -> list[str]:
    """Benchmark 6's markdown lines."""
    cfg = q["config"]
    strategies = list(cfg["strategies"])
    default = cfg["default"]
    seeds = len(cfg["seeds"])
    lines = [
        "## 6. Search quality",
        "",
        "**What it measures.** Whether the search finds good answers, not how fast: planted-"
        "value worlds (`testkit/planted_world.py`) searched by the real engine (LangGraph "
        "graph, scheduler, evaluator, vote, in-memory checkpointer) with scripted models "
        "(`testkit/planted.py`). Every step the replanner can propose has a hidden value; the "
        "executor's result quotes evidence of it (`relevance ~0.72; answer confidence ~0.41`, "
        "a little noise); the evaluator and the replanner's own candidate scores read the "
        "hidden value with the structure's noise and bias; every complete path has a hidden "
        "answer quality (a leaf's value). The responder and the voter read only their prompts "
        "(the voter picks the candidate whose evidence quotes the highest answer confidence), "
        "never the hidden numbers. Everything is seeded and clock-free: the same seed gives "
        "the same table. Every model call goes through the production call policy at the "
        "default settings (`testkit/policy_models.py` `ThroughPolicy`: run budgets per "
        "attempt, the shared adaptive limiter, timeouts, retries), so calls are counted and "
        "refused as in a user's run.",
        "",
        f"**Structures** (each with one budget for every strategy; {seeds} seeds each, so "
        f"{seeds} different worlds of the same shape):",
        "",
        "| structure | shape | `max_llm_calls` | `max_depth` | judges' noise (sd) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, s in cfg["structures"].items():
        j = s["judges"]
        lines.append(
            f"| {name} | {s['about']} | {s['max_llm_calls']} | {s['max_depth']} | "
            f"evaluator {j['evaluator_noise']}, replanner {j['replanner_noise']} |"
        )
    fixed = ", ".join(f"`{k}={v}`" for k, v in cfg["fixed"].items())
    lines += [
        "",
        "**Strategies.** Default run parameters except the structure's budget, " + fixed + " "
        "(so the call budget, not the number of answers, stops every search), and:",
        "",
    ]
    lines += [f"- `{s}`: {MEANING.get(s, cfg['strategies'][s])}" for s in strategies]
    lines += [
        "",
        "**Metrics.** *success*: the voted answer is the best one reachable in the world "
        "(highest hidden quality within `max_depth`), or within "
        f"{cfg.get('tolerance', 0)} of it (closer than the voter's evidence can tell); "
        "*regret*: that best quality minus the chosen answer's; *calls*: model calls the run "
        "made; *serial*: its critical path in calls (the plan, then along the longest "
        "answered path each step and expansion, counting calls that were in flight together "
        "once, then the answer and the vote); *wall*: seconds, with scripted replies "
        "(orchestration only).",
        "",
        "Success rate (mean regret):",
        "",
    ]
    lines += _table(
        q,
        lambda c: f"{c['success']:.2f} ({c['regret']:.3f})",
        lambda t: f"{t['success']:.2f} ({t['regret']:.3f})",
        strategies,
        "all",
    )
    lines += ["", "Model calls / serial calls per search (mean):", ""]
    lines += _table(
        q,
        lambda c: f"{c['llm_calls']:.0f} / {c['serial_calls']:.0f}",
        lambda t: f"{t['llm_calls']:.0f} / {t['serial_calls']:.0f}",
        strategies,
        "all",
    )
    walls = [c["wall_s"] for by in q["cells"].values() for c in by.values()]
    lines += [
        "",
        f"Wall per search: {min(walls):.2f}-{max(walls):.2f} s (medians per cell; scripted "
        "replies, so this is the engine's own overhead).",
        "",
        f"![quality]({_rel(results / 'quality.png', doc)})",
        "",
        "**Success against the budget.** The same worlds (seeds "
        f"{', '.join(str(s) for s in cfg['curve_seeds'])}), every structure, `max_llm_calls` "
        f"set to {', '.join(str(b) for b in cfg['curve_budgets'])} for every strategy:",
        "",
        "| strategy | " + " | ".join(f"{b} calls" for b in cfg["curve_budgets"]) + " |",
        "| --- | " + " | ".join("---" for _ in cfg["curve_budgets"]) + " |",
    ]
    for strategy in strategies:
        points = q["curve"].get(strategy, [])
        lines.append(
            f"| `{strategy}` | " + " | ".join(f"{p['success']:.2f}" for p in points) + " |"
        )
    lines += ["", f"![quality curve]({_rel(results / 'quality_curve.png', doc)})", ""]
    lines += parallel_section(q)
    lines += _at_defaults(q, strategies)
    lines += _reading(q, default, strategies)
    return lines


def _seeds(seeds: list[int]) -> str:
    """`1-16` for a run of consecutive seeds, else the list."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


RULES = {
    "unobserved": "unobserved visits (WU-UCT)",
    "virtual_loss": "virtual loss",
}


def parallel_section(q: dict[str, Any]) -> list[str]:
    """The parallel grid: the default strategy at each `max_concurrency`, under each rule for
    work in flight, side by side, at the suite's budgets and at the service's defaults; and the
    most slots that keep concurrency 1's success in both."""
    p = q.get("parallel")
    if not p or "suite" not in p:
        return []
    cfg = q["config"]
    rule = cfg["default_in_flight_rule"]
    tolerance = cfg["parallel_tolerance"]
    lines = [
        "**Parallel picks.** "
        f"`{cfg['default']}` at each `max_concurrency` under each rule for the work in flight "
        "(`in_flight_rule`): *unobserved* (WU-UCT) counts it as visits in the exploration "
        "term only, Q + c·P·√(N+O)/(1+n+o); *virtual loss* as visits of value 0, which also "
        f"lower Q (the default is {RULES.get(rule, rule)}). Every structure, seeds "
        f"{_seeds(cfg['parallel_seeds'])} "
        f"({len(cfg['parallel_seeds']) * len(q['config']['structures'])} worlds a cell), "
        "first at the structures' budgets as in the suite, then at the service's defaults "
        "(`max_paths` 4, 150 calls, which stop a search once four paths are done). Success "
        "(mean regret), model calls / serial calls, median wall per search (scripted replies: "
        "the orchestration only; what slots buy in wall at real latencies is benchmark 1's):",
        "",
    ]
    grids = [
        (key, title, p[key])
        for key, title in (("suite", "at the suite's budgets"), ("defaults", "at the defaults"))
        if p.get(key) and p[key]["cells"]
    ]
    for _, title, grid in grids:
        lines += _parallel_table(cfg, grid, title)
    said = [
        f"{RULES.get(r, r)}: "
        + ", ".join(f"{grid['most_slots'][r]} {title}" for _, title, grid in grids)
        for r in cfg["in_flight_rules"]
        if all(grid["most_slots"].get(r) is not None for _, _, grid in grids)
    ]
    if said:
        lines += [
            f"The most slots whose success stays within {tolerance} of concurrency 1's, under "
            + "; under ".join(said)
            + f". The default is `max_concurrency` {cfg['default_concurrency']} with "
            f"{RULES.get(rule, rule)}.",
            "",
        ]
    return lines


def _parallel_table(cfg: dict[str, Any], grid: dict[str, Any], title: str) -> list[str]:
    rules = cfg["in_flight_rules"]
    by = {(c["in_flight_rule"], c["concurrency"]): c for c in grid["cells"]}
    lines = [
        f"| `max_concurrency` ({title}) | "
        + " | ".join(f"{RULES.get(r, r)}: success (regret) | calls / serial | wall" for r in rules)
        + " |",
        "| --- | " + " | ".join("--- | --- | ---" for _ in rules) + " |",
    ]
    for conc in cfg["concurrency"]:
        cells: list[str] = []
        for rule in rules:
            c = by.get((rule, conc))
            cells += (
                [
                    f"{c['success']:.2f} ({c['regret']:.3f})",
                    f"{c['llm_calls']:.0f} / {c['serial_calls']:.1f}",
                    f"{c['wall_s']:.2f} s",
                ]
                if c
                else ["-", "-", "-"]
            )
        lines.append(f"| {conc} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _at_defaults(q: dict[str, Any], strategies: list[str]) -> list[str]:
    d = q.get("at_defaults")
    if not d or not d["totals"]:
        return []
    seeds = ", ".join(str(s) for s in q["config"]["defaults_seeds"])
    lines = [
        "**At the service's defaults** (`max_paths` 4, `max_llm_calls` 150, `max_depth` 6, "
        f"nothing fixed by the suite; every structure, seeds {seeds}): what a user gets per "
        "search, and what it costs.",
        "",
        "| strategy | success | mean answer quality | regret | calls | serial calls |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in strategies:
        t = d["totals"].get(s)
        if t is not None:
            lines.append(
                f"| `{s}` | {t['success']:.2f} | {t['quality']:.3f} | {t['regret']:.3f} | "
                f"{t['llm_calls']:.0f} | {t['serial_calls']:.0f} |"
            )
    return [*lines, ""]


def _reading(q: dict[str, Any], default: str, strategies: list[str]) -> list[str]:
    lines = ["**Reading.**", ""]
    for structure, by in q["cells"].items():
        best = max(strategies, key=lambda s: (by[s]["success"], -by[s]["regret"]))
        if by[default]["success"] >= by[best]["success"]:
            continue
        lines.append(
            f"- {structure}: `{default}` succeeds in {_pct(by[default]['success'])} against "
            f"{_pct(by[best]['success'])} for `{best}`. `{default}`: "
            f"{diagnosis(q, structure, default)}; `{best}`: {diagnosis(q, structure, best)}."
            + _misses(q, structure, default)
        )
    lines += [""]
    return lines


def closing(q: dict[str, Any]) -> list[str]:
    """The quality targets of the closing note: met or missed, with the numbers."""
    totals = q["totals"]
    default = q["config"]["default"]
    mine = totals[default]
    others = [s for s in totals if s != default]
    beaten = [s for s in others if mine["success"] > totals[s]["success"]]
    n_structures = len(q["cells"])
    need = max(1, n_structures - 1)
    lines = [
        "- Quality, the default beats every other strategy at equal budgets: "
        + (
            "**met**"
            if len(beaten) == len(others)
            else f"**missed** (it beats {', '.join(f'`{s}`' for s in beaten) or 'none'})"
        )
        + f": success {mine['success']:.2f} against "
        + ", ".join(f"`{s}` {totals[s]['success']:.2f}" for s in others)
        + ".",
        f"- Quality, the default succeeds on at least {need} of the {n_structures} structures "
        f"(in at least half the seeds): "
        + ("**met**" if len(mine["solved"]) >= need else "**missed**")
        + f" ({len(mine['solved'])}: {', '.join(mine['solved']) or 'none'}).",
    ]
    if "breadth" in totals:
        b = totals["breadth"]
        lines.append(
            "- Quality, the default beats the seed-breadth baseline on the suite: "
            + ("**met**" if mine["success"] > b["success"] else "**missed**")
            + f" ({mine['success']:.2f} with {mine['llm_calls']:.0f} calls against "
            f"{b['success']:.2f} with {b['llm_calls']:.0f})."
        )
    return lines


def headline(q: dict[str, Any]) -> str:
    """One bullet for "What the numbers mean for a user": the default against the baselines."""
    totals = q["totals"]
    default = q["config"]["default"]

    def say(strategy: str, label: str) -> str:
        t = totals[strategy]
        return f"{label} {_pct(t['success'])} with {t['llm_calls']:.0f} calls"

    rest = [
        say(s, label)
        for s, label in (
            ("mcts-noeval", "without its evaluator"),
            ("chain", "a single chain"),
            ("breadth", "the seed notebook's breadth"),
        )
        if s in totals
    ]
    return (
        f"- On the planted-value suite ({len(q['cells'])} structures, "
        f"{len(q['config']['seeds'])} worlds each, the same budget for every strategy), the "
        f"`{default}` search votes the best answer in "
        f"**{say(default, '').strip()}** on average" + (f"; {'; '.join(rest)}." if rest else ".")
    )
