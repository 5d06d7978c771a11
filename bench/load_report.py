"""The load benchmark's section of docs/benchmarks.md (benchmark 4) and what the closing note
reads from it: what bounds the throughput (the call policy's in-flight cap, the CPU, the disk)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from bench.stats import fmt


def _rel(target: Path, doc: Path) -> str:
    return os.path.relpath(target, doc.parent)


def pct(x: float) -> str:
    return f"{x * 100:.0f} %"


def section(load: dict[str, Any], doc: Path, results: Path) -> list[str]:
    cfg = load["config"]
    lines = [
        "## 4. Load",
        "",
        "**What it measures.** The service as a process (`python -m bench.serve`: the real "
        "app, run manager, SQLite run store and checkpointer on disk; scripted models, per-call "
        f"latency {cfg['latency']}), N clients each `POST /solve` at once and read the SSE "
        "stream to its end. Each run is the `small` tree (root → 2 candidates, 2 paths, "
        f"{cfg.get('calls_per_run', 14)} model calls, ~18 events) with its own task, so the "
        "model cache never answers. The "
        "model calls go through the call policy at its defaults (at most "
        f"{in_flight(load)} in flight per model, no rate ceiling). The server runs with "
        "`LATS_MAX_ACTIVE_RUNS=256` so that every client's run executes at once: with the "
        "default 4, throughput would be capped by that setting (≈ 4 runs per run-duration). "
        "A fresh server per level, warmed by "
        f"one run; {cfg['repetitions']} waves per level. Event latency is from an event's `ts` "
        "(set when the engine creates it) to the client reading its `data:` line; errors count "
        "non-200 answers, transport errors and runs that did not end in `done`.",
        "",
        "| clients | runs/min | event latency p50 ms | p99 ms | run duration p50 s | errors | "
        "peak RSS MiB | server CPU |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for lv in load["levels"]:
        lines.append(
            f"| {lv['clients']} | {fmt(lv['throughput_per_min'], 0)} | "
            f"{fmt(lv['event_latency_p50_ms'], 1)} | {fmt(lv['event_latency_p99_ms'], 0)} | "
            f"{fmt(lv['run_p50_s'], 1)} | {fmt(lv['errors'], 0)} | "
            f"{fmt(lv['peak_rss_mib'], 0)} | {fmt(lv['cpu_util'], 2)} |"
        )
    knee = load.get("knee_clients")
    lines += [
        "",
        "(server CPU: CPU seconds of the server process per wall second; 1.0 is one core.)",
        "",
    ]
    if knee:
        lines.append(
            f"**The knee is at about {knee} concurrent clients**: from there on, more clients "
            "stop buying proportionally more runs (throughput below 80 % of linear scaling "
            "from the lightest level) and each run takes longer; throughput peaks at "
            f"{load['peak_clients']} clients."
        )
    else:
        lines.append("No knee within these levels: throughput still scales.")
    prof = load.get("profile")
    if prof:
        threads = {t["thread"]: t for t in prof["threads"]}
        sqlite = sorted((t for t in threads if t.startswith("SQLite")), key=str)
        lines += [
            "",
            f"**What limits it (py-spy, {load['config']['clients'][-1]} clients, every thread "
            "sampled at 100 Hz, idle ones included):**",
            "",
            "| thread | busy |",
            "| --- | --- |",
            f"| event loop (MainThread: HTTP, SSE, the engine, LangGraph) | "
            f"{pct(prof['loop_busy'])} |",
        ]
        for name in sqlite:
            lines.append(f"| {name} (aiosqlite worker) | {pct(threads[name]['busy'])} |")
        for name in sorted(t for t in threads if t.startswith("sqlite-writer")):
            lines.append(
                f"| run store writer {name} (group commit) | {pct(threads[name]['busy'])} |"
            )
        for name in ("default executor threads", "AnyIO worker threads"):
            if name in threads:
                lines.append(f"| {name} | {pct(threads[name]['busy'])} |")
        lines += [
            "",
            "Where the event loop's busy time goes (inclusive shares of its busy samples; "
            "the parts overlap):",
            "",
            "| part | share |",
            "| --- | --- |",
        ]
        for hot in prof.get("loop_hotspots", []):
            lines.append(f"| {hot['name']} | {pct(hot['share'])} |")
        lines += [
            "",
            "By package (inclusive) and by function (self):",
            "",
            "| package | share of busy loop samples | | function | share |",
            "| --- | --- | --- | --- | --- |",
        ]
        for pkg, fn in zip(
            prof["loop_by_package"][:10], prof["loop_by_function"][:10], strict=False
        ):
            lines.append(
                f"| {pkg['name']} | {pct(pkg['share'])} | | `{fn['name']}` | {pct(fn['share'])} |"
            )
    tmpfs = load.get("tmpfs")
    if tmpfs:
        w = tmpfs["wave"]
        lines += [
            "",
            f"**Diagnosis wave** (one wave, {tmpfs['clients']} clients, the server's data "
            "directory on tmpfs, so SQLite commits never wait for the disk): "
            f"{w['throughput_per_min']:.0f} runs/min against "
            f"{tmpfs['disk_throughput_per_min']:.0f} on disk (the median above), server CPU "
            f"{w['cpu_util']:.2f}.",
        ]
    lines += ["", _reading(load), ""]
    lines += [
        f"![load]({_rel(results / 'load.png', doc)})",
        "",
        f"Raw profile: `{_rel(results / 'load_profile.txt', doc)}` (py-spy collapsed stacks).",
        "",
    ]
    return lines


def tmpfs_gain(load: dict[str, Any]) -> float | None:
    """How much faster the tmpfs wave ran than the same level on disk (0.15: 15 % faster)."""
    tmpfs = load.get("tmpfs")
    if not tmpfs or not tmpfs["disk_throughput_per_min"]:
        return None
    return float(tmpfs["wave"]["throughput_per_min"] / tmpfs["disk_throughput_per_min"] - 1)


def cpu_bound(load: dict[str, Any]) -> bool:
    """The server process used (nearly) a whole core at its busiest level."""
    return bool(max(lv["cpu_util"]["median"] for lv in load["levels"]) >= 0.85)


def hotspots(load: dict[str, Any]) -> dict[str, float]:
    prof = load.get("profile") or {}
    return {h["name"]: h["share"] for h in prof.get("loop_hotspots", [])}


def in_flight(load: dict[str, Any]) -> int:
    return int(load["config"].get("policy", {}).get("model_max_in_flight", 16))


def policy_bound_per_min(load: dict[str, Any]) -> float | None:
    """The runs per minute the call policy's in-flight cap allows: that many calls at once,
    each taking the mean injected latency, over the calls of one run."""
    calls = load["config"].get("calls_per_run")
    found = re.match(r"([\d.]+)-([\d.]+) ms", load["config"]["latency"])
    if not calls or not found:
        return None
    mean_s = (float(found.group(1)) + float(found.group(2))) / 2 / 1000
    return float(in_flight(load) / mean_s * 60 / calls)


def policy_bound(load: dict[str, Any]) -> bool:
    """The busiest level ran at (nearly) the in-flight cap's throughput."""
    bound = policy_bound_per_min(load)
    top = max(lv["throughput_per_min"]["median"] for lv in load["levels"])
    return bound is not None and top >= 0.85 * bound


