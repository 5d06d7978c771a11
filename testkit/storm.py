"""A storm of runs and cancels across service processes, and the history rules each run keeps
through it: ids 1..n without a gap, one terminal event, the last, the run's status equal to
it, a `done` run's answer in its record, the stored trace equal to the stream.

The rules report a broken history as data (its problems), so that the storm test asserts there
are none and `python -m bench --only storm` counts the whole histories; both start the same
deployment through `run_storm`."""

from __future__ import annotations

import json
import random
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import httpx

from agents.events import STATUS_OF_TERMINAL, TERMINAL_TYPES
from testkit.events import Event, read_events
from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from testkit.process import ServerProcess, start_side_by_side

BODY: dict[str, Any] = {"task": "What do the sources say?", "max_paths": 2}
# Cancel answers that are already final: the run's status may not move from them.
FINAL_STATUSES = frozenset(STATUS_OF_TERMINAL.values())


@dataclass(frozen=True)
class History:
    """One run's history as a follower read it, and the rules it broke."""

    run_id: str
    terminal: str | None  # the last event's type when it is a terminal one
    problems: tuple[str, ...]
    seconds: float | None  # from `run_started` to the terminal event (their `ts`)

    @property
    def whole(self) -> bool:
        return not self.problems


def check_history(url: str, run_id: str, events: list[Event]) -> History:
    """The history rules for one run's streamed `events`, against its record and its stored
    trace as `url` serves them."""
    seqs = [seq for seq, _, _ in events]
    kinds = [kind for _, kind, _ in events]
    problems: list[str] = []
    if seqs != list(range(1, len(seqs) + 1)):
        problems.append(f"ids are not 1..{len(seqs)}: {seqs}")
    if not kinds or kinds[0] != "run_started":
        problems.append(f"the first event is not run_started: {kinds[:1]}")
    if sum(k in TERMINAL_TYPES for k in kinds) != 1:
        problems.append(f"not exactly one terminal event: {kinds}")
    terminal = kinds[-1] if kinds and kinds[-1] in TERMINAL_TYPES else None
    if kinds and terminal is None:
        problems.append(f"the last event is not terminal: {kinds[-1]}")
    with httpx.Client(base_url=url, timeout=30) as client:
        run = client.get(f"/runs/{run_id}").json()
        lines = client.get(f"/runs/{run_id}/trace").text.splitlines()
    trace = [json.loads(line)["id"] for line in lines]
    if trace != seqs:
        problems.append(f"the stored trace {trace} is not the stream {seqs}")
    if terminal is not None and run.get("status") != STATUS_OF_TERMINAL[terminal]:
        problems.append(f"status {run.get('status')!r} after a {terminal!r} event")
    if terminal == "done" and run.get("answer") != events[-1][2]["answer"]:
        problems.append("the record's answer is not the done event's")
    return History(run_id, terminal, tuple(problems), _seconds(events) if terminal else None)


def _seconds(events: list[Event]) -> float:
    first, last = (datetime.fromisoformat(events[i][2]["ts"]) for i in (0, -1))
    return (last - first).total_seconds()


@dataclass(frozen=True)
class RunEnd:
    """How one run of a storm ended; `cancel_after_s` and `cancel_answer` only for a run that
    was cancelled: when the cancel was sent, after the run was created, and the status it
    answered with."""

    index: int  # the order in which the runs were created
    history: History
    cancel_after_s: float | None = None
    cancel_answer: str | None = None

    @property
    def problems(self) -> list[str]:
        """The history's problems, and a cancel answer the run's end contradicts (a final
        status never changes)."""
        found = list(self.history.problems)
        answer, terminal = self.cancel_answer, self.history.terminal
        if (
            answer in FINAL_STATUSES
            and terminal is not None
            and answer != STATUS_OF_TERMINAL[terminal]
        ):
            found.append(f"the cancel answered {answer!r}, the run ended {terminal!r}")
        return found


@dataclass(frozen=True)
class StormResult:
    """Every run of a storm by id, in the order they were created."""

    ends: dict[str, RunEnd]
    starting_s: float  # to start every run: the cancels come after
    seconds: float = 0.0  # the storm alone, the processes' start not counted
    processes: list[ServerProcess] = field(default_factory=list)  # in the order of their commands

    @property
    def terminals(self) -> Counter[str | None]:
        return Counter(end.history.terminal for end in self.ends.values())

    @property
    def problems(self) -> list[str]:
        """`run <id> (#<index>): <problem>`, every broken rule of every run."""
        return [
            f"run {run_id} (#{end.index}): {problem}"
            for run_id, end in self.ends.items()
            for problem in end.problems
        ]

    @property
    def whole(self) -> int:
        return sum(not end.problems for end in self.ends.values())


