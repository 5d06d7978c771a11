"""The multi-hop benchmark's section of docs/benchmarks.md, from `results/multihop.json` (and
the same benchmark's results with other models, data sets or settings, below it)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bench.multihop_across import across_lines
from bench.multihop_candidates import (
    candidate_lines,
    chosen_lines,
    weakness_lines,
    wrong_first_lines,
)
from bench.multihop_corpus import LABELS
from bench.multihop_data import DATASETS, dataset_name
from bench.multihop_rows import FIRST_ROWS
from bench.multihop_versus import (
    ORDER,
    again_lines,
    against,
    agreement_lines,
    anytime_lines,
    chain_of,
    default_of,
    head_to_head_lines,
    repeat_lines,
    reserve_lines,
    run_as,
    wide_lines,
)
from bench.readings_report import readings_lines

# Published points of reference: the LATS paper's HotpotQA table (Zhou et al., ICML 2024),
# gpt-3.5 with live Wikipedia search, 100 questions, exact match.
REFERENCE = (
    ("CoT", 0.34),
    ("ReAct", 0.32),
    ("Reflexion", 0.51),
    ("ToT", 0.55),
    ("LATS", 0.71),
)
# What the page calls the tool of each setting.
_TOOL = {
    "distractor": "distractor paragraphs as the only tool",
    "pooled": "one index of every question's paragraphs as the only tool",
}


def _f(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "—"


def _setting(multihop: dict[str, Any]) -> str:
    return str(multihop["config"].get("corpus", "distractor"))


def _dataset(multihop: dict[str, Any]) -> str:
    config = multihop["config"]
    return str(config.get("dataset") or dataset_name(config.get("data", "")))


def headline(multihop: dict[str, Any]) -> str:
    """One sentence for the top of the page (and the README): default against chain."""
    totals = multihop["totals"]
    default, chain = default_of(multihop), chain_of(multihop)
    mine, theirs = totals.get(default), totals.get(chain)
    n = multihop["config"]["questions"]
    if mine is None or theirs is None:
        return ""
    return (
        f"On {n} {_dataset(multihop)} questions ({_TOOL[_setting(multihop)]}, "
        f"{multihop.get('model_detail', multihop.get('model', 'the model'))}, "
        f"{multihop['config']['max_llm_calls']} model "
        f"calls each) the default search scores answer F1 {mine['f1']:.2f} and "
        f"supporting-fact F1 {mine['sp_f1']:.2f} against {theirs['f1']:.2f} and "
        f"{theirs['sp_f1']:.2f} {against(chain)}; {mine['misverified'] + theirs['misverified']} "
        f"of {mine['citations'] + theirs['citations']} verified citations failed an "
        "independent re-check."
    )


def _configurations(multihop: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The configurations reported, in the page's order, and those of them read back
    (`--measured`) rather than run."""
    names = [name for name in ORDER if name in multihop["totals"]]
    read_back = set(multihop["config"].get("measured", []))
    measured = [name for name in names if run_as([name])[0] in read_back]
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
    data = _data_option(str(config.get("data", "")))
    setting = _setting(multihop)
    return (
        f"{env}.venv/bin/python -m bench --only multihop"
        + (f" --data {data}" if data else "")
        + (f" --corpus {setting}" if setting != "distractor" else "")
        + _questions_option(config)
        + f" --model {multihop.get('model', 'local')} --configs {','.join(run_as(ran))} "
        f"--budget {config['max_llm_calls']}"
        + (f" --measured {','.join(run_as(measured))}" if measured else "")
        + (f" --results {results}" if results else "")
    )


def _which(config: dict[str, Any]) -> str:
    """How many questions, and which of the file where they are not its first ones."""
    n, offset = config["questions"], int(config.get("offset") or 0)
    if config.get("ids") or not offset:
        return f"{n} questions"
    return f"{n} questions, numbers {offset + 1} to {offset + n} of the file"


def _later(multihop: dict[str, Any]) -> int:
    """Where the results' questions start in the file (0: its first ones, or chosen ids)."""
    config = multihop.get("config", {})
    return 0 if config.get("ids") else int(config.get("offset") or 0)


def _questions_option(config: dict[str, Any]) -> str:
    """Which questions the run took: its `--ids` where it was given them, else how many from
    where."""
    if config.get("ids"):
        return f" --ids {','.join(config['ids'])}"
    offset = int(config.get("offset") or 0)
    return (f" --offset {offset}" if offset else "") + f" --limit {config['questions']}"


def _data_option(data: str) -> str:
    """What `--data` was given for the file `data` (as the results show it): the vendored
    set's name, nothing for the default one, else the file."""
    for name, path in DATASETS.items():
        if data and path.as_posix().endswith(data):
            return "" if name == "hotpotqa" else name
    return data


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
        f"Data: `{config['data']}` ({_which(config)}; {_dataset(multihop)}, "
        f"{_setting_phrase(multihop)}). Model: "
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
    lines += code_lines(multihop) + wall_lines(multihop)
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


def _setting_phrase(multihop: dict[str, Any]) -> str:
    """The setting as the table's caption says it."""
    if _setting(multihop) == "distractor":
        return "distractor setting: each question searches its own paragraphs"
    pool = multihop["config"].get("pool") or {}
    size = f" of {pool['documents']} paragraphs" if "documents" in pool else ""
    return (
        f"open corpus: every question searches one pool{size}, every paragraph of every "
        "question in the file, each once"
    )