def _reading(load: dict[str, Any]) -> str:
    levels = load["levels"]
    top, low = levels[-1], levels[0]
    if policy_bound(load):
        calls = load["config"]["calls_per_run"]
        burst = (
            f" Event latency's p99 at {top['clients']} clients "
            f"({top['event_latency_p99_ms']['median']:.0f} ms, against "
            f"{top['event_latency_p50_ms']['median']:.0f} ms at the median) comes from the "
            "start of the wave, when every client posts at once and the first events of the "
            "last clients wait for the requests of the first ones; the run store's writes "
            "of that burst are group-committed (a few transactions for the 200 run "
            "creations, `app/store/sqlite_writer.py`) instead of queueing one by one on its "
            "SQLite connection."
        )
        return (
            "**Reading.** Past the knee the runs wait for the call policy, not for the "
            f"machine: at most {in_flight(load)} model calls are in flight per model (the "
            "fixed cap of this measurement; the cap now adapts, benchmark 14), so with these "
            "latencies one model serves "
            f"about {policy_bound_per_min(load):.0f} runs of {calls} calls per minute, which is "
            f"what the server completes ({top['throughput_per_min']['median']:.0f}) while "
            f"using {top['cpu_util']['median']:.2f} of a core. More clients then only queue for "
            f"the policy: a run takes {top['run_p50_s']['median']:.1f} s at the median instead "
            f"of {low['run_p50_s']['median']:.1f} s." + burst + " A provider that allows more "
            "concurrent calls is used more by raising the cap; the adaptive limit still backs "
            "off on its 429s."
        )
    gain = tmpfs_gain(load)
    if gain is None:
        disk = ""
    elif gain < 0.05:
        disk = (
            " Durable writes are not the limit: with the data directory on tmpfs the same "
            f"wave's throughput was within {max(5.0, abs(gain) * 100):.0f} % of the disk's."
        )
    else:
        disk = f" Durable writes are a {gain * 100:.0f} % part of it (the tmpfs wave)."
    hot = hotspots(load)
    double = hot.get("scripted models (the benchmark's double)")
    double_note = (
        f" About {double * 100:.0f} % of the loop's busy samples are the scripted models' own "
        "cost (their repr, which LangChain computes for every model copy, and the script); a "
        "real provider client spends that time on HTTP and JSON instead."
        if double
        else ""
    )
    if cpu_bound(load):
        return (
            "**Reading.** Past the knee the server process is CPU-bound: it uses "
            f"{top['cpu_util']['median']:.2f} of a core at {top['clients']} clients, and one "
            "Python process cannot use more. The event loop runs HTTP, the SSE streams, the "
            "engine and LangGraph on one thread, and the SQLite worker threads take the same "
            "GIL for their Python side. More clients then only queue: a run takes "
            f"{top['run_p50_s']['median']:.1f} s at the median instead of "
            f"{low['run_p50_s']['median']:.1f} s, and event latency's p99 grows to "
            f"{top['event_latency_p99_ms']['median']:.0f} ms, while the median event still "
            f"arrives in {top['event_latency_p50_ms']['median']:.0f} ms. The loop's CPU goes "
            "to the frameworks' per-call and per-superstep machinery (the tables: LangGraph's "
            "supersteps, LangChain's callback and config plumbing, pydantic), not to one hot "
            "spot of ours." + disk + double_note
        )
    return (
        "**Reading.** No thread is saturated (server CPU "
        f"{top['cpu_util']['median']:.2f} at {top['clients']} clients), yet throughput stops "
        "growing: the runs queue behind one resource. Every LangGraph superstep of every run "
        "checkpoints through the one SQLite connection of `AsyncSqliteSaver` (an asyncio lock "
        "around each write, each statement a round trip to aiosqlite's worker thread); the "
        "checkpointer's connection thread (Thread-2; `app/store/backend.py` opens the run "
        "store's first) is the busiest thread." + disk + double_note
    )