def storm(
    urls: list[str],
    runs: int,
    cancels: int,
    seed: int,
    *,
    threads: int = 8,
    cancel_within_s: float = 0.5,
    body: Mapping[str, Any] | None = None,
) -> StormResult:
    """Start `runs` runs through random processes, cancel `cancels` of them at random moments
    (up to `cancel_within_s` after it is picked up) through random processes, follow each from
    a random process and check its history. A run that cannot be started ends the storm; a
    follower that fails is a problem of its run."""
    rng = random.Random(seed)
    created: dict[str, float] = {}
    began = time.monotonic()
    request = dict(body or BODY)
    with httpx.Client(timeout=30) as client:
        for index in range(runs):
            # A task of each run's own: an identical request would reuse the first run's
            # result at once (agents/reuse.py), and the cancels would race nothing.
            task = {**request, "task": f"{request['task']} #{index}"}
            response = client.post(f"{rng.choice(urls)}/runs", json=task)
            if response.status_code != 202:
                raise RuntimeError(f"a run was not started: {response.status_code} {response.text}")
            created[response.json()["run_id"]] = time.monotonic()
    ids = list(created)
    starting_s = time.monotonic() - began
    doomed = set(rng.sample(ids, cancels))

    def one(index: int, run_id: str) -> RunEnd:
        local = random.Random(run_id)
        after: float | None = None
        answer: str | None = None
        try:
            if run_id in doomed:
                # A random moment: queued, running or done.
                time.sleep(local.uniform(0, cancel_within_s))
                after = time.monotonic() - created[run_id]
                with httpx.Client(timeout=30) as c:
                    cancelled = c.post(f"{local.choice(urls)}/runs/{run_id}/cancel")
                if cancelled.status_code != 200:
                    failed = f"the cancel answered {cancelled.status_code}: {cancelled.text}"
                    return RunEnd(index, History(run_id, None, (failed,), None), after)
                answer = cancelled.json()["status"]
            follow = local.choice(urls)
            history = check_history(follow, run_id, read_events(follow, run_id))
        except httpx.HTTPError as e:
            history = History(run_id, None, (f"following it failed: {e!r}",), None)
        return RunEnd(index, history, after, answer)

    with ThreadPoolExecutor(threads) as pool:
        ends = list(pool.map(one, range(len(ids)), ids))
    return StormResult({end.history.run_id: end for end in ends}, starting_s)


@dataclass(frozen=True)
class StormConfig:
    """The storm of the storm test and benchmark: 3 processes (one API-only, two serving and
    executing) on one Postgres database and one Redis, 200 runs, 150 cancels."""

    runs: int = 200
    cancels: int = 150
    seed: int = 11
    threads: int = 24
    cancel_within_s: float = 2.0
    sim_latency_s: float = 0.02  # per simulated model call
    commands: tuple[tuple[str, ...], ...] = (("serve", "--no-worker"), ("serve",), ("serve",))
    max_active_runs: int = 16  # per executing process
    max_queued_runs: int = 400


def run_storm(
    config: StormConfig,
    procs: list[ServerProcess],
    env: Mapping[str, str],
    database_url: str,
    redis_url: str,
) -> StormResult:
    """Start the deployment (added to `procs`, which the caller kills) against the Gemini
    simulator and run the storm through every process; `seconds` is the storm's alone."""
    env = {
        **env,
        "LATS_DATABASE_URL": database_url,
        "LATS_REDIS_URL": redis_url,
        "LATS_MAX_ACTIVE_RUNS": str(config.max_active_runs),
        "LATS_MAX_QUEUED_RUNS": str(config.max_queued_runs),
        "LATS_SSE_HEARTBEAT_S": "5",
    }
    # A task of this storm's own: the shared model cache in Redis outlives it.
    body = {**BODY, "task": f"{BODY['task']} ({uuid.uuid4().hex})"}
    with GeminiSimulator(research_scenario(), latency_s=config.sim_latency_s) as sim:
        env = {**env, "GOOGLE_GEMINI_BASE_URL": sim.base_url}
        started = start_side_by_side(procs, env, *config.commands)
        began = time.monotonic()
        result = storm(
            [p.url for p in started],
            config.runs,
            config.cancels,
            config.seed,
            threads=config.threads,
            cancel_within_s=config.cancel_within_s,
            body=body,
        )
        seconds = time.monotonic() - began
    return replace(result, seconds=seconds, processes=started)
