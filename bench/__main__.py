"""`python -m bench` (`make bench`): run the benchmarks, write bench/results/*.json and PNGs,
and regenerate docs/benchmarks.md. Prints a short summary."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import machine, plots, report
from bench.cpu import CpuConfig, run_cpu
from bench.documents import DocumentsConfig, run_documents
from bench.documents_report import summary as documents_summary
from bench.engine_runs import Latency
from bench.faults import FaultsConfig, run_faults
from bench.faults import summary as faults_summary
from bench.in_flight import InFlightConfig, run_in_flight
from bench.in_flight import summary as in_flight_summary
from bench.load import LoadConfig, run_load
from bench.local_prefix import LocalPrefixConfig, run_local_prefix
from bench.local_prefix import summary as local_prefix_summary
from bench.memory import MemoryConfig, run_memory
from bench.multihop import (
    CONFIGS,
    DEFAULT_CONFIGS,
    MultihopConfig,
    engine_settings_for,
    model_label,
    models_for,
    run_multihop,
    shown_path,
)
from bench.multihop import summary as multihop_summary
from bench.multihop_corpus import SETTINGS as MULTIHOP_SETTINGS
from bench.multihop_data import DATASETS, HOTPOTQA_DEV_100, data_path
from bench.process import ROOT
from bench.quality import QUICK, QualityConfig, run_quality
from bench.quota import QuotaConfig, run_quota
from bench.quota import summary as quota_summary
from bench.search import SearchConfig, run_search
from bench.soak import SoakConfig, run_soak
from bench.soak import summary as soak_summary
from bench.storm import run_storm_bench
from bench.storm import summary as storm_summary
from bench.tool_spacing import ToolSpacingConfig, run_tool_spacing
from bench.tool_spacing import summary as tool_spacing_summary
from bench.worker_cpu import WorkerCpuConfig, run_worker_cpu
from bench.worker_cpu import summary as worker_cpu_summary
from bench.workers import WorkersConfig, run_workers
from bench.workers import summary as workers_summary
from testkit.storm import StormConfig

logger = logging.getLogger("bench")

# The page's results; a directory below it holds the multi-hop benchmark with another model.
RESULTS = ROOT / "bench" / "results"
BENCHMARKS = ("search", "load", "memory", "quality", "quota", "cpu", "workers", "storm")
# Run only when named in `--only`: they run a real model (the multi-hop questions for hours with
# a local one; the local model's KV prefix reuse for minutes with Qwen), or strike faults for
# minutes (faults: Postgres, a redis-server binary, root for its tmpfs; the in-flight cap) or
# soak for half an hour, or fill SQLite and Postgres with 100,000 passages (documents).
OPT_IN = (
    "multihop",
    "local_prefix",
    "faults",
    "soak",
    "in_flight",
    "tool_spacing",
    "worker_cpu",
    "documents",
)
# `--smoke` without `--only`: all but the ones that need Postgres and Redis (their smoke tests
# are tests/e2e/bench/test_bench_workers.py and test_bench_storm.py).
NEEDS_SERVICES = ("workers", "storm")
SMOKE_DEFAULT = tuple(b for b in BENCHMARKS if b not in NEEDS_SERVICES)
FAST = Latency(seed=7, low_s=0.002, high_s=0.008)
# `--smoke`: every benchmark end to end at tiny sizes (the tests' variant; ~20 s).
SMOKE: dict[str, Any] = {
    "search": SearchConfig(concurrency=(1, 8), repetitions=1, latency=FAST),
    "load": LoadConfig(clients=(2,), repetitions=1, latency=FAST),
    "memory": MemoryConfig(
        runs=10, checkpoints=(0, 5, 10), sample_every=5, repetitions=1, latency=FAST
    ),
    "quality": QualityConfig(
        name="smoke",
        seeds=(1,),
        structures=("wide", "corridor"),
        curve_budgets=(20,),
        curve_seeds=(1,),
        defaults_seeds=(),
        concurrency=(1, 4),
        parallel_seeds=(1,),
    ),
    "quota": QuotaConfig(quotas_rps=(20.0,), runs=2, low_s=0.01, high_s=0.02, max_paths=2),
    "cpu": CpuConfig(runs=10, pairs=1),
    "workers": WorkersConfig(
        clients=4,
        duration_s=2.0,
        ramp_s=0.5,
        latency=FAST,
        max_active_runs=4,
        worker_cpus=(None, 0.5),
    ),
    "storm": StormConfig(runs=6, cancels=3, threads=6),
    "local_prefix": LocalPrefixConfig(max_paths=1, max_llm_calls=4, max_depth=1),
    "faults": FaultsConfig(faults=("postgres_down", "worker_killed"), runs=3, hold_s=1.0),
    "in_flight": InFlightConfig(clients=(4,), duration_s=2.0, provider_in_flight=8),
    "tool_spacing": ToolSpacingConfig(interval_s=0.2, repetitions=1, low_s=0.002, high_s=0.008),
    "worker_cpu": WorkerCpuConfig(
        load=WorkersConfig(clients=2, duration_s=2.0, ramp_s=0.2), pairs=1
    ),
    "soak": SoakConfig(
        duration_s=16.0, warmup_s=2.0, window_s=8.0, restart_every_s=8.0, runs_per_s=2.0, clients=8
    ),
    "documents": DocumentsConfig(
        passages=600, paragraphs_per_document=200, pdf_pages=3, rounds=1, limit=10
    ),
}
FULL: dict[str, Any] = {
    "search": SearchConfig(),
    "load": LoadConfig(),
    "memory": MemoryConfig(),
    "quality": QualityConfig(),
    "quota": QuotaConfig(),
    "cpu": CpuConfig(),
    "workers": WorkersConfig(),
    "storm": StormConfig(),  # the storm test's
    "local_prefix": LocalPrefixConfig(),
    "faults": FaultsConfig(),
    "soak": SoakConfig(),
    "in_flight": InFlightConfig(),
    "tool_spacing": ToolSpacingConfig(),
    "worker_cpu": WorkerCpuConfig(pairs=5),
    "documents": DocumentsConfig(),
}
# `--quick`: the speed benchmarks at one repetition and three load levels (a few minutes).
QUICK_SPEED: dict[str, Any] = {
    "search": SearchConfig(repetitions=1),
    "load": LoadConfig(clients=(10, 50, 200), repetitions=1),
}


# The results the report takes by name, each kept in `<name>.json`: four of the benchmarks
# run by default, and every opt-in one but the local model's KV prefix reuse (not on the page).
_SECTIONS = ("quota", "cpu", "workers", "storm", *(n for n in OPT_IN if n != "local_prefix"))


# Benchmarks 14 to 17, in this order, each run on its config in a folder of its own: (name,
# what the log says, the benchmark, its folder under the work folder).
_IN_FOLDERS: tuple[tuple[str, str, Callable[[Any, Path], Awaitable[dict[str, Any]]], str], ...] = (
    ("in_flight", "14: the in-flight cap, fixed and adaptive", run_in_flight, "in_flight"),
    ("tool_spacing", "15: a tool spaced 3 s apart, one call per step", run_tool_spacing, "tools"),
    ("worker_cpu", "16: a worker's CPU per run on Postgres + Redis", run_worker_cpu, "worker_cpu"),
    (
        "documents",
        "17: full-text search of collections on SQLite and Postgres",
        run_documents,
        "documents",
    ),
)


def _save(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")


def _load_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


async def _run(
    only: Sequence[str],
    configs: dict[str, Any],
    results: Path,
    work: Path,
    multihop: MultihopConfig | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "multihop" in only:
        assert multihop is not None
        logger.info("benchmark 11: multi-hop questions (%s)", model or "LATS_MODEL")
        hops = await run_multihop(multihop, models_for(model), work / "multihop")
        out["multihop"] = {
            "model": model or "LATS_MODEL",
            "model_detail": model_label(model),
            **hops,
        }
    if "search" in only:
        logger.info("benchmarks 1-3: critical path, sequential baseline, calls")
        out["search"] = await run_search(configs["search"], work / "search")
    if "load" in only:
        logger.info("benchmark 4: load")
        out["load"] = await run_load(configs["load"], work, results)
    if "memory" in only:
        logger.info("benchmark 5: memory")
        out["memory"] = await run_memory(configs["memory"], work)
    if "quality" in only:
        logger.info("benchmark 6: search quality (%s)", configs["quality"].name)
        out["quality"] = await run_quality(configs["quality"], work)
    if "quota" in only:
        logger.info("benchmark 7: quota sweep")
        out["quota"] = await run_quota(configs["quota"], work / "quota")
    if "cpu" in only:
        logger.info("benchmark 8: CPU per run")
        out["cpu"] = await asyncio.to_thread(run_cpu, configs["cpu"])
    if "workers" in only:
        logger.info("benchmark 9: shared runs, 1 and 2 worker processes (Postgres + Redis)")
        out["workers"] = await run_workers(configs["workers"], work)
    if "storm" in only:
        logger.info("benchmark 10: a storm of runs and cancels across 3 processes")
        out["storm"] = await asyncio.to_thread(run_storm_bench, configs["storm"], work)
    if "local_prefix" in only:
        logger.info("benchmark 11: KV prefix reuse of the local model (one run, off and on)")
        measured = await run_local_prefix(configs["local_prefix"], work / "local")
        # One entry per model file: the models are measured one at a time.
        kept = _load_json(results / "local_prefix.json") or {}
        out["local_prefix"] = {**kept, measured["model"]: measured}
    if "faults" in only:
        logger.info("benchmark 12: faults struck while runs are in flight")
        out["faults"] = await asyncio.to_thread(run_faults, configs["faults"], work / "faults")
    for name, title, run, folder in _IN_FOLDERS:
        if name in only:
            logger.info("benchmark %s", title)
            out[name] = await run(configs[name], work / folder)
    if "soak" in only:
        minutes = configs["soak"].duration_s / 60
        logger.info("benchmark 13: a soak of %g minutes", minutes)
        out["soak"] = await asyncio.to_thread(run_soak, configs["soak"], work / "soak")
    return out


def _summary(search: Any, load: Any, memory: Any, quality: Any = None) -> str:
    lines = []
    if search:
        cp = search["critical_path"]
        for cell in cp["cells"]:
            lines.append(
                f"critical path  {cell['strategy']:<5} concurrency {cell['concurrency']}: "
                f"wall/bound {cell['ratio']['median']:.2f}  wall {cell['wall_s']['median']:.1f}s"
            )
        seq = search["sequential"]
        lines.append(
            f"speed-up per path (defaults vs sequential): {seq['speedup_per_path']['median']:.2f}x"
        )
        calls = search["calls"]
        lines.append(
            f"calls per path {calls['llm_calls_per_path']['median']:.1f}, naive "
            f"{calls['naive_calls_per_path']['median']:.1f}, cached rerun "
            f"{calls['cached_rerun']['llm_calls']['median']:.0f}"
        )
    if load:
        for lv in load["levels"]:
            lines.append(
                f"load N={lv['clients']:<4} {lv['throughput_per_min']['median']:.0f} runs/min  "
                f"p50 {lv['event_latency_p50_ms']['median']:.1f}ms  "
                f"p99 {lv['event_latency_p99_ms']['median']:.0f}ms  "
                f"errors {lv['errors']['median']:.0f}  RSS {lv['peak_rss_mib']['median']:.0f}MiB"
            )
        lines.append(f"load knee at ~{load['knee_clients']} clients")
    if memory:
        rss = ", ".join(f"{k}: {v['median']:.1f}" for k, v in memory["rss_mib"].items())
        lines.append(
            f"memory RSS MiB after runs {rss}; growth {memory['growth']['median'] * 100:+.1f}%"
        )
    if quality:
        for strategy, t in quality["totals"].items():
            lines.append(
                f"quality {strategy:<11} success {t['success']:.2f}  regret {t['regret']:.3f}  "
                f"calls {t['llm_calls']:.0f}  serial {t['serial_calls']:.0f}  "
                f"solved {len(t['solved'])}/{len(quality['cells'])}"
            )
    return "\n".join(lines)


def _redraw(
    docs: Path, results: Path, info: dict[str, Any], run_info: dict[str, Any]
) -> tuple[Any, Any, Any, Any]:
    """Plots and docs/benchmarks.md from every result in `results`; the results the terminal
    summary reads."""
    search = _load_json(results / "search.json")
    load = _load_json(results / "load.json")
    memory = _load_json(results / "memory.json")
    quality = _load_json(results / "quality.json")
    sections = {name: _load_json(results / f"{name}.json") for name in _SECTIONS}
    # The multi-hop benchmark with other models: `--results` a directory of `results` each.
    multihop_more = [
        (data, shown_path(path.parent))
        for path in sorted(results.glob("*/multihop.json"))
        if (data := _load_json(path)) is not None
    ]
    # A first path's evidence read again (`python -m bench.readings`): `*/readings.json`.
    readings = [
        (data, shown_path(path))
        for path in sorted(results.glob("*/readings.json"))
        if (data := _load_json(path)) is not None
    ]
    if search:
        plots.critical_path(search, results / "critical_path.png")
        plots.sequential(search, results / "sequential.png")
        plots.calls(search, results / "calls.png")
    if load:
        plots.load(load, results / "load.png")
    if memory:
        plots.memory(memory, results / "memory.png")
    if quality:
        plots.quality(quality, results / "quality.png")
        plots.quality_curve(quality, results / "quality_curve.png")
    report.write(
        docs,
        results,
        info,
        search,
        load,
        memory,
        run_info.get("all_seconds"),
        quality,
        by_name=sections,
        multihop_more=multihop_more,
        multihop_readings=readings,
    )
    return search, load, memory, quality


def _parser() -> argparse.ArgumentParser:
    """The command line of `python -m bench`."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--only",
        default=None,
        help=f"comma-separated subset of {BENCHMARKS + OPT_IN} (default: all but {OPT_IN})",
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--docs", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, to check that everything still runs"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="quick sizes: the quality suite (3 seeds, a 3-point curve; under 3 minutes), "
        "one repetition of the search benchmarks, three load levels",
    )
    parser.add_argument(
        "--cpu-against",
        type=Path,
        default=None,
        help="another checkout whose CPU per run (benchmarks 8 and 16) is measured side by side "
        "with this one",
    )
    parser.add_argument(
        "--model-path",
        type=Path,
        default=None,
        help="GGUF file for local_prefix (default: the file of LATS_LOCAL_MODEL)",
    )
    parser.add_argument(
        "--report", action="store_true", help="run nothing; redraw plots and docs from --results"
    )
    parser.add_argument(
        "--soak-minutes",
        type=float,
        default=None,
        help=f"how long the soak runs (default {SoakConfig.duration_s / 60:g})",
    )
    multihop = parser.add_argument_group("multihop (only with --only multihop)")
    multihop.add_argument(
        "--data",
        type=data_path,
        default=HOTPOTQA_DEV_100,
        help=f"a vendored set ({', '.join(DATASETS)}; default hotpotqa) or a JSON Lines file "
        "in the shared format",
    )
    multihop.add_argument(
        "--corpus",
        choices=MULTIHOP_SETTINGS,
        default="distractor",
        help="distractor: each question searches its own paragraphs; pooled: every question "
        "searches one index of every paragraph of the data file",
    )
    multihop.add_argument("--limit", type=int, default=None, help="the first N questions")
    multihop.add_argument(
        "--offset",
        type=_count,
        default=0,
        help="skip the first N questions (with --limit: questions N+1 to N+limit)",
    )
    multihop.add_argument(
        "--model",
        default=None,
        help="init_chat_model string, `local` (LATS_LOCAL_MODEL's model) or `scripted` "
        "(testkit's reader); default: LATS_MODEL as the service reads it",
    )
    multihop.add_argument(
        "--configs",
        default=",".join(DEFAULT_CONFIGS),
        help=f"comma-separated, of {', '.join(CONFIGS)}",
    )
    multihop.add_argument(
        "--measured",
        default="",
        help="comma-separated configurations reported from the rows already measured "
        "(multihop.progress.jsonl in --results), over the questions they have, never run",
    )
    multihop.add_argument(
        "--budget", type=int, default=MultihopConfig.max_llm_calls, help="model calls per run"
    )
    multihop.add_argument(
        "--ids",
        default="",
        help="comma-separated question ids (or their beginnings): only these questions",
    )
    multihop.add_argument(
        "--traces",
        type=Path,
        default=None,
        help="a directory to write each run's whole tree to, <id>-<configuration>.json",
    )
    multihop.add_argument(
        "--shard",
        default="0/1",
        help="i/n: only every n-th question from the i-th (n processes share one run)",
    )
    return parser


