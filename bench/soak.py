"""Benchmark 13, the soak: the shared deployment under a steady load for a long time, with
random cancels and a worker restarted every few minutes.

An API process (`serve --no-worker`) and two `worker` processes (the real Gemini client against
the simulator) on a throwaway Postgres database and the local Redis. Runs arrive at a steady
rate, each followed over SSE through the API process by a client that re-joins after the last
id when its stream breaks; a share of them is cancelled at a random moment. Every
`restart_every_s` one worker (in turn) is stopped with SIGTERM (its drain) and started again.

Recorded:
- the API process's RSS and open files (it lives the whole soak) after the warm-up and at the
  end, and each worker life's RSS and open files at its end;
- per window of `window_s`: runs started and ended, how they ended, whole histories (the
  storm test's rules), and the latency of live events (received minus the event's `ts`; events
  replayed after a re-join are not counted) as p50 and p99.
"""

from __future__ import annotations

import logging
import random
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.faults import follow
from bench.process import proc_status_kib
from bench.stats import percentile
from bench.workers import REDIS_URL, fresh_database
from testkit.events import Event, read_events
from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from testkit.process import ServerProcess, shared_runs_env, start_side_by_side
from testkit.storm import BODY, check_history

logger = logging.getLogger(__name__)

SAMPLE_EVERY_S = 10.0
FOLLOW_LIMIT_S = 300.0  # a run's client gives up this long after the run was started


@dataclass(frozen=True)
class SoakConfig:
    duration_s: float = 1800.0
    warmup_s: float = 60.0  # the API process's "start" sample is taken after this
    window_s: float = 300.0
    restart_every_s: float = 300.0
    runs_per_s: float = 1.0
    cancel_share: float = 0.2
    cancel_within_s: float = 3.0
    sim_latency_s: float = 0.05
    clients: int = 48  # runs followed at once, at most
    seed: int = 13


@dataclass
class Sample:
    at_s: float
    rss_mib: float
    open_files: int


@dataclass
class Window:
    started: int = 0
    ended: Counter[str] = field(default_factory=Counter)
    whole: int = 0
    broken: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)


def _sample(proc: ServerProcess, at_s: float) -> Sample | None:
    if proc.proc is None or proc.proc.poll() is not None:
        return None
    pid = proc.proc.pid
    try:
        files = len(list(Path(f"/proc/{pid}/fd").iterdir()))
        return Sample(at_s, proc_status_kib(pid, "VmRSS") / 1024, files)
    except (OSError, ValueError):
        return None


