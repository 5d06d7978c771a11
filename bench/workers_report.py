"""The "Shared runs" section of docs/benchmarks.md: benchmark 9 (bench/workers.py)."""

from __future__ import annotations

from typing import Any

TARGET = 1.6  # the speed-up two workers should bring over one
P99_TARGET_MS = 100.0  # the cross-process event latency aimed at


def section(data: dict[str, Any]) -> list[str]:
    config = data["config"]
    lines = [
        "## 9. Shared runs: worker processes",
        "",
        f"One API-only process (`serve --no-worker`) and 1 or 2 worker processes (`lats "
        f"worker`) on one Postgres database and one Redis; {config['clients']} closed-loop "
        f"`/solve` clients on the API process for {config['duration_s']:g} s each; scripted "
        f"models ({config['latency']}, scenario `{config['scenario']}`) behind the production "
        f"call policy with default settings; `max_active_runs={config['max_active_runs']}` "
        "per worker (with the default 4 the comparison would be one of slots alone). Every "
        "event is created on a worker and reaches the client through the API process (store "
        "write, Redis signal, the API process's read, SSE): the latency below is that "
        "cross-process path, from the event's `ts` to its receipt. The clients start spread "
        f"over the first {config.get('ramp_s', 0):g} s; p50 and p99 are those of the runs "
        "started after that (the steady state), *p99 all* counts every run.",
        "",
        "| workers | CPU per worker | runs/min | errors | event latency p50 | p99 | p99 all "
        "| slowest 1 % by event type | CPU ms per run: API, workers, Postgres, Redis, "
        "clients |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in data["rows"]:
        every = row.get("event_latency_p99_all_ms", row["event_latency_p99_ms"])
        tail = ", ".join(f"{k} {n}" for k, n in row.get("tail_by_type", {}).items())
        share = row.get("worker_cpus")
        per_run = row.get("cpu_per_run_s", {})
        cpu = ", ".join(f"{v * 1000:.0f}" for v in per_run.values()) or "-"
        lines.append(
            f"| {row['workers']} | {'machine' if share is None else f'{share:g} core'} "
            f"| {row['runs_per_min']:.0f} | {row['errors']} "
            f"| {row['event_latency_p50_ms']:.0f} ms | {row['event_latency_p99_ms']:.0f} ms "
            f"| {every:.0f} ms | {tail or '-'} | {cpu} |"
        )
    lines += ["", *_reading(data), ""]
    worst_row = max(data["rows"], key=lambda row: row["event_latency_p99_ms"])
    worst = worst_row["event_latency_p99_ms"]
    if worst > P99_TARGET_MS:
        lines += [
            f"The cross-process p99 ({worst:.0f} ms with {worst_row['workers']} workers) is "
            f"above the {P99_TARGET_MS:.0f} ms aimed at. With every slot busy "
            f"({config['max_active_runs']} runs per worker) the API process, the workers, "
            "Postgres, Redis and the clients share the machine's 2 cores; the median shows the "
            f"path itself is short.{_tail_reading(worst_row)} Not reached here.",
            "",
        ]
    else:
        every = max(r.get("event_latency_p99_all_ms", 0.0) for r in data["rows"])
        lines += [
            f"Cross-process p99 in the steady state: {worst:.0f} ms at most, within the "
            f"{P99_TARGET_MS:.0f} ms aimed at ({every:.0f} ms over every run, the ramp's "
            "included).",
            "",
        ]
    return lines


def _tail_reading(row: dict[str, Any]) -> str:
    tail: dict[str, int] = row.get("tail_by_type", {})
    if not tail:
        return ""
    kind, count = next(iter(tail.items()))
    share = count / sum(tail.values())
    if kind != "run_started" or share < 0.5:
        return ""
    return (
        f" Most of the slowest 1 % ({count} of {sum(tail.values())}) are `run_started`, the "
        "one event the API process writes itself, as it creates the run: on a saturated "
        "machine the creation waits for the API process's connection pool and CPU, not for "
        "another process."
    )


def _contention(rows: list[dict[str, Any]]) -> str:
    """What a run cost the workers with one and with two on the whole machine."""
    whole = [r for r in rows if r.get("worker_cpus") is None and "cpu_per_run_s" in r]
    if len(whole) < 2:
        return ""
    one, two = (r["cpu_per_run_s"]["workers"] * 1000 for r in (whole[0], whole[-1]))
    return (
        f" With {whole[-1]['workers']} workers a run cost the workers {two:.0f} ms of CPU "
        f"against {one:.0f} ms with one: the busy worker processes and the rest of the "
        "deployment take turns on the same cores."
    )


def _reading(data: dict[str, Any]) -> list[str]:
    """The speed-up on the whole machine against what its cores allow, and with a share of a
    core per worker."""
    speedups: dict[str, float] = data.get("speedups", {"whole": data["speedup"]})
    whole = speedups.get("whole", 0.0)
    ceiling = data.get("ceiling", 0.0)
    cores = data.get("cores", 2)
    lines = []
    if ceiling:
        lines.append(
            f"**Whole machine: {whole:.2f}x** with 2 workers. Every process of the "
            f"deployment runs on the same {cores} cores; at one worker's rate a run costs the "
            "CPU in the last column (the API process, the worker, Postgres, Redis and the "
            f"benchmark's own clients), so the {cores} cores carry at most {ceiling:.2f}x one "
            f"worker's runs/min, whatever the workers do: the {TARGET}x aimed at needs more "
            "cores than the deployment has here, or a worker that costs far more than the rest "
            "of the deployment per run." + _contention(data["rows"])
        )
    else:
        lines.append(f"**Whole machine: {whole:.2f}x** with 2 workers.")
    for key, value in speedups.items():
        if key == "whole":
            continue
        met = value >= TARGET
        lines.append(
            f"**{key} core per worker: {value:.2f}x** ({'met' if met else 'not met'}; "
            f"{TARGET}x aimed at). Each worker held to {key} of a core (a cgroup quota, "
            "bench/cpu_share.py), as on a slice of its own, with the rest of the deployment "
            "left the other cores: "
            + (
                "the second worker adds nearly what the first does, so nothing shared (the "
                "store, Redis, the API process, the admission count) holds it back."
                if met
                else "the second worker adds less than the first does, so something shared "
                "(the store, Redis, the API process or the admission count) holds it back."
            )
        )
    if data.get("no_share"):
        lines.append(f"No CPU share per worker was set: {data['no_share']}.")
    return ["\n\n".join(lines)]
