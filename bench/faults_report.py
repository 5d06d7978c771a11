"""The fault table and the soak's sections of docs/benchmarks.md (benchmarks 12 and 13,
bench/faults.py and bench/soak.py), from bench/results/faults.json and soak.json."""

from __future__ import annotations

from typing import Any

FAULT_TEXT = {
    "redis_refused": "Redis killed (connections refused), started again",
    "redis_hung": "Redis frozen (SIGSTOP: accepts, never answers), woken",
    "postgres_down": "Postgres cut (every connection dropped, new ones refused), restored",
    "postgres_down_past_wait": "Postgres cut for longer than `LATS_STORE_OUTAGE_S`, restored",
    "postgres_hung": "Postgres hung (connections held, nothing forwarded), restored",
    "worker_killed": "one of the two processes SIGKILLed, started again",
    "worker_frozen": "one of the two processes frozen (SIGSTOP) past its lease, woken",
    "silent_readers": "silent readers: SSE connections that never read, closed",
    "disk_full": "the embedded store's disk filled, space given back",
}


def _ends(terminals: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in terminals.items())


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:g}"


def faults_section(faults: dict[str, Any]) -> list[str]:
    config = faults["config"]
    lines = [
        "## 12. Faults: what runs in flight go through",
        "",
        "**What it measures.** `python -m bench --only faults` strikes each fault of the fault "
        "tests (`tests/e2e/server`, `tests/integration/backends/test_redis_outages.py`) while "
        f"{config['runs']} runs are in flight, in turn, on one deployment: two `serve` "
        "processes (the real Gemini client against the simulator, "
        f"{config['sim_latency_s'] * 1000:g} ms a call) on a throwaway Postgres database "
        "reached through a TCP proxy of the benchmark's own, and a `redis-server` of its own; "
        f"`LATS_STORE_OUTAGE_S={config['store_outage_s']:g}`, "
        f"`LATS_LEASE_TTL_S={config['lease_ttl_s']:g}`. The full disk strikes one `serve` on "
        "the embedded store with its data on a 24 MiB tmpfs. Each fault strikes "
        f"{config['strike_after_s']:g} s after its runs were started and lasts "
        f"{config['hold_s']:g} s ({config['past_wait_s']:g} s past the store's wait; a frozen "
        f"worker {config['lease_ttl_s'] + config['hold_s']:g} s, past its lease; "
        f"{config['silent_readers']} silent readers). Every run is followed by a client that "
        "re-joins after the last id it received (`after`, as `Last-Event-ID`) whenever its "
        "stream breaks or is answered 503, as docs/api.md tells clients to. *Lost*: events in "
        "the stored trace its client never received; *duplicated*: received twice (both "
        "summed over the runs; goal 0). *Whole*: the storm test's history rules. *Accepting*: "
        "from the heal until every process accepts a new run (202); *ended*: from the heal "
        "(and from the strike) until the last run ended.",
        "",
        "| fault | in flight | ended | whole | lost | duplicated | re-joins "
        "| accepting after | last run ended after (after the strike) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in faults["rows"]:
        text = FAULT_TEXT.get(row["fault"], row["fault"])
        if "not_run" in row:
            lines.append(f"| {text} | not run: {row['not_run']} | | | | | | | |")
            continue
        lines.append(
            f"| {text} | {row['in_flight']} of {row['runs']} | {_ends(row['terminals'])} "
            f"| {row['whole']} | {row['lost']} | {row['duplicated']} | {row['rejoins']} "
            f"| {_seconds(row['accepting_s'])} s | {_seconds(row['ended_s'])} s "
            f"({_seconds(row['struck_to_end_s'])} s) |"
        )
    lines += ["", f"Tracebacks in the processes' logs: {faults['tracebacks']}.", ""]
    problems = [p for row in faults["rows"] for p in row.get("problems", [])]
    if problems:
        lines += ["The first broken histories:", "", *[f"- {p}" for p in problems], ""]
    return lines


def soak_section(soak: dict[str, Any]) -> list[str]:
    config = soak["config"]
    api = soak["api"]
    minutes = config["duration_s"] / 60
    lines = [
        f"## 13. Soak: {minutes:g} minutes of runs, cancels and worker restarts",
        "",
        "**What it measures.** `python -m bench --only soak` runs an API process (`serve "
        "--no-worker`) and two `worker` processes (the real Gemini client against the "
        f"simulator, {config['sim_latency_s'] * 1000:g} ms a call) on a throwaway Postgres "
        f"database and the local Redis for {minutes:g} minutes. Runs arrive at "
        f"{config['runs_per_s']:g} a second (Poisson), each followed over SSE through the API "
        f"process; {config['cancel_share'] * 100:g} % of them are cancelled at a random "
        f"moment within {config['cancel_within_s']:g} s. Every "
        f"{config['restart_every_s'] / 60:g} minutes one worker, in turn, is stopped with "
        "SIGTERM (its drain) and started again. Event latency is the moment a client received "
        "a live event minus the event's `ts` (replays after a re-join are not counted).",
        "",
        "| API process | after the warm-up | at the end | change |",
        "|---|---|---|---|",
        f"| RSS (MiB) | {api['start']['rss_mib']:.1f} | {api['end']['rss_mib']:.1f} "
        f"| {api['rss_growth'] * 100:+.1f} % |",
        f"| open files | {api['start']['open_files']} | {api['end']['open_files']} "
        f"| {api['open_files_growth'] * 100:+.1f} % |",
        "",
        f"The warm-up is the first {config['warmup_s']:g} s. Goal: flat within 10 %.",
        "",
        "| window | runs started | ended | whole | live events | p50 latency | p99 latency |",
        "|---|---|---|---|---|---|---|",
    ]
    for w in soak["windows"]:
        start = w["from_s"] / 60
        end = min(config["duration_s"], w["from_s"] + config["window_s"]) / 60
        lines.append(
            f"| {start:g} to {end:g} min | {w['started']} | {_ends(w['ended'])} | {w['whole']} "
            f"| {w['events']} | {w['latency_p50_ms']} ms | {w['latency_p99_ms']} ms |"
        )
    lives = soak["worker_lives"]
    if lives:
        lines += [
            "",
            "Each worker life at its end (its RSS and open files just before the SIGTERM, or "
            "at the soak's end):",
            "",
            "| worker | at | RSS (MiB) | open files | exit |",
            "|---|---|---|---|---|",
        ]
        for life in lives:
            exit_code = "running" if life["exit"] is None else life["exit"]
            lines.append(
                f"| {life['worker']} | {life['at_s'] / 60:.1f} min | {life['rss_mib']:.1f} "
                f"| {life['open_files']} | {exit_code} |"
            )
    lines += ["", f"Tracebacks in the processes' logs: {soak['tracebacks']}.", ""]
    broken = [b for w in soak["windows"] for b in w["broken"]]
    if broken:
        lines += ["The first broken histories:", "", *[f"- {b}" for b in broken[:20]], ""]
    return lines


def _met(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def closing(faults: dict[str, Any] | None, soak: dict[str, Any] | None) -> list[str]:
    """The fault table's and the soak's targets, for the closing note."""
    lines = []
    if faults is not None:
        struck = [row for row in faults["rows"] if "not_run" not in row]
        lost = sum(row["lost"] for row in struck)
        duplicated = sum(row["duplicated"] for row in struck)
        broken = sum(row["runs"] - row["whole"] for row in struck)
        lines.append(
            f"- Faults, no event lost or duplicated, every history whole: "
            f"{_met(lost == duplicated == broken == 0)} ({len(struck)} faults, {lost} lost, "
            f"{duplicated} duplicated, {broken} broken histories)."
        )
    if soak is not None:
        api = soak["api"]
        flat = abs(api["rss_growth"]) <= 0.1 and abs(api["open_files_growth"]) <= 0.1
        lines.append(
            f"- Soak, the API process's RSS and open files flat within 10 %: {_met(flat)} "
            f"(RSS {api['rss_growth'] * 100:+.1f} %, open files "
            f"{api['open_files_growth'] * 100:+.1f} %)."
        )
    return lines