def _count(text: str) -> int:
    """A whole number of at least 0, for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"want a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"want 0 or more, not {value}")
    return value


def _shard(text: str) -> tuple[int, int]:
    index, _, of = text.partition("/")
    try:
        return int(index), int(of)
    except ValueError:
        raise SystemExit(f"--shard {text!r}: want i/n, e.g. 0/2") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    chosen = args.only or ",".join(SMOKE_DEFAULT if args.smoke else BENCHMARKS)
    only = [] if args.report else [x.strip() for x in chosen.split(",") if x.strip()]
    known = BENCHMARKS + OPT_IN
    unknown = sorted(set(only) - set(known))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(known)}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)

    results: Path = args.results
    results.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-"))
    started = time.monotonic()
    try:
        configs = SMOKE if args.smoke else FULL
        if args.quick and not args.smoke:
            configs = {**configs, **QUICK_SPEED, "quality": QUICK}
        if args.cpu_against is not None:
            configs = {
                **configs,
                "cpu": replace(configs["cpu"], against=args.cpu_against),
                "worker_cpu": replace(configs["worker_cpu"], against=args.cpu_against),
            }
        if args.soak_minutes is not None:
            soak = replace(configs["soak"], duration_s=args.soak_minutes * 60)
            configs = {**configs, "soak": soak}
        if args.model_path is not None:
            local = replace(configs["local_prefix"], model_path=args.model_path)
            configs = {**configs, "local_prefix": local}
        questions = MultihopConfig(
            data=args.data,
            limit=args.limit,
            offset=args.offset,
            corpus=args.corpus,
            configs=tuple(c.strip() for c in args.configs.split(",") if c.strip()),
            measured=tuple(c.strip() for c in args.measured.split(",") if c.strip()),
            max_llm_calls=args.budget,
            shard=_shard(args.shard),
            settings=engine_settings_for(args.model),
            progress=results / "multihop.progress.jsonl",
            ids=tuple(i.strip() for i in args.ids.split(",") if i.strip()),
            traces=args.traces,
        )
        fresh = asyncio.run(_run(only, configs, results, work, questions, args.model))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds = time.monotonic() - started

    # A redraw keeps the machine as it was when the numbers were measured (its load too).
    measured = (_load_json(results / "run.json") or {}).get("machine")
    info = measured if args.report and measured else machine.describe()
    for name, data in fresh.items():
        _save(results / f"{name}.json", data)
    run_info = _load_json(results / "run.json") or {}
    run_info = {**run_info, "machine": info, "last": only, "last_seconds": seconds}
    if set(only) == set(BENCHMARKS):
        run_info["all_seconds"] = seconds
    _save(results / "run.json", run_info)

    if results.resolve().parent == RESULTS.resolve():
        # Another model's multi-hop results, below the page's own: the page is drawn from the
        # page's results (which then show these as a table of their own), as they were.
        page_info = _load_json(RESULTS / "run.json") or {}
        page_machine = page_info.get("machine", info)
        search, load, memory, quality = _redraw(args.docs, RESULTS, page_machine, page_info)
    else:
        search, load, memory, quality = _redraw(args.docs, results, info, run_info)
    summaries: dict[str, Callable[[Any], list[str]]] = {
        "quota": quota_summary,
        "workers": workers_summary,
        "storm": storm_summary,
        "multihop": multihop_summary,
        "local_prefix": local_prefix_summary,
        "faults": faults_summary,
        "in_flight": in_flight_summary,
        "tool_spacing": tool_spacing_summary,
        "worker_cpu": worker_cpu_summary,
        "soak": soak_summary,
        "documents": documents_summary,
    }
    extra = "".join(
        f"\n{line}"
        for name, summarise in summaries.items()
        if fresh.get(name)
        for line in summarise(fresh[name])
    )
    summary = _summary(search, load, memory, quality) + extra
    sys.stdout.write(summary + f"\n\ndone in {seconds / 60:.1f} min\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