class Soak:
    """One soak's clock, load and records."""

    def __init__(self, config: SoakConfig, api: ServerProcess, workers: list[ServerProcess]):
        self.config = config
        self.api = api
        self.workers = workers
        self.began = time.monotonic()
        self.rng = random.Random(config.seed)
        self.lock = threading.Lock()
        self.windows: dict[int, Window] = {}
        self.api_samples: list[Sample] = []
        self.worker_lives: list[dict[str, Any]] = []
        self.pending: list[threading.Thread] = []  # cancels to send, restarts under way

    def now_s(self) -> float:
        return time.monotonic() - self.began

    def window(self, at_s: float) -> Window:
        with self.lock:
            return self.windows.setdefault(int(at_s // self.config.window_s), Window())

    def one_run(self, index: int) -> None:
        local = random.Random(f"{self.config.seed}-{index}")
        started_s = self.now_s()
        window = self.window(started_s)
        body = {**BODY, "task": f"{BODY['task']} ({uuid.uuid4().hex})", "use_cache": False}
        with httpx.Client(base_url=self.api.url, timeout=30) as client:
            answer = client.post("/runs", json=body)
            if answer.status_code != 202:
                window.broken.append(f"submit answered {answer.status_code}: {answer.text}")
                return
            run_id = answer.json()["run_id"]
            with self.lock:
                window.started += 1
            if local.random() < self.config.cancel_share:
                timer = threading.Timer(
                    local.uniform(0, self.config.cancel_within_s), self._cancel, (run_id,)
                )
                self._begin(timer)

        def live(event: Event, connected: float) -> None:
            sent = datetime.fromisoformat(event[2]["ts"]).timestamp()
            if sent >= connected:  # not a replay
                latency_ms = (time.time() - sent) * 1000
                got = self.window(self.now_s())
                with self.lock:
                    got.latencies_ms.append(latency_ms)

        limit = time.monotonic() + FOLLOW_LIMIT_S
        followed = follow(
            lambda: [self.api.url], run_id, local, lambda: time.monotonic() > limit, live
        )
        history = check_history(self.api.url, run_id, read_events(self.api.url, run_id))
        with self.lock:
            window.ended[history.terminal or "no end"] += 1
            window.whole += history.whole
            window.broken += [f"{run_id}: {p}" for p in history.problems]
            if followed.failure:
                window.broken.append(f"{run_id}: {followed.failure}")

    def _begin(self, thread: threading.Thread) -> None:
        with self.lock:
            self.pending.append(thread)
        thread.start()

    def _cancel(self, run_id: str) -> None:
        try:
            httpx.post(f"{self.api.url}/runs/{run_id}/cancel", timeout=30)
        except httpx.HTTPError as e:
            logger.warning("soak: a cancel failed: %r", e)

    def restart(self, which: int) -> None:
        """SIGTERM worker `which` (its drain), note its life's end, start it again."""
        worker = self.workers[which]
        end = _sample(worker, self.now_s())
        assert worker.proc is not None
        worker.proc.send_signal(signal.SIGTERM)
        code = worker.proc.wait(120)
        if end is not None:
            self.worker_lives.append({"worker": which, "exit": code, **end.__dict__})
        worker.start(timeout_s=180)
        logger.info("soak: worker %d restarted at %.0f s (exit %s)", which, self.now_s(), code)

    def run(self) -> None:
        config = self.config
        next_restart = config.restart_every_s
        next_sample = 0.0
        restarts = 0
        futures: list[Future[None]] = []
        with ThreadPoolExecutor(config.clients) as pool:
            index = 0
            while (at := self.now_s()) < config.duration_s:
                if at >= next_sample:
                    if (api := _sample(self.api, at)) is not None:
                        self.api_samples.append(api)
                    next_sample += SAMPLE_EVERY_S
                if at >= next_restart:
                    # In a thread of its own: the drain takes seconds, the load goes on.
                    self._begin(threading.Thread(target=self.restart, args=(restarts % 2,)))
                    restarts += 1
                    next_restart += config.restart_every_s
                futures.append(pool.submit(self.one_run, index))
                index += 1
                time.sleep(self.rng.expovariate(config.runs_per_s))
            for future in futures:
                future.result()
        for thread in self.pending:
            thread.join()
        for which, worker in enumerate(self.workers):
            if (end := _sample(worker, self.now_s())) is not None:
                self.worker_lives.append({"worker": which, "exit": None, **end.__dict__})
        if (api := _sample(self.api, self.now_s())) is not None:
            self.api_samples.append(api)


def run_soak(config: SoakConfig, work: Path) -> dict[str, Any]:
    """One soak on a database of its own; its outcome as bench/results/soak.json holds it."""
    procs: list[ServerProcess] = []
    with (
        fresh_database() as database_url,
        GeminiSimulator(research_scenario(), latency_s=config.sim_latency_s) as sim,
    ):
        env = {
            **shared_runs_env(work / "soak"),
            "GOOGLE_GEMINI_BASE_URL": sim.base_url,
            "LATS_DATABASE_URL": database_url,
            "LATS_REDIS_URL": REDIS_URL,
        }
        try:
            api, *workers = start_side_by_side(
                procs, env, ("serve", "--no-worker"), ("worker",), ("worker",)
            )
            soak = Soak(config, api, workers)
            soak.run()
        finally:
            tracebacks = sum(proc.log().count("Traceback") for proc in procs)
            for proc in procs:
                proc.kill()
    return _outcome(config, soak, tracebacks)


def _outcome(config: SoakConfig, soak: Soak, tracebacks: int) -> dict[str, Any]:
    after_warmup = [s for s in soak.api_samples if s.at_s >= config.warmup_s]
    first, last = after_warmup[0], soak.api_samples[-1]

    def growth(pick: Callable[[Sample], float]) -> float:
        return round(pick(last) / pick(first) - 1, 4)

    windows = []
    for key in sorted(soak.windows):
        w = soak.windows[key]
        lat = sorted(w.latencies_ms)
        windows.append(
            {
                "from_s": key * config.window_s,
                "started": w.started,
                "ended": dict(w.ended.most_common()),
                "whole": w.whole,
                "broken": w.broken[:10],
                "events": len(lat),
                "latency_p50_ms": round(percentile(lat, 50), 1) if lat else None,
                "latency_p99_ms": round(percentile(lat, 99), 1) if lat else None,
            }
        )
    return {
        "config": {k: v for k, v in config.__dict__.items()},
        "api": {
            "start": first.__dict__,
            "end": last.__dict__,
            "rss_growth": growth(lambda s: s.rss_mib),
            "open_files_growth": growth(lambda s: s.open_files),
            "samples": [s.__dict__ for s in soak.api_samples],
        },
        "worker_lives": soak.worker_lives,
        "windows": windows,
        "tracebacks": tracebacks,
    }


def summary(soak: dict[str, Any]) -> list[str]:
    """The API process's growth and one line per window, for the bench's closing summary."""
    api = soak["api"]
    lines = [
        f"soak API process RSS {api['start']['rss_mib']:.0f} -> {api['end']['rss_mib']:.0f} MiB "
        f"({api['rss_growth'] * 100:+.1f}%), open files {api['start']['open_files']} -> "
        f"{api['end']['open_files']} ({api['open_files_growth'] * 100:+.1f}%)"
    ]
    for w in soak["windows"]:
        ends = ", ".join(f"{k} {v}" for k, v in w["ended"].items())
        lines.append(
            f"soak from {w['from_s']:>5.0f} s: started {w['started']}, {ends}, whole {w['whole']}, "
            f"event p50 {w['latency_p50_ms']} ms p99 {w['latency_p99_ms']} ms"
        )
    return lines
