"""PNG plots of the results (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from bench.stats import Spread


def _save(fig: Any, out: Path) -> None:
    """Lay the figure out, write it to `out` and free it."""
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def _errors(spreads: Sequence[Spread]) -> list[list[float]]:
    """Asymmetric error bars (median - min, max - median) for matplotlib."""
    return [
        [s["median"] - s["min"] for s in spreads],
        [s["max"] - s["median"] for s in spreads],
    ]


def _line(ax: Axes, xs: Sequence[float], spreads: Sequence[Spread], label: str) -> None:
    ax.errorbar(
        xs,
        [s["median"] for s in spreads],
        yerr=_errors(spreads),
        marker="o",
        capsize=3,
        label=label,
    )


def critical_path(search: dict[str, Any], out: Path) -> None:
    cp = search["critical_path"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    strategies = search["config"]["strategies"]
    for strategy in strategies:
        cells = [c for c in cp["cells"] if c["strategy"] == strategy]
        xs = [c["concurrency"] for c in cells]
        _line(left, xs, [c["ratio"] for c in cells], strategy)
        _line(right, xs, [c["wall_s"] for c in cells], f"{strategy} wall")
    bounds = [c["bound_s"]["median"] for c in cp["cells"]]
    right.axhline(sum(bounds) / len(bounds), color="grey", ls=":", label="critical path (mean)")
    left.axhline(cp["target"], color="red", ls="--", label=f"target {cp['target']}")
    left.axvline(cp["width"], color="grey", ls=":", label=f"tree width {cp['width']}")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(
            search["config"]["concurrency"], [str(c) for c in search["config"]["concurrency"]]
        )
        ax.set_xlabel("max_concurrency")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    left.set_ylabel("wall time ÷ critical-path bound")
    left.set_title("Orchestration overhead over the critical path")
    right.set_ylabel("seconds")
    right.set_title("Wall time of a 6-path search")
    _save(fig, out)


def sequential(search: dict[str, Any], out: Path) -> None:
    seq = search["sequential"]
    labels = [
        f"{name}\n({seq[key]['strategy']}, concurrency {seq[key]['max_concurrency']})"
        for name, key in (("sequential", "baseline"), ("defaults", "defaults"))
    ]
    spreads = [seq["baseline_per_path_s"], seq["defaults_per_path_s"]]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(
        labels,
        [s["median"] for s in spreads],
        yerr=_errors(spreads),
        capsize=4,
        color=["#999", "#37a"],
    )
    ax.set_ylabel("wall seconds per completed path")
    ax.set_title(f"Speed-up per path: {seq['speedup_per_path']['median']:.2f}x")
    ax.grid(axis="y", alpha=0.3)
    _save(fig, out)


def calls(search: dict[str, Any], out: Path) -> None:
    c = search["calls"]
    roles = list(c["calls_by_role_per_path"])
    fig, ax = plt.subplots(figsize=(7, 4))
    bottom = 0.0
    for role in roles:
        value = c["calls_by_role_per_path"][role]["median"]
        ax.bar(["first run"], [value], bottom=bottom, label=role)
        bottom += value
    naive = c["naive_calls_per_path"]["median"]
    rerun = c["cached_rerun"]["llm_calls"]["median"]
    ax.bar(["naive (no batching,\nno cache)"], [naive], color="#bbb")
    ax.bar(["identical rerun\n(cache)"], [rerun], color="#3a3")
    for x, value in enumerate((bottom, naive, rerun)):
        ax.text(x, value + 0.1, f"{value:.1f}", ha="center")
    ax.set_ylabel("model calls per completed path")
    ax.set_title("Model calls per completed path (defaults)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    _save(fig, out)


def load(result: dict[str, Any], out: Path) -> None:
    levels = result["levels"]
    xs = [lv["clients"] for lv in levels]
    fig, (a, b, c, d) = plt.subplots(1, 4, figsize=(17, 4))
    _line(a, xs, [lv["throughput_per_min"] for lv in levels], "throughput")
    if result.get("knee_clients"):
        a.axvline(result["knee_clients"], color="red", ls="--", label="knee")
    a.set_ylabel("completed runs per minute")
    a.set_title("Throughput (and server CPU)")
    cpu = a.twinx()
    cpu.plot(xs, [lv["cpu_util"]["median"] for lv in levels], color="grey", ls=":", marker="x")
    cpu.set_ylim(0, 1.2)
    cpu.set_ylabel("server CPU, cores (dotted)")
    _line(b, xs, [lv["event_latency_p50_ms"] for lv in levels], "p50")
    _line(b, xs, [lv["event_latency_p99_ms"] for lv in levels], "p99")
    b.set_yscale("log")
    b.set_ylabel("ms, event created → received")
    b.set_title("Event latency")
    _line(c, xs, [lv["run_p50_s"] for lv in levels], "p50")
    c.set_ylabel("seconds, request → terminal event")
    c.set_title("Run duration")
    _line(d, xs, [lv["peak_rss_mib"] for lv in levels], "peak RSS")
    d.set_ylabel("MiB")
    d.set_title("Server memory")
    for ax in (a, b, c, d):
        ax.set_xscale("log")
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel("concurrent /solve clients")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    _save(fig, out)


def memory(result: dict[str, Any], out: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    for rep, s in enumerate(result["soaks"]):
        xs = [p[0] for p in s["curve"]]
        ax.plot(xs, [p[1] for p in s["curve"]], marker=".", label=f"process {rep + 1}")
    control = result.get("no_cache_control")
    if control:
        xs = [p[0] for p in control["curve"]]
        ax.plot(
            xs, [p[1] for p in control["curve"]], ls="--", color="grey", label="use_cache=false"
        )
    first = min(s["curve"][0][1] for s in result["soaks"])
    limit = result["config"]["limit_growth"]
    ax.axhline(first * (1 + limit), color="red", ls="--", label=f"+{limit:.0%} of the start")
    ax.set_xlabel("sequential runs")
    ax.set_ylabel("VmRSS (MiB)")
    ax.set_title("Server RSS over sequential runs")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    _save(fig, out)


def quality(result: dict[str, Any], out: Path) -> None:
    """Success rate per structure and strategy (benchmark 6), with the overall rate."""
    strategies = list(result["config"]["strategies"])
    structures = [*result["cells"], "all"]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.8 / len(strategies)
    for i, strategy in enumerate(strategies):
        rates = [result["cells"][s][strategy]["success"] for s in result["cells"]]
        rates.append(result["totals"][strategy]["success"])
        xs = [x + (i - (len(strategies) - 1) / 2) * width for x in range(len(structures))]
        ax.bar(xs, rates, width=width, label=strategy)
    ax.set_xticks(range(len(structures)), structures)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate (best answer voted)")
    ax.set_title("Search quality per structure, equal budgets")
    ax.legend(fontsize=8, ncols=len(strategies))
    ax.grid(axis="y", alpha=0.3)
    _save(fig, out)


def quality_curve(result: dict[str, Any], out: Path) -> None:
    """Success rate against `max_llm_calls`, every structure together (benchmark 6)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for strategy in result["config"]["strategies"]:  # the bar chart's order and colours
        points = result["curve"].get(strategy, [])
        budgets = [p["budget"] for p in points]
        left.plot(budgets, [p["success"] for p in points], marker="o", label=strategy)
        right.plot(
            [p["llm_calls"] for p in points],
            [p["success"] for p in points],
            marker="o",
            label=strategy,
        )
    left.set_xlabel("max_llm_calls")
    right.set_xlabel("model calls made (mean)")
    for ax in (left, right):
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("success rate")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    left.set_title("Success against the budget")
    right.set_title("Success against the calls spent")
    _save(fig, out)
