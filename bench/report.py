"""Writes docs/benchmarks.md from the results JSON: what each benchmark measures, the machine,
the numbers (medians of the repetitions with min-max), the plots, and what they mean."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from bench import (
    documents_report,
    faults_report,
    load_report,
    multihop_across,
    multihop_report,
    quality_report,
    speed_report,
    storm_report,
    workers_report,
)
from bench import search as search_bench
from bench.stats import Spread, fmt


def _concurrency_head(concs: list[int]) -> list[str]:
    """The head of a table with a row per strategy and a column per concurrency."""
    columns = " | ".join(f"concurrency {c}" for c in concs)
    return [f"| strategy | {columns} |", "| --- | " + " | ".join("---" for _ in concs) + " |"]


def _rel(target: Path, doc: Path) -> str:
    return os.path.relpath(target, doc.parent)


def _machine(m: dict[str, Any], seconds: float | None) -> list[str]:
    pkgs = ", ".join(f"{k} {v}" for k, v in m["packages"].items())
    lines = [
        "## The machine",
        "",
        "| | |",
        "| --- | --- |",
        f"| CPU | {m['cpu']}, {m['cores']} cores |",
        f"| memory | {m['memory_gib']} GiB |",
        f"| OS, Python | {m['os']}, Python {m['python']} |",
        f"| packages | {pkgs} |",
    ]
    if "load_average" in m:
        lines.append(
            f"| load average | {m['load_average']} (1 minute, as the benchmarks ended; the "
            f"{m['cores']} cores are shared with other work) |"
        )
    if seconds is not None:
        lines.append(f"| `make bench` took | {seconds / 60:.1f} min (all of them, this run) |")
    lines += [
        "",
        "The machine is a busy 2-core box: other work runs beside the benchmarks, which is why "
        "every number is a median of repetitions with its min-max, why configurations that "
        "are compared run side by side in each repetition, and why comparisons are given as "
        "ratios measured side by side rather than as absolute figures from different days.",
        "",
    ]
    return lines


def _headline(search: dict[str, Any] | None, load: dict[str, Any] | None) -> list[str]:
    lines = ["## What the numbers mean for a user", ""]
    if search is not None:
        seq = search["sequential"]
        cp = search["critical_path"]
        paths = seq["paths"]["median"]
        lat = search["config"]["latency"]
        best = min(
            (c for c in cp["cells"] if c["concurrency"] >= cp["width"]),
            key=lambda c: c["wall_s"]["median"],
            default=None,
        )
        lines.append(
            f"- A {paths:.0f}-path search (3 candidates per node, model calls of {lat}) takes "
            f"**{seq['defaults_wall_s']['median']:.1f} s with the tree search's defaults** "
            f"({seq['defaults']['strategy']}, `max_concurrency` "
            f"{seq['defaults']['max_concurrency']}) instead of "
            f"**{seq['baseline_wall_s']['median']:.1f} s one call at a time** like the reference "
            f"notebook: {seq['speedup_per_path']['median']:.1f}x faster per completed path."
        )
        if seq.get("speedup_vs_plain", {}).get("n"):
            lines.append(
                f"- A plain plan-and-execute agent (one path, one call at a time) takes "
                f"{seq['plain_per_path_s']['median']:.1f} s for its one path on the same "
                f"latencies; the tree search gives {seq['speedup_vs_plain']['median']:.1f}x as "
                "many completed paths per second."
            )
        if best is not None:
            lines.append(
                f"- With `max_concurrency` ≥ the tree's width ({cp['width']}) it takes "
                f"{best['wall_s']['median']:.1f} s ({best['strategy']}, concurrency "
                f"{best['concurrency']}), {best['ratio']['median']:.2f}x its critical path: "
                "the wait is the chain of dependent model calls, not the orchestration."
            )
        calls = search["calls"]
        lines.append(
            f"- It costs {calls['llm_calls_per_path']['median']:.1f} model calls per completed "
            f"path ({calls['naive_calls_per_path']['median']:.1f} without batched sibling "
            f"scoring); asking the identical question again costs "
            f"{calls['cached_rerun']['llm_calls']['median']:.0f} calls and "
            f"{calls['cached_rerun']['wall_s']['median']:.2f} s."
        )
        per_path = 412 / 10
        lines.append(
            "- For scale: the reference notebook needed 412 s for 10 paths with Gemini, one "
            f"call at a time ({per_path:.0f} s per path). If that time were all model latency "
            f"on a tree like this one, the defaults would bring it to about "
            f"{per_path / seq['speedup_per_path']['median']:.0f} s per path."
        )
    if load is not None:
        peak = next(lv for lv in load["levels"] if lv["clients"] == load["peak_clients"])
        lines.append(
            f"- One server process on this 2-core machine completes at most about "
            f"**{peak['throughput_per_min']['median']:.0f} small runs per minute** (at "
            f"{peak['clients']} concurrent clients, the call policy's defaults: "
            f"{load_report.in_flight(load)} model calls in flight); events reach clients in "
            f"{peak['event_latency_p50_ms']['median']:.0f} ms at the median, "
            f"{peak['event_latency_p99_ms']['median']:.0f} ms at the 99th percentile."
        )
    lines.append("")
    return lines


def _critical(search: dict[str, Any], doc: Path, results: Path) -> list[str]:
    cp = search["critical_path"]
    cfg = search["config"]
    concs = cfg["concurrency"]
    lines = [
        "## 1. Critical path",
        "",
        "**What it measures.** How close a run's wall time comes to the fastest any schedule "
        "could achieve. The lower bound comes from the run's own events (`bench/critical.py`): "
        "a child step starts only after its parent's step ran and the parent was expanded, a "
        "path's answer only after its leaf was expanded, the vote only after every answer, so",
        "",
        "```",
        "bound = plan.seconds",
        "      + max over the voted paths of Σ_nodes (node_finished.seconds + candidates.seconds)",
        "      + the leaf's path_completed.seconds + vote.seconds",
        "wall  = done.ts - run_started.ts",
        "```",
        "",
        f"The tree (`bench/scenarios.py`, `wide`): a 3-step plan, the root gets 3 candidates, "
        f"each of those 2, so {cp['width']} completed paths at width {cp['width']}, 10 nodes "
        f"and 42 model calls; `max_paths` 6, `max_candidates` 3, everything else default "
        f"(evaluator on, beam width 2). In-process engine with the service's SQLite "
        f"checkpointer; {cfg['repetitions']} repetitions.",
        "",
        "wall ÷ bound, median (min-max):",
        "",
        *_concurrency_head(concs),
    ]
    for strategy in cfg["strategies"]:
        cells = {c["concurrency"]: c for c in cp["cells"] if c["strategy"] == strategy}
        lines.append(f"| {strategy} | " + " | ".join(fmt(cells[c]["ratio"]) for c in concs) + " |")
    lines += [
        "",
        "wall seconds, median (min-max), with the bound beside it:",
        "",
        *_concurrency_head(concs),
    ]
    for strategy in cfg["strategies"]:
        cells = {c["concurrency"]: c for c in cp["cells"] if c["strategy"] == strategy}
        lines.append(
            f"| {strategy} | "
            + " | ".join(
                f"{fmt(cells[c]['wall_s'], 1)} / {cells[c]['bound_s']['median']:.1f}" for c in concs
            )
            + " |"
        )
    met = [s for s, ok in cp["met"].items() if ok]
    missed = [s for s, ok in cp["met"].items() if not ok]
    verdict = (
        f"**Target (≤ {cp['target']} at concurrency ≥ the width {cp['width']}):** "
        + (f"met by {', '.join(met)}" if met else "met by none")
        + (f"; missed by {', '.join(missed)} (see the closing note)." if missed else ".")
    )
    default = _default_cell(search)
    if default is not None:
        ratio = default["ratio"]["median"]
        ok = "met" if ratio <= cp["target"] else "missed"
        verdict += (
            f" At the default concurrency ({default['concurrency']}): "
            f"{default['strategy']} {ratio:.2f}, **{ok}**"
            + (
                f": the tree is {cp['width']} wide, so the branches beyond the "
                f"{default['concurrency']} slots wait their turn. The default stays "
                f"{default['concurrency']} because more slots cost the search quality "
                "(docs/architecture.md, *Why `max_concurrency` defaults to 4*)."
                if ratio > cp["target"]
                else "."
            )
        )
    lines += [
        "",
        verdict,
        "",
        "At concurrency 1 the ratio is the total job time over the chain (the work cannot "
        "overlap); it falls as concurrency grows, until the tree's width. `dfs` and `mcts` "
        "start every runnable node when slots are free; `beam` keeps only `beam_width` nodes "
        "per depth running while anything else is in flight, by design, so it stays above the "
        "bound however many slots it has.",
        "",
        f"![critical path]({_rel(results / 'critical_path.png', doc)})",
        "",
    ]
    return lines


def _default_cell(search: dict[str, Any]) -> dict[str, Any] | None:
    """The critical-path cell of the defaults (strategy and concurrency), if measured."""
    d = search["sequential"]["defaults"]
    return next(
        (
            c
            for c in search["critical_path"]["cells"]
            if c["strategy"] == d["strategy"] and c["concurrency"] == d["max_concurrency"]
        ),
        None,
    )


def _plain_row(seq: dict[str, Any]) -> list[str]:
    if "plain_per_path_s" not in seq or not seq["plain_per_path_s"].get("n"):
        return []
    return [
        f"| plain plan-and-execute agent (one path, concurrency 1) | "
        f"{fmt(seq['plain_wall_s'])} | {fmt(seq['plain_per_path_s'])} "
        f"| **{fmt(seq['speedup_vs_plain'])}x** |"
    ]


def _versus_plain(seq: dict[str, Any]) -> str:
    if "speedup_vs_plain" not in seq or not seq["speedup_vs_plain"].get("n"):
        return "not measured in this run"
    x = seq["speedup_vs_plain"]["median"]
    verdict = "met" if x >= search_bench.TARGET_SPEEDUP else "missed"
    return (
        f"{x:.1f}x faster per completed path (target {search_bench.TARGET_SPEEDUP:g}x: "
        f"**{verdict}**)"
    )


def _sequential(search: dict[str, Any], doc: Path, results: Path) -> list[str]:
    seq = search["sequential"]
    b, d = seq["baseline"], seq["defaults"]
    return [
        "## 2. Sequential baseline",
        "",
        "**What it measures.** The reference notebook runs one model call at a time, newest "
        f"child first: here `max_concurrency={b['max_concurrency']}`, `strategy={b['strategy']}`"
        f". The defaults are `strategy={d['strategy']}`, `max_concurrency="
        f"{d['max_concurrency']}`. Same tree, same latencies, run side by side in every "
        "repetition (the runs are cells of benchmark 1).",
        "",
        "| | wall s | s per completed path | defaults faster per path |",
        "| --- | --- | --- | --- |",
        *_plain_row(seq),
        f"| the tree one call at a time ({b['strategy']}, concurrency {b['max_concurrency']}) "
        f"| {fmt(seq['baseline_wall_s'])} | {fmt(seq['baseline_per_path_s'])} "
        f"| **{fmt(seq['speedup_per_path'])}x** |",
        f"| defaults ({d['strategy']}, concurrency {d['max_concurrency']}) | "
        f"{fmt(seq['defaults_wall_s'])} | {fmt(seq['defaults_per_path_s'])} | |",
        "",
        "The plain agent makes one path as the seed notebook ships (one candidate per node, "
        "one call at a time): what a user had before the tree. Against it the defaults are "
        f"{_versus_plain(seq)}. Against the same tree searched one call at a time the gain is "
        "bounded by the tree itself: the most any schedule could gain is its total job time "
        f"over its critical path, {fmt(seq['max_speedup'])}x here, and the defaults' "
        f"{d['max_concurrency']} slots get close to it; a wider tree (more candidates, more "
        "paths) gains more.",
        "",
        f"![sequential baseline]({_rel(results / 'sequential.png', doc)})",
        "",
    ]


def _calls(search: dict[str, Any], doc: Path, results: Path) -> list[str]:
    c = search["calls"]
    rr = c["cached_rerun"]
    lines = [
        "## 3. Model calls",
        "",
        "**What it measures.** Real model calls per completed path by role (the run's "
        "`metrics.llm_calls_by_role`), `naive_calls` (the same tree with one evaluator call per "
        "candidate and no cache), and the identical rerun on the same engine, which must cost "
        "no model call: it reuses the first run's result (`agents/reuse.py`; before, the model "
        "cache answered it call by call). Defaults (`"
        f"{c['defaults']['strategy']}`, concurrency {c['defaults']['max_concurrency']}), the "
        "6-path tree.",
        "",
        "| role | calls per completed path |",
        "| --- | --- |",
    ]
    for role, s in c["calls_by_role_per_path"].items():
        lines.append(f"| {role} | {fmt(s)} |")
    lines += [
        f"| **all** | **{fmt(c['llm_calls_per_path'])}** ({fmt(c['llm_calls'], 0)} per run) |",
        f"| naive_calls | {fmt(c['naive_calls_per_path'])} ({fmt(c['naive_calls'], 0)} per run) |",
        "",
        f"Identical cached rerun: **{fmt(rr['llm_calls'], 0)} model calls** "
        f"({fmt(rr['model_calls'], 0)} reached the scripted models), {fmt(rr['cache_hits'], 0)} "
        f"cache hits, {fmt(rr['wall_s'])} s wall"
        + (
            ", the first run's result reused; "
            if all(r.get("reused") for r in rr["runs"])
            else "; "
        )
        + ("zero calls in every repetition." if rr["all_zero"] else "**NOT zero** — a bug.")
        + " The same tree costs the same calls with every strategy and concurrency (it is "
        "searched to the end); `results/search.json` has them per configuration.",
        "",
        f"![calls]({_rel(results / 'calls.png', doc)})",
        "",
    ]
    return lines


def _memory(mem: dict[str, Any], doc: Path, results: Path) -> list[str]:
    cfg = mem["config"]
    marks = [str(k) for k in cfg["checkpoints"]]
    failed = sum(s["failed_runs"] for s in mem["soaks"])
    lines = [
        "## 5. Memory",
        "",
        f"**What it measures.** {cfg['runs']} sequential small runs (the `tiny` tree: a "
        "one-step plan, 5 model calls; each with its own task) through HTTP "
        "(`POST /solve`, `Accept: application/json`) in one server process; VmRSS from "
        f"`/proc/<pid>/status` before the first run and after runs {', '.join(marks[1:])}. "
        f"{cfg['repetitions']} processes (side by side). Per-call latency {cfg['latency']}: "
        "memory does not depend on it, and it keeps the soak short.",
        "",
        "| after runs | " + " | ".join(marks) + " | growth | peak (VmHWM) |",
        "| --- | " + " | ".join("---" for _ in marks) + " | --- | --- |",
        "| VmRSS MiB | "
        + " | ".join(fmt(mem["rss_mib"][k], 1) for k in marks)
        + f" | {_growth(mem['growth'])} | "
        + f"{max(s['peak_rss_mib'] for s in mem['soaks']):.1f} MiB |",
        "",
        (
            f"**Growth within the {cfg['limit_growth']:.0%} limit.**"
            if mem["within_limit"]
            else f"**Growth beyond the {cfg['limit_growth']:.0%} limit — a bug.**"
        )
        + f" {failed} of {cfg['runs'] * cfg['repetitions']} runs failed."
        + _memory_split(mem)
        + _control(mem),
        "",
        f"![memory]({_rel(results / 'memory.png', doc)})",
        "",
    ]
    return lines


def _memory_split(mem: dict[str, Any]) -> str:
    """Where the growth happened: the first quarter of the runs against the rest."""
    marks = [str(k) for k in mem["config"]["checkpoints"]]
    if len(marks) < 3:
        return ""
    start, early, end = (mem["rss_mib"][k]["median"] for k in (marks[0], marks[1], marks[-1]))
    return (
        f" Of the growth, {early - start:.1f} MiB came in the first {marks[1]} runs (first-use "
        "imports, the model cache filling, SQLite page caches) and "
        f"{end - early:.1f} MiB ({(end - early) / early * 100:.1f} %) over the "
        f"{int(marks[-1]) - int(marks[1])} runs after"
        + (": the curve flattens." if (end - early) / early < (early - start) / start else ".")
    )


def _control(mem: dict[str, Any]) -> str:
    """What the process with the model cache off says about the rest of the growth."""
    control = mem.get("no_cache_control")
    marks = [str(k) for k in mem["config"]["checkpoints"]]
    if not control or len(marks) < 3:
        return ""
    early, end = control["rss_mib"][marks[1]], control["rss_mib"][marks[-1]]
    cached_early = mem["rss_mib"][marks[1]]["median"]
    cached_end = mem["rss_mib"][marks[-1]]["median"]
    return (
        f" A control process with `use_cache=false` grew {control['growth'] * 100:+.1f} % in all "
        f"and {end - early:+.1f} MiB after run {marks[1]} (against {cached_end - cached_early:+.1f}"
        " MiB with the cache): what remains with the cache on is the model cache filling, "
        "which is an LRU bounded at 20 000 entries (`calls/cache.py`)."
        if (end - early) < (cached_end - cached_early)
        else f" A control process with `use_cache=false` grew as much "
        f"({control['growth'] * 100:+.1f} %): the model cache is not what grows."
    )


def _growth(s: Spread) -> str:
    if s["n"] == 0 or math.isnan(s["median"]):
        return "-"
    return f"{s['median'] * 100:+.1f} % ({s['min'] * 100:+.1f} to {s['max'] * 100:+.1f})"


def _closing(
    search: dict[str, Any] | None, load: dict[str, Any] | None, mem: dict[str, Any] | None
) -> list[str]:
    lines = ["## Closing note: targets", ""]
    if search is not None:
        cp = search["critical_path"]
        for strategy, ok in cp["met"].items():
            wide = [
                c
                for c in cp["cells"]
                if c["strategy"] == strategy and c["concurrency"] >= cp["width"]
            ]
            ratio = ", ".join(fmt(c["ratio"]) for c in wide)
            if ok:
                lines.append(
                    f"- Critical path, `{strategy}`: **met** (wall ÷ bound {ratio} at "
                    f"concurrency ≥ {cp['width']})."
                )
            elif strategy == "beam":
                lines.append(
                    f"- Critical path, `beam`: **missed** ({ratio}). Beam search runs only the "
                    "`beam_width` (2) best nodes per depth while any job is in flight and takes "
                    "up runner-ups only when the beam is idle (agents/strategies.py), so it "
                    "serialises layers by design: it trades wall time for fewer explored "
                    "nodes when `max_paths` stops the search early. To make it meet the "
                    "bound, let `Beam.select` fill idle slots with runner-ups (speculative, "
                    "lowest priority, cancelled when the beam needs the slot), or run it with "
                    "`beam_width` ≥ the tree's width."
                )
            else:
                lines.append(
                    f"- Critical path, `{strategy}`: **missed** ({ratio}); see "
                    "`results/search.json` rows for the runs."
                )
        seq = search["sequential"]
        lines.append(
            f"- Seconds per completed path against a plain sequential agent: {_versus_plain(seq)}."
        )
        default = _default_cell(search)
        if default is not None:
            ratio = default["ratio"]["median"]
            lines.append(
                f"- Critical path at the defaults ({default['strategy']}, concurrency "
                f"{default['concurrency']}): "
                + ("**met**" if ratio <= search["critical_path"]["target"] else "**missed**")
                + f" ({ratio:.2f}; the tree is {search['critical_path']['width']} wide, the "
                f"default {default['concurrency']} slots, kept for quality)."
            )
        rr = search["calls"]["cached_rerun"]
        lines.append(
            "- Cached rerun: **met** (0 calls)."
            if rr["all_zero"]
            else "- Cached rerun: **missed**."
        )
    if load is not None:
        lines.append(load_report.closing(load))
    if mem is not None:
        lines.append(
            "- Memory: **met** (growth " + _growth(mem["growth"]) + ")."
            if mem["within_limit"]
            else "- Memory: **missed** (growth " + _growth(mem["growth"]) + "): a leak to fix."
        )
    lines.append("")
    return lines


def write(
    doc: Path,
    results: Path,
    machine: dict[str, Any],
    search: dict[str, Any] | None,
    load: dict[str, Any] | None,
    memory: dict[str, Any] | None,
    seconds: float | None,
    quality: dict[str, Any] | None = None,
    *,
    by_name: Mapping[str, dict[str, Any] | None],
    multihop_more: Sequence[tuple[dict[str, Any], str]] = (),
    multihop_readings: Sequence[tuple[dict[str, Any], str]] = (),
) -> None:
    """Render docs/benchmarks.md from whichever results exist (`by_name`: the other
    benchmarks' results by name, as in `bench/results/<name>.json`; `multihop_more`: the
    multi-hop benchmark with other models, each with its results directory;
    `multihop_readings`: its first paths read again, each with its file)."""
    lines = [
        "# Benchmarks",
        "",
        "Where a run's time and model calls go (the critical path, the strategies, the cache, "
        "load, memory) and how good the answers it finds are. Every number here comes from "
        "`make bench` on the machine below and can be reproduced with that one command. This "
        "file is generated by `bench/report.py` from `bench/results/*.json`; edit the "
        "generator, not the file.",
        "",
        "## How to reproduce",
        "",
        "```sh",
        "make bench                              # all of them: bench/results/ and this file",
        ".venv/bin/python -m bench --only search # benchmarks 1-3 (also: load, memory, quality,"
        " quota, cpu, workers, storm)",
        ".venv/bin/python -m bench --only documents  # benchmark 17 (Postgres; about 4 minutes)",
        ".venv/bin/python -m bench --only faults,soak  # benchmarks 12-13 (Postgres, Redis, root;"
        " half an hour)",
        ".venv/bin/python -m bench --only quality --quick  # benchmark 6 in under 3 minutes",
        ".venv/bin/python -m bench --only search,load,quota,cpu --quick \\",
        "    --cpu-against ../older-checkout     # the speed figures at quick sizes",
        ".venv/bin/python -m bench --smoke --results /tmp/r --docs /tmp/b.md  # tiny sizes",
        ".venv/bin/python -m bench.serve --port 8000  # the load test's server, by hand",
        ".venv/bin/pytest -q tests/e2e/bench     # the smoke tests",
        "```",
        "",
        "**Latency injection.** Scripted chat models (`testkit/fakes.py`, through "
        "`bench/models.py`) with an `asyncio.sleep` before each reply: uniform in the range "
        "given per benchmark, drawn from a hash of (seed, role, prompt), so a call sleeps the "
        "same in every run and every strategy. They sit behind the production call policy at "
        "its default settings (`testkit/policy_models.py` `ThroughPolicy`: per-attempt "
        "timeouts, retries, the adaptive rate limiter with its cap of 16 model calls in "
        "flight per model), as a provider's model does. Everything else is the real code: the "
        "LangGraph graph, the scheduler, the evaluator batching, the cache, the SQLite "
        "checkpointer, and for 4-5 the HTTP service as its own process. No tools (the "
        "executor answers in one call), so the numbers are orchestration, not a provider or "
        "the web.",
        "",
    ]
    lines += _machine(machine, seconds)
    headline = _headline(search, load)
    if quality is not None:
        headline[-1:-1] = [quality_report.headline(quality)]
    multihop = by_name.get("multihop")
    measured = [multihop, *(other for other, _ in multihop_more)] if multihop else []
    for sentence in filter(None, map(multihop_report.headline, measured)):
        headline[-1:-1] = [sentence]
    headline[-1:-1] = multihop_across.across_headlines(measured)
    lines += headline
    if search is not None:
        lines += _critical(search, doc, results)
        lines += _sequential(search, doc, results)
        lines += _calls(search, doc, results)
    if load is not None:
        lines += load_report.section(load, doc, results)
    if memory is not None:
        lines += _memory(memory, doc, results)
    if quality is not None:
        lines += quality_report.section(quality, doc, results)
    # The sections of the results that need nothing but themselves, in the file's order.
    sections: list[tuple[str, Callable[[dict[str, Any]], list[str]]]] = [
        ("quota", speed_report.quota_section),
        ("cpu", speed_report.cpu_section),
        ("workers", workers_report.section),
        ("storm", storm_report.section),
        (
            "multihop",
            partial(multihop_report.section, more=multihop_more, readings=multihop_readings),
        ),
        ("faults", faults_report.faults_section),
        ("soak", faults_report.soak_section),
        ("in_flight", speed_report.in_flight_section),
        ("tool_spacing", speed_report.tool_spacing_section),
        ("worker_cpu", speed_report.worker_cpu_section),
        ("documents", documents_report.section),
    ]
    for name, section in sections:
        if (data := by_name.get(name)) is not None:
            lines += section(data)
    closing = _closing(search, load, memory)
    if quality is not None:
        closing[-1:-1] = quality_report.closing(quality)
    closing[-1:-1] = faults_report.closing(by_name.get("faults"), by_name.get("soak"))
    closing[-1:-1] = speed_report.worker_cpu_closing(by_name.get("worker_cpu"))
    closing[-1:-1] = documents_report.closing(by_name.get("documents"))
    lines += closing
    lines += [
        "## Smoke tests",
        "",
        "`tests/e2e/bench` runs each benchmark with tiny sizes (5 ms latency, 2 clients, 10 "
        "memory runs) inside `make test` and checks the shape of the results (keys, counts, "
        "the cached rerun's zero calls), never timings. `make bench` itself never runs in "
        "`make test`.",
        "",
    ]
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("\n".join(lines))
