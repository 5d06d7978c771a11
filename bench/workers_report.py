"""The "Shared runs" section of docs/benchmarks.md: benchmark 8 (bench/workers.py) and the
outcome of the storm test (tests/e2e/server/test_storm.py), recorded in
bench/results/storm.json from its last run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def section(data: dict[str, Any], results: Path) -> list[str]:
    config = data["config"]
    lines = [
        "## 8. Shared runs: worker processes",
        "",
        f"One API-only process (`serve --no-worker`) and 1 or 2 worker processes (`lats "
        f"worker`) on one Postgres database and one Redis; {config['clients']} closed-loop "
        f"`/solve` clients on the API process for {config['duration_s']:g} s each; scripted "
        f"models ({config['latency']}, scenario `{config['scenario']}`) behind the production "
        f"call policy with default settings; `max_active_runs={config['max_active_runs']}` "
        "per worker, so that a worker is bound by its CPU rather than by its slots. Every "
        "event is created on a worker and reaches the client through the API process (store "
        "write, Redis signal, the API process's read, SSE): the latency below is that "
        "cross-process path, from the event's `ts` to its receipt.",
        "",
        "| workers | runs/min | errors | event latency p50 | p99 | CPU (API, workers) |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    for row in data["rows"]:
        cpu = ", ".join(f"{v:.2f}" for v in row["cpu_util"].values())
        lines.append(
            f"| {row['workers']} | {row['runs_per_min']:.0f} | {row['errors']} "
            f"| {row['event_latency_p50_ms']:.0f} ms | {row['event_latency_p99_ms']:.0f} ms "
            f"| {cpu} |"
        )
    lines += ["", f"Speed-up with 2 workers: **{data['speedup']:.2f}x**.", ""]
    storm = results / "storm.json"
    if storm.exists():
        s = json.loads(storm.read_text())
        lines += [
            f"**Storm test** (`{s['test']}`): {s['runs']} runs started and {s['cancels']} "
            f"cancelled at random moments through random processes of {s['processes']}; "
            f"every run ended with exactly one terminal event, ids 1..n without a gap, its "
            f"status equal to its terminal event and each `done` run's answer in "
            f"`GET /runs/{{id}}`. Outcome: {s['outcome']}, in {s['seconds']:.0f} s.",
            "",
        ]
    return lines
