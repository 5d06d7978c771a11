"""Benchmark 10, the storm: the storm test's deployment and storm (`testkit/storm.py`, the code
`tests/e2e/server/test_storm.py` runs), measured.

Three service processes (`python -m app serve --no-worker`, `serve`, `serve`: the real Gemini
client against the simulator) on a throwaway Postgres database and the local Redis; the runs
started and most of them cancelled at random moments through random processes; every run
followed to its end from a random process and its history checked. Recorded: how many
histories are whole (and what broke in the others), how the runs ended, and the cancels that
came too late: the run ended `done` although it was cancelled, with when the cancel was sent
and when the run had ended, both counted from its creation.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

from bench.stats import spread
from bench.workers import REDIS_URL, fresh_database
from testkit.process import ServerProcess, shared_runs_env
from testkit.storm import RunEnd, StormConfig, StormResult, run_storm

logger = logging.getLogger(__name__)

SHOWN_PROBLEMS = 20  # a broken storm's first problems, kept in the results


def run_storm_bench(config: StormConfig, work_dir: Path) -> dict[str, Any]:
    """One storm on a database of its own; its outcome as bench/results/storm.json holds it."""
    procs: list[ServerProcess] = []
    with fresh_database() as database_url:
        try:
            env = shared_runs_env(work_dir / "storm")
            result = run_storm(config, procs, env, database_url, REDIS_URL)
            logs = [proc.log() for proc in procs]
        finally:
            for proc in procs:
                proc.kill()
    tracebacks = sum(log.count("Traceback") for log in logs)
    if tracebacks:
        log = next(log for log in logs if "Traceback" in log)
        logger.warning("storm: a process logged a traceback:\n%s", _around_traceback(log))
    outcome = summarise(config, result)
    return {
        **outcome,
        "tracebacks": tracebacks,
        # The API-only process executes nothing: no run is claimed in its log.
        "api_claims": logs[0].count("claimed by"),
    }


def summarise(config: StormConfig, result: StormResult) -> dict[str, Any]:
    """Counts of the storm's outcome; the too-late cancels one by one."""
    ends = list(result.ends.values())
    terminals = Counter(end.history.terminal or "no end" for end in ends)
    cancelled = [(end, end.cancel_after_s) for end in ends if end.cancel_after_s is not None]
    too_late = [(end, after) for end, after in cancelled if end.history.terminal == "done"]
    return {
        "config": {
            "runs": config.runs,
            "cancels": config.cancels,
            "seed": config.seed,
            "threads": config.threads,
            "cancel_within_s": config.cancel_within_s,
            "sim_latency_s": config.sim_latency_s,
            "max_active_runs": config.max_active_runs,
            "processes": [" ".join(command) for command in config.commands],
        },
        "runs": len(ends),
        "cancels": len(cancelled),
        "processes": len(config.commands),
        "whole": result.whole,
        "problems": result.problems[:SHOWN_PROBLEMS],
        "terminals": dict(terminals.most_common()),
        "done_never_cancelled": sum(
            end.history.terminal == "done" and end.cancel_after_s is None for end in ends
        ),
        "cancelled_too_late": len(too_late),
        "cancel_answers": dict(Counter(end.cancel_answer or "none" for end, _ in cancelled)),
        "run_s": {kind: spread(_lifetimes(ends, kind)) for kind in ("done", "cancelled")},
        "too_late": [_too_late(end, after) for end, after in too_late],
        "starting_s": result.starting_s,
        "seconds": result.seconds,
    }


def _too_late(end: RunEnd, after: float) -> dict[str, Any]:
    """A done run that was cancelled: when its cancel was sent and when it had ended, both from
    its creation (the client's clock, then the events' `ts`: `late_by_s` near 0 is a race)."""
    ended = end.history.seconds
    return {
        "run": end.index,
        "cancel_after_s": round(after, 3),
        "ended_after_s": None if ended is None else round(ended, 3),
        "late_by_s": None if ended is None else round(after - ended, 3),
        "cancel_answer": end.cancel_answer,
    }


def _lifetimes(ends: list[RunEnd], terminal: str) -> list[float]:
    """From `run_started` to the terminal event, of the runs that ended `terminal`."""
    return [
        end.history.seconds
        for end in ends
        if end.history.terminal == terminal and end.history.seconds is not None
    ]


def _around_traceback(log: str) -> str:
    at = log.find("Traceback")
    return log[max(0, at - 500) :][:4000]


def summary(data: dict[str, Any]) -> list[str]:
    """The storm in two lines for the bench's closing summary."""
    terminals = ", ".join(f"{n} {kind}" for kind, n in data["terminals"].items())
    return [
        f"storm: {data['whole']} of {data['runs']} whole; {terminals}; "
        f"{data['cancelled_too_late']} cancelled too late; {data['seconds']:.0f} s",
        f"storm: {data['tracebacks']} traceback(s), {data['api_claims']} run(s) claimed by "
        "the API-only process",
    ]