def closing(load: dict[str, Any]) -> str:
    """The closing note's line on load: what bounds it and what would raise it."""
    if policy_bound(load):
        return (
            f"- Load: no target was set. The knee is at ~{load.get('knee_clients')} clients: "
            f"the call policy's {in_flight(load)} calls in flight per model (a fixed cap when "
            "this was measured) bound one model's "
            f"throughput (~{policy_bound_per_min(load):.0f} small runs/min "
            "here), and the server has CPU to spare. What raises it: (1) the adaptive "
            "in-flight cap, which grows while the provider keeps up (benchmark 14, against the "
            "fixed cap); (2) then, once the "
            "process is CPU-bound, more server processes over Postgres "
            "(`LATS_DATABASE_URL`), one per core."
        )
    gain = tmpfs_gain(load)
    fixes = [
        "more server processes: one process is one core here, so run several workers or "
        "replicas over Postgres (`LATS_DATABASE_URL`); SQLite files are single-writer and "
        "do not share well across processes"
        if cpu_bound(load)
        else "take the checkpointer off its single locked connection (a pool, or Postgres)",
        "less CPU per run: LangGraph's superstep machinery is the largest part of the "
        "loop's time and every scheduling round is one superstep with its checkpoint, so "
        "fewer rounds per run pay directly (benchmark 8 measures a run's CPU)",
        "cheaper durable writes: WAL with `synchronous=NORMAL` on the checkpoint file (the "
        'run store has it already), LangGraph\'s `durability="async"` for rounds whose '
        "loss only repeats work, one commit per round for events instead of one per event"
        + (
            ""
            if gain is None
            else " (the tmpfs wave shows little to gain while the disk is idle)"
            if gain < 0.05
            else f" (the tmpfs wave bounds the gain at ~{gain * 100:.0f} %)"
        ),
    ]
    if not cpu_bound(load):
        fixes[0], fixes[2] = fixes[2], fixes[0]
    return (
        f"- Load: no target was set. The knee is at ~{load.get('knee_clients')} clients; "
        f"throughput peaks at {load['peak_clients']} clients. What would raise it, in "
        "order of effect: " + "; ".join(f"({i}) {f}" for i, f in enumerate(fixes, 1)) + "."
    )