def _heading(multihop: dict[str, Any]) -> str:
    """Which data set and setting a table is of, as its heading says them."""
    return f"{_dataset(multihop)}, {LABELS[_setting(multihop)]}"


def wall_lines(multihop: dict[str, Any]) -> list[str]:
    """The compute the rows took: each configuration's runs' seconds summed (a run giving two
    rows, `FIRST_ROWS`, counted once, under its own name)."""
    walls: dict[str, list[float]] = {}
    for row in multihop.get("rows", []):
        if row["config"] not in FIRST_ROWS.values() and "wall_s" in row:
            walls.setdefault(row["config"], []).append(float(row["wall_s"]))
    if not walls:
        return []
    parts = [
        f"{name} {sum(w) / 3600:.1f} h over {len(w)} runs"
        for name, w in sorted(walls.items(), key=_order)
    ]
    return [
        "",
        "Wall, each run's seconds summed: " + "; ".join(parts) + " (the benchmark's processes "
        "shared the machine, a run in each, so these hours overlap).",
    ]


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


def _chosen(multihop: dict[str, Any]) -> list[str]:
    default = default_of(multihop)
    first = FIRST_ROWS.get(default, "")
    return chosen_lines(multihop, default, first) + wrong_first_lines(multihop, default, first)


def _order(item: tuple[str, Any]) -> int:
    return ORDER.index(item[0]) if item[0] in ORDER else len(ORDER)


def more_section(
    multihop: dict[str, Any], results: str, main: dict[str, Any] | None = None
) -> list[str]:
    """The same benchmark with another model, data set or setting, or on other questions, its
    results kept in their own directory; `main` is the page's own results."""
    model = multihop.get("model_detail", multihop.get("model"))
    main = main or multihop
    which = f", {_which(multihop['config'])}" if _later(multihop) else ""
    same = (_heading(multihop), _later(multihop)) == (_heading(main), _later(main))
    title = (
        f"The same questions with {model}" if same else f"{_heading(multihop)}{which}, with {model}"
    )
    return [
        f"### {title}",
        "",
        *table(multihop, results),
        *head_to_head_lines(multihop),
        *anytime_lines(multihop),
        *candidate_lines(multihop, default_of(multihop)),
        *weakness_lines(multihop, default_of(multihop)),
        *_chosen(multihop),
        *again_lines(multihop),
        *agreement_lines(multihop),
        *wide_lines(multihop),
        "",
    ]


def section(
    multihop: dict[str, Any],
    more: Sequence[tuple[dict[str, Any], str]] = (),
    readings: Sequence[tuple[dict[str, Any], str]] = (),
) -> list[str]:
    """The table, the command that made it, and how the published numbers differ; then the
    same benchmark with the other models of `more` (results, their directory), and first
    paths read again (`readings`: results, their file)."""
    main = _heading(multihop)
    lines = [
        f"## 11. Multi-hop questions ({main})",
        "",
        "Real questions with known answers: each one's own Wikipedia paragraphs (HotpotQA's "
        "ten: two gold, eight distractors) are its only tool (`tools/local_corpus.py`, BM25, a "
        "paragraph a passage); the real engine runs every configuration at one call budget, "
        "and answers are scored "
        "with HotpotQA's official normalisation. In the open-corpus setting (`--corpus "
        "pooled`) every question searches instead one index of every paragraph of every "
        "question in the data file, each once, in one collection of the embedded store "
        "searched with the `documents` tool, as a user's collection is: a query can miss, and "
        "another query matters. "
        "Each table is of one data set and one setting, and rows of two settings are never "
        "compared. MuSiQue's answer aliases count as right answers (the best of them scores). "
        "One run of the default search (`anytime`) gives two rows: its final answer and, as "
        "`chain@first`, its first verified answer, which its greedy first path gives as the "
        "single chain would. The supporting facts an answer predicts are "
        "the sentences its verified citations quote, so supporting-fact scores measure "
        "grounding as much as retrieval. `misverified` counts verified citations whose words "
        "an independent check (nine in ten of the quote's words, in order, in the named "
        "paragraph) does not find: the goal is 0. To read why an answer came out as it did, "
        "`--traces DIR` writes each run's whole tree (every step, tool call, evidence item, "
        "answer, grounding and score, and the chosen path) beside its question, and `--ids` "
        "runs chosen questions only. The benchmark makes a run's blocking calls (the local "
        "model's among them) inline, one at a time in the order the engine reaches them; "
        "`anytime-threads` is the default run as the service runs it, each in a worker thread.",
        "",
        *table(multihop),
    ]
    lines += head_to_head_lines(multihop)
    lines += anytime_lines(multihop)
    lines += candidate_lines(multihop, default_of(multihop))
    lines += weakness_lines(multihop, default_of(multihop))
    lines += _chosen(multihop)
    lines += again_lines(multihop)
    lines += repeat_lines(multihop)
    lines += agreement_lines(multihop)
    lines += wide_lines(multihop)
    lines += reserve_lines(multihop)
    lines += [
        "",
        *(line for other, results in more for line in more_section(other, results, multihop)),
    ]
    lines += across_lines([multihop, *(other for other, _ in more)])
    lines += [line for data, where in readings for line in readings_lines(data, where)]
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
