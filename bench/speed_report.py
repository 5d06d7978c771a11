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


def in_flight_section(data: dict[str, Any]) -> list[str]:
    config = data["config"]
    low, high = config["latency_ms"]
    replicas = max(p.get("replicas", 1) for p in data["points"])
    lines = [
        "## 14. The in-flight cap: fixed and adaptive",
        "",
        "**What it measures.** `python -m bench --only in_flight` runs, in one process, N clients "
        "that each run one search after another (the `small` scenario, `use_cache=false`) for "
        f"{config['duration_s']:g} s through the production call policy, against a scripted "
        f"provider that takes {low:g}-{high:g} ms a call and refuses a call with a 429 (asking "
        f"to come back in 0.2 s) while {config['provider_in_flight']} are already in its hands. "
        "*Fixed 16*: the cap as it was (the adaptive cap with its ceiling at 16); *adaptive*: "
        "the cap as it is now, starting at 16 under a ceiling of 256 (`calls/concurrency.py`). "
        f"*{replicas} processes*: the clients split between two engines with a limiter each, "
        "as two service processes have, against the same one provider: *one cap each* "
        "(in-process limiters, as two processes without Redis have: each learns its own cap, "
        "and the cap at the end is their sum) or *shared* through Redis (`LATS_REDIS_URL`: one "
        "rate and one cap for the deployment, `app/backends/in_flight_redis.py`). "
        "Side by side in one run.",
        "",
        "| clients | cap | runs/min | model calls/s | 429s | provider's most at once "
        "| cap at the end |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in data["points"]:
        lines.append(
            f"| {p['clients']} | {p['cap']} | {p['runs_per_min']:g} | {p['calls_per_s']:g} "
            f"| {p['rate_limited']} | {p['provider_most_in_flight']} | {p['cap_at_end']} |"
        )
    if replicas > 1:
        lines += [
            "",
            "**Reading.** With a cap each, two processes learn two caps and together are "
            "refused by the provider more often (the 429s above); shared, they learn one and "
            "are refused less. The shared rows complete fewer runs a minute: each of their "
            "calls makes two Redis round trips (one to take a place and a rate slot, one to "
            "report the answer) on the one CPU both engines share in this benchmark, and a "
            "place freed by the other process is seen up to 50 ms late; the rows with a cap "
            "each use no Redis at all.",
        ]
    lines.append("")
    return lines


def tool_spacing_section(data: dict[str, Any]) -> list[str]:
    config = data["config"]
    low, high = config["latency_ms"]
    lines = [
        "## 15. A spaced tool: one tool call per step",
        "",
        "**What it measures.** `python -m bench --only tool_spacing` grows the 6-path tree of "
        "benchmark 1 with one `web_search` call per step, through the production tool runtime "
        f"with one call every {config['interval_s']:g} s (`LATS_TOOL_MIN_INTERVAL_S`, as "
        "arXiv asks), a distinct query per step and an instant answer, at the defaults "
        "(`mcts`, `max_concurrency` 4, whose slots no longer count a job inside a tool call: "
        "docs/architecture.md, *Slots*), and the plain sequential agent (one path, one call "
        f"at a time) with the same tool, side by side in each of {config['repetitions']} "
        f"repetitions. Models scripted, {low:g}-{high:g} ms a call, behind the call policy. A "
        "step whose tool slot is more than two intervals away is told the tool is rate "
        "limited (*throttled*) and answers without it. *In flight*: the model calls' summed "
        "latency over the wall. The bound is the critical path, each step's tool wait "
        "included (`bench/critical.py`). Medians (min-max).",
        "",
        "| configuration | wall | bound | wall / bound | model calls in flight | tool calls "
        "| throttled | paths | s per path |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, c in data["cells"].items():
        lines.append(
            f"| {label} | {fmt(c['wall_s'])} s | {fmt(c['bound_s'])} s | {fmt(c['ratio'])} "
            f"| {fmt(c['mean_model_calls_in_flight'])} | {fmt(c['tool_calls'], 0)} "
            f"| {fmt(c['throttled'], 0)} | {fmt(c['paths'], 0)} | {fmt(c['s_per_path'])} |"
        )
    speedup = data["speedup_per_path"]
    return [
        *lines,
        "",
        f"Per completed path the defaults are **{speedup:.2f}x** the plain agent's speed with "
        "the same tool (goal 4x, as without tools).",
        *_spacing_bound(data),
        "",
    ]


def _spacing_bound(data: dict[str, Any]) -> list[str]:
    """What the spacing alone allows: the tool's calls start `interval_s` apart, so n calls
    take (n - 1) intervals whatever the search does; how many the tree could make for 4x."""
    cells, interval = data["cells"], float(data["config"]["interval_s"])
    ours, plain = cells.get("defaults"), cells.get("plain sequential agent")
    if ours is None or plain is None:
        return []

    def med(cell: dict[str, Any], key: str) -> float:
        return float(cell[key]["median"])

    spaced = {
        name: (med(c, "tool_calls") - 1) * interval for name, c in (("o", ours), ("p", plain))
    }
    rest = med(ours, "wall_s") - spaced["o"]
    wall_for_4x = med(ours, "paths") * med(plain, "s_per_path") / 4
    calls_for_4x = int(max(0.0, wall_for_4x - rest) // interval) + 1
    busy = med(ours, "mean_model_calls_in_flight") * med(ours, "wall_s")
    return [
        "",
        f"Both are held by the spacing: the defaults' {med(ours, 'tool_calls'):.0f} calls "
        f"cannot start in less than {spaced['o']:g} s (of a {med(ours, 'wall_s'):.1f} s wall), "
        f"the plain agent's {med(plain, 'tool_calls'):.0f} in less than {spaced['p']:g} s (of "
        f"{med(plain, 'wall_s'):.1f} s). With the rest of the tree's time as it is "
        f"({rest:.1f} s), 4x would allow it at most {calls_for_4x} spaced calls for its "
        f"{med(ours, 'paths'):.0f} paths: fewer tool calls, so fewer facts found, which the "
        "defaults do not trade for speed (steps whose slot is further away than two intervals "
        "already answer without the tool). The same bound holds the calls in flight (the "
        "model calls' summed latency over the wall): the tree's model calls take "
        f"{busy:.1f} s in all, so 2 in flight would need a wall of {busy / 2:.1f} s, under the "
        f"{spaced['o']:g} s the spacing alone takes. Each measurement has a spacing of its "
        "own: with the process's shared one, a run waited for the slot after the previous "
        "measurement's last call.",
    ]


def worker_cpu_section(data: dict[str, Any]) -> list[str]:
    """Benchmark 16: this checkout's worker CPU per run, beside the other checkout's."""
    this = data["this"]
    lines = [
        "## 16. A worker's CPU per run on Postgres + Redis",
        "",
        "**What it measures.** `python -m bench --only worker_cpu --cpu-against DIR` (or "
        "`python -m bench.worker_cpu --against DIR`): the deployment of benchmark 9 with one "
        "worker (an API-only process and a worker process on the local Postgres and Redis, "
        "scripted models behind the production call policy, 100-400 ms a call, the `small` "
        f"tree), {data['clients']} closed-loop clients for {data['duration_s']:g} s, every "
        "task new to the caches. Per run that ended `done`: the worker's CPU (user + system), "
        "the database's committed transactions (both processes') and the Redis server's "
        "commands (both processes', the scripts' own commands included). Each measurement is "
        "a fresh database and fresh processes; the two checkouts alternate, and the ratio is "
        "taken within each pair. Medians (min-max).",
        "",
        "| code | runs | worker CPU ms per run | transactions per run | Redis commands per run |",
        "|---|---|---|---|---|",
    ]
    rows = [("this checkout", this, data["runs"])]
    if (against := data.get("against")) is not None:
        rows.insert(0, (f"`{against['tree']}`", against, against["runs"]))
    for label, side, runs in rows:
        lines.append(
            f"| {label} | {sum(runs)} | {fmt(side['worker_cpu_ms_per_run'], 1)} "
            f"| {fmt(side['transactions_per_run'], 1)} | {fmt(side['redis_commands_per_run'], 0)} |"
        )
    if against is not None:
        lines += [
            "",
            f"**Ratio within each pair: {fmt(against['ratio'])}** (goal 0.70: 30 % less). What "
            "changed: a round's state writes land with its checkpoint instead of in a "
            "transaction of their own as well (docs/architecture.md, *The service*: the "
            "checkpointer); a run's steering commands are read only when it may have new ones "
            "(a signal, or 1 s since the last read) instead of every round; a worker claims "
            "as many waiting runs as it has room for in one statement and stops when fewer "
            "came back; a new run's first two checkpoints (before any node ran) are saved with "
            "its plan's; the events of one moment of a round (the starts of the jobs it "
            "launches, what the jobs that ended say) are stored in one write. What is left is "
            "per round and per call, not per event: LangGraph's supersteps and a checkpoint "
            "each, LangChain's callbacks around each model call, and each call's round trips "
            "to Redis (the cache, the shared rate and in-flight cap). The milliseconds depend "
            "on the machine (the same code measures differently on another one); the ratio "
            "within a pair is what compares the code.",
        ]
    lines.append("")
    return lines


def worker_cpu_closing(data: dict[str, Any] | None) -> list[str]:
    """Benchmark 16's target, for the closing note (when it was measured against a checkout)."""
    if data is None or data.get("against") is None:
        return []
    ratio = data["against"]["ratio"]
    met = "**met**" if ratio["median"] <= 0.7 else "**missed**"
    return [
        f"- A worker's CPU per run on Postgres + Redis, 30 % less: {met} (ratio "
        f"{fmt(ratio)} against `{data['against']['tree']}`)."
    ]
