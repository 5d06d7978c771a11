"""The quota sweep's and the CPU benchmark's sections of docs/benchmarks.md (benchmarks 7
and 8), from `bench/results/quota.json` and `bench/results/cpu.json`."""

from __future__ import annotations

from typing import Any

from bench.stats import fmt


def quota_section(quota: dict[str, Any]) -> list[str]:
    low, high = quota["latency_ms"]
    lines = [
        "## 7. Quota sweep",
        "",
        f"**What it measures.** {quota['runs']} concurrent runs of the `wide` tree at DEFAULT "
        "settings through the real `langchain-google-genai` client and the call policy, "
        "against the Gemini simulator (`testkit/gemini_sim.py`) in quota mode: a token bucket "
        "of the given requests per second (burst: one second of quota) that refuses requests "
        "beyond it with Gemini's 429 `RESOURCE_EXHAUSTED` body and a `RetryInfo` delay. The "
        f"simulator answers in {low:g}-{high:g} ms. Shares come from the simulator's own log: "
        "*used* is the requests it admitted over what the bucket could admit between the first "
        "and the last request; *refused* is the share of requests answered 429.",
        "",
        "| quota | share of the quota used | requests refused (429) | runs done | wall s |",
        "| --- | --- | --- | --- | --- |",
    ]
    for point in quota["points"]:
        used, refused = point["used"], point["rejected"]
        lines.append(
            f"| {point['rps']:g} requests/s | {used['median'] * 100:.0f} % | "
            f"{refused['median'] * 100:.1f} % | {point['runs_done']} of {quota['runs']} | "
            f"{fmt(point['wall_s'], 1)} |"
        )
    lines += [
        "",
        "The adaptive limit (`calls/aimd.py`) learns the quota from the 429s: it backs off on "
        "each, waits the provider's `retryDelay`, and creeps back up while calls succeed, so "
        "the runs use most of a tight quota with few refusals; with a loose quota the runs "
        "themselves, not the quota, set the pace.",
        "",
    ]
    return lines


def cpu_section(cpu: dict[str, Any]) -> list[str]:
    lines = [
        "## 8. CPU per run",
        "",
        f"**What it measures.** `python -m bench.cpu`: {cpu['runs']} runs of the "
        f"`{cpu['scenario']}` tree in one process, {cpu['concurrent']} at a time, scripted "
        "models answering at once behind the call policy at its defaults, the model cache off; "
        "the process's CPU time (`getrusage`, user + system) over the runs, per run. It is "
        "what one run costs the event loop's core, so what bounds one process's throughput "
        "when nothing else does. Each measurement is a fresh process; "
        f"{cpu['cpu_s_per_run']['n']} of them.",
        "",
    ]
    against = cpu.get("against")
    if against is None:
        lines.append(f"CPU-seconds per run: **{fmt(cpu['cpu_s_per_run'], 4)}**.")
    else:
        lines += [
            f"Side by side with `{against['tree']}` (another checkout, measured alternately "
            "with this one, so the machine's noise hits both alike):",
            "",
            "| code | CPU-seconds per run |",
            "| --- | --- |",
            f"| `{against['tree']}` | {fmt(against['cpu_s_per_run'], 4)} |",
            f"| this checkout | {fmt(cpu['cpu_s_per_run'], 4)} |",
            f"| **ratio within each pair** | **{fmt(against['ratio'], 2)}** |",
            "",
            "What changed between them, and the earlier round before it: `docs/models.md` "
            "(CPU per run).",
        ]
    lines += [
        "",
        f"(load average {cpu['load_average']:.1f} on the 2 cores when it ended: absolute "
        "figures move with the machine's load, the ratio much less.)",
        "",
    ]
    return lines
