"""The storm's section of docs/benchmarks.md (benchmark 10, bench/storm.py), from
bench/results/storm.json."""

from __future__ import annotations

from typing import Any

from bench.stats import fmt, spread

RACE_S = 1.0  # a cancel sent this close to its run's end lost a race, not a wait


def section(storm: dict[str, Any]) -> list[str]:
    config = storm["config"]
    processes = ", ".join(f"`{command}`" for command in config["processes"])
    lines = [
        "## 10. Storm: runs and cancels across processes",
        "",
        f"**What it measures.** `python -m bench --only storm` runs the storm of "
        "`tests/e2e/server/test_storm.py` through the same code (`testkit/storm.py`): "
        f"{storm['processes']} service processes ({processes}; the real Gemini client against "
        f"the simulator, {config['sim_latency_s'] * 1000:g} ms a call, "
        f"`max_active_runs={config['max_active_runs']}`) on one throwaway Postgres database "
        f"and one Redis. {config['runs']} runs are started through random processes; "
        f"{config['cancels']} of them are cancelled through a random process at a random "
        f"moment, up to {config['cancel_within_s']:g} s after one of {config['threads']} "
        "followers takes the run up (queued, running or already done); every run is followed "
        "to its end from a random process and its history checked: ids 1..n without a gap, "
        "exactly one terminal event and the last, the run's status equal to it, a `done` "
        "run's answer in `GET /runs/{id}`, the stored trace equal to the stream, and a cancel "
        "that answered a final status not contradicted by the end.",
        "",
        *_outcome(storm),
        "",
    ]
    if storm["problems"]:
        lines += ["The first broken histories:", ""]
        lines += [f"- {problem}" for problem in storm["problems"]]
        lines.append("")
    return lines


def _outcome(storm: dict[str, Any]) -> list[str]:
    terminals: dict[str, int] = storm["terminals"]
    whole = storm["whole"]
    mark = "**" if whole == storm["runs"] else ""
    done = terminals.get("done", 0)
    late = storm["cancelled_too_late"]
    rest = ", ".join(f"{n} {kind}" for kind, n in terminals.items() if kind != "done")
    text = (
        f"Outcome: {mark}{whole} of {storm['runs']} histories whole{mark}; {done} done (the "
        f"{storm['done_never_cancelled']} never cancelled and {late} whose cancel came too "
        f"late){', ' + rest if rest else ''}; the storm took {storm['seconds']:.0f} s (the "
        f"processes' start not counted). {_tracebacks(storm)}"
    )
    if not late:
        return [text]
    config = storm["config"]
    rows = storm["too_late"]
    late_by = [row["late_by_s"] for row in rows if row["late_by_s"] is not None]
    return [
        text,
        "",
        f"Why a cancel comes too late: the storm starts all {storm['runs']} runs before it "
        f"sends any cancel ({storm['starting_s']:.1f} s here), a cancel then waits for one of "
        f"the {config['threads']} followers and up to {config['cancel_within_s']:g} s more, "
        f"and a run ended `done` {fmt(storm['run_s']['done'], 1, ' s')} after it was created "
        f"(median, min-max). The {len(rows)} cancels too late were sent "
        f"{fmt(spread(late_by), 1, ' s')} after their run had ended: {_races(late_by)} "
        f"{_late_answers(rows)}",
    ]


def _races(late_by: list[float]) -> str:
    close = sum(x < RACE_S for x in late_by)
    if not close:
        return f"each more than {RACE_S:g} s after, no close race lost."
    return (
        f"{len(late_by) - close} more than {RACE_S:g} s after, {close} within {RACE_S:g} s (a "
        "race the cancel lost)."
    )


def _tracebacks(storm: dict[str, Any]) -> str:
    tracebacks, claims = storm["tracebacks"], storm["api_claims"]
    logs = "no traceback in the processes' logs" if not tracebacks else f"{tracebacks} tracebacks"
    api = (
        "the API-only process claimed no run"
        if not claims
        else f"the API-only process claimed {claims} runs"
    )
    return f"{logs[0].upper()}{logs[1:]}; {api}."


def _late_answers(rows: list[dict[str, Any]]) -> str:
    """What the cancels too late answered: `done`, as `POST /runs/{id}/cancel` promises for a
    finished run, or a status the run was still in when the cancel's wait ended."""
    answers = [row["cancel_answer"] for row in rows]
    done = answers.count("done")
    if done == len(answers):
        return "Each was answered `done`: a finished run is left as it is."
    others = ", ".join(sorted({f"`{a}`" for a in answers if a != "done"}))
    return (
        f"{done} of them were answered `done` (a finished run is left as it is), the others "
        f"{others}, the run's status when the cancel's wait ended."
    )
