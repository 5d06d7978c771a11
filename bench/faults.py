"""Benchmark 12, the fault table: each fault of the fault tests struck while runs are in flight,
and what the runs' clients saw.

The deployment: two `serve` processes (the real Gemini client against the simulator) on a
throwaway Postgres database reached through a TCP proxy of the benchmark's own, and a
`redis-server` of its own, so the machine's services are never stopped. For the full disk, one
`serve` on the embedded SQLite store with its data directory on a small tmpfs (root only).

Per fault, `runs` runs are started and followed by clients that re-join with `after` (the
`Last-Event-ID` of the SSE API) whenever a stream breaks or the service answers 503, as a
client following the docs does. Once the runs are under way the fault strikes, holds for its
time and is healed. Recorded per fault:

- the runs in flight when it struck (not ended by then);
- how the runs ended (`done`, `error`, `cancelled`) and how many histories are whole (the
  storm test's rules, `testkit/storm.py`);
- events lost (in the stored trace, never received by the run's client) and duplicated
  (received twice), both summed over the runs; the goal is 0 for both;
- the time to recover: from the heal until every process accepts a new run (202), and from
  the heal (and from the strike) until the last of the runs ended.
"""

from __future__ import annotations

import json
import logging
import random
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agents.events import TERMINAL_TYPES
from bench.workers import fresh_database
from testkit.events import Event, iter_events, read_events
from testkit.gemini_roles import research_scenario
from testkit.gemini_sim import GeminiSimulator
from testkit.process import ServerProcess, shared_runs_env, start_side_by_side
from testkit.redis_server import free_port, start_redis_server
from testkit.small_disk import fill, mount_tmpfs, unmount
from testkit.storm import BODY, check_history
from testkit.tcp_proxy import TcpProxy

STREAM_FAILED = "stream_failed"
"""The code of a stream that could not read its run's events (app/runs/following.py `Broken`)."""

logger = logging.getLogger(__name__)

REJOIN_PAUSE_S = 0.3  # a client's pause before it re-joins a broken stream
FOLLOW_TIMEOUT_S = 180.0  # a run's client gives up this long after the fault healed
DISK = "24m"
RESERVE_BYTES = 1024 * 1024
FAULTS = (
    "redis_refused",
    "redis_hung",
    "postgres_down",
    "postgres_down_past_wait",
    "postgres_hung",
    "worker_killed",
    "worker_frozen",
    "silent_readers",
    "disk_full",
)


@dataclass(frozen=True)
class FaultsConfig:
    faults: tuple[str, ...] = FAULTS
    runs: int = 8  # per fault
    strike_after_s: float = 1.5  # after the runs were started
    hold_s: float = 5.0  # how long each fault lasts (`worker_frozen`: past the lease)
    sim_latency_s: float = 0.3  # per simulated model call: runs last several seconds
    store_outage_s: float = 3.0  # LATS_STORE_OUTAGE_S: `postgres_down_past_wait` outlasts it
    past_wait_s: float = 8.0  # the hold of `postgres_down_past_wait`
    lease_ttl_s: float = 3.0
    silent_readers: int = 200
    seed: int = 5


@dataclass
class Deployment:
    """The processes and what a fault strikes: their Redis and the proxy in front of their
    database (the shared deployment), or the small disk under their data (the embedded one).
    `urls` follows restarts; `run_ids` are the runs of the fault striking now."""

    procs: list[ServerProcess]
    redis: RedisOfOwn | None = None
    proxy: TcpProxy | None = None
    disk: Path | None = None
    run_ids: list[str] = field(default_factory=list)

    @property
    def urls(self) -> list[str]:
        return [p.url for p in self.procs if p.proc is not None and p.proc.poll() is None]


class RedisOfOwn:
    """A `redis-server` on a port of its own that can be killed, frozen and started again."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.server: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.server = start_redis_server(self.port, self.directory)

    def kill(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.kill()
            self.server.wait(10)


@dataclass
class Followed:
    """What one run's client received, and when its terminal event came."""

    events: list[Event] = field(default_factory=list)
    ended_at: float | None = None
    rejoins: int = 0
    failure: str | None = None


def follow(
    urls: Callable[[], list[str]],
    run_id: str,
    rng: random.Random,
    give_up: Callable[[], bool],
    on_live: Callable[[Event, float], None] | None = None,
) -> Followed:
    """Follow `run_id` to its end through any of the live `urls`, re-joining after the last id
    received whenever the stream breaks, is refused or ends with `stream_failed` (the store
    could not be read: an `error` frame without `id:`, the stream's end and not the run's),
    until `give_up()`. `on_live(event,
    connected)` sees each event with the moment its stream was opened (`time.time()`), so
    that a caller can tell live events from replayed ones."""
    got = Followed()
    while not give_up():
        live = urls()
        if not live:
            time.sleep(REJOIN_PAUSE_S)
            continue
        after = got.events[-1][0] if got.events else 0
        connected = time.time()
        try:
            for event in iter_events(rng.choice(live), run_id, after, timeout=30):
                if event[0] == 0 and event[2].get("code") == STREAM_FAILED:
                    break  # the stream's own end, not the run's (no `id:`): re-join
                got.events.append(event)
                if on_live is not None:
                    on_live(event, connected)
                if event[1] in TERMINAL_TYPES:
                    got.ended_at = time.monotonic()
                    return got
        except (httpx.HTTPError, AssertionError):
            pass  # broken, or refused (503 while the store is away): re-join
        got.rejoins += 1
        time.sleep(REJOIN_PAUSE_S)
    got.failure = "no terminal event before the follower gave up"
    return got


def _after_heal(stop: threading.Event) -> Callable[[], bool]:
    """True once `FOLLOW_TIMEOUT_S` have passed since `stop` was set (the fault healed)."""
    deadline: list[float] = []

    def give_up() -> bool:
        if not stop.is_set():
            return False
        if not deadline:
            deadline.append(time.monotonic() + FOLLOW_TIMEOUT_S)
        return time.monotonic() > deadline[0]

    return give_up


def accepting(dep: Deployment, stop_at: float) -> float | None:
    """Seconds until every live process accepts a new run (202), polling; None by `stop_at`."""
    began = time.monotonic()
    pending = set(dep.urls)
    with httpx.Client(timeout=5) as client:
        while pending and time.monotonic() < stop_at:
            for url in list(pending):
                body = {**BODY, "task": f"probe ({uuid.uuid4().hex})", "use_cache": False}
                try:
                    if client.post(f"{url}/runs", json=body).status_code == 202:
                        pending.discard(url)
                except httpx.HTTPError:
                    pass
            if pending:
                time.sleep(0.1)
    return None if pending else time.monotonic() - began


@dataclass(frozen=True)
class Fault:
    """How a fault strikes and heals a deployment."""

    strike: Callable[[Deployment], Any]
    heal: Callable[[Deployment, Any], None]
    hold_s: float


def _signal_last(sig: int) -> Callable[[Deployment], ServerProcess]:
    """A strike: send `sig` to the deployment's last process; the victim is held for the heal."""

    def strike(dep: Deployment) -> ServerProcess:
        victim = dep.procs[-1]
        assert victim.proc is not None
        victim.proc.send_signal(sig)
        return victim

    return strike


def _restart(dep: Deployment, victim: ServerProcess) -> None:
    assert victim.proc is not None
    victim.proc.wait(30)
    victim.start(timeout_s=180)


def _wake(dep: Deployment, victim: ServerProcess) -> None:
    assert victim.proc is not None
    victim.proc.send_signal(signal.SIGCONT)


def _redis(dep: Deployment) -> RedisOfOwn:
    assert dep.redis is not None
    return dep.redis


def _redis_signal(dep: Deployment, sig: int) -> None:
    server = _redis(dep).server
    assert server is not None
    server.send_signal(sig)


def _proxy(dep: Deployment) -> TcpProxy:
    assert dep.proxy is not None
    return dep.proxy


def _disk(dep: Deployment) -> Path:
    assert dep.disk is not None
    return dep.disk


def _faults(config: FaultsConfig) -> dict[str, Fault]:
    return {
        "redis_refused": Fault(
            lambda dep: _redis(dep).kill(), lambda dep, _: _redis(dep).start(), config.hold_s
        ),
        "redis_hung": Fault(
            lambda dep: _redis_signal(dep, signal.SIGSTOP),
            lambda dep, _: _redis_signal(dep, signal.SIGCONT),
            config.hold_s,
        ),
        "postgres_down": Fault(
            lambda dep: _proxy(dep).cut(), lambda dep, _: _proxy(dep).restore(), config.hold_s
        ),
        "postgres_down_past_wait": Fault(
            lambda dep: _proxy(dep).cut(), lambda dep, _: _proxy(dep).restore(), config.past_wait_s
        ),
        "postgres_hung": Fault(
            lambda dep: _proxy(dep).hang(), lambda dep, _: _proxy(dep).restore(), config.hold_s
        ),
        "worker_killed": Fault(_signal_last(signal.SIGKILL), _restart, config.hold_s),
        "worker_frozen": Fault(
            _signal_last(signal.SIGSTOP), _wake, config.lease_ttl_s + config.hold_s
        ),
        "silent_readers": Fault(
            lambda dep: _silent_readers(dep, config.silent_readers),
            lambda dep, socks: _close_all(socks),
            config.hold_s,
        ),
        "disk_full": Fault(
            lambda dep: fill(_disk(dep)), lambda dep, filler: filler.unlink(), config.hold_s
        ),
    }


def _silent_readers(dep: Deployment, count: int) -> list[socket.socket]:
    """`count` connections asking for the striking runs' streams, then never reading."""
    socks: list[socket.socket] = []
    host, port = dep.urls[0].removeprefix("http://").split(":")
    for i in range(count):
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        run_id = dep.run_ids[i % len(dep.run_ids)]
        sock.sendall(f"GET /runs/{run_id}/events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        socks.append(sock)
    return socks


def _close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()


def strike_once(dep: Deployment, name: str, fault: Fault, config: FaultsConfig) -> dict[str, Any]:
    """`config.runs` runs through the fault `name`; its row of the table."""
    rng = random.Random(f"{config.seed}-{name}")
    body = {**BODY, "use_cache": False}
    with httpx.Client(timeout=30) as client:
        run_ids = []
        for _ in range(config.runs):
            started = client.post(
                f"{rng.choice(dep.urls)}/runs",
                json={**body, "task": f"{BODY['task']} ({uuid.uuid4().hex})"},
            )
            if started.status_code != 202:
                raise RuntimeError(f"{name}: a run was not started: {started.text}")
            run_ids.append(started.json()["run_id"])
    dep.run_ids = run_ids
    stop = threading.Event()
    with ThreadPoolExecutor(len(run_ids)) as pool:
        futures = [
            pool.submit(follow, lambda: dep.urls, run_id, random.Random(run_id), _after_heal(stop))
            for run_id in run_ids
        ]
        time.sleep(config.strike_after_s)
        with httpx.Client(timeout=10) as client:
            statuses = [client.get(f"{dep.urls[0]}/runs/{r}").json()["status"] for r in run_ids]
        in_flight = sum(s in ("queued", "running") for s in statuses)
        logger.info("faults: %s strikes, %d runs in flight", name, in_flight)
        struck = time.monotonic()
        held = fault.strike(dep)
        time.sleep(fault.hold_s)
        fault.heal(dep, held)
        healed = time.monotonic()
        stop.set()
        accept_s = accepting(dep, healed + FOLLOW_TIMEOUT_S)
        followed = [f.result() for f in futures]
    row = _row(dep, name, run_ids, followed, in_flight, healed, accept_s)
    ends = [got.ended_at for got in followed if got.ended_at is not None]
    return {**row, "struck_to_end_s": round(max(ends) - struck, 2) if ends else None}


def _row(
    dep: Deployment,
    name: str,
    run_ids: list[str],
    followed: list[Followed],
    in_flight: int,
    healed: float,
    accept_s: float | None,
) -> dict[str, Any]:
    url = dep.urls[0]
    lost = duplicated = whole = 0
    terminals: Counter[str] = Counter()
    problems: list[str] = []
    with httpx.Client(timeout=30) as client:
        for run_id, got in zip(run_ids, followed, strict=True):
            lines = client.get(f"{url}/runs/{run_id}/trace").text.splitlines()
            trace = [json.loads(line)["id"] for line in lines]
            received = [seq for seq, _, _ in got.events]
            lost += len(set(trace) - set(received))
            duplicated += len(received) - len(set(received))
            history = check_history(url, run_id, read_events(url, run_id))
            whole += history.whole
            terminals[history.terminal or "no end"] += 1
            problems += [f"{run_id}: {p}" for p in history.problems]
            if got.failure:
                problems.append(f"{run_id}: {got.failure}")
    ends = [got.ended_at for got in followed if got.ended_at is not None]
    return {
        "fault": name,
        "runs": len(run_ids),
        "in_flight": in_flight,
        "terminals": dict(terminals.most_common()),
        "whole": whole,
        "lost": lost,
        "duplicated": duplicated,
        "rejoins": sum(got.rejoins for got in followed),
        "accepting_s": None if accept_s is None else round(accept_s, 2),
        # 0: every run had ended before the heal.
        "ended_s": round(max(0.0, max(ends) - healed), 2) if ends else None,
        "problems": problems[:10],
    }


@contextmanager
def shared_deployment(
    config: FaultsConfig, sim: GeminiSimulator, work: Path
) -> Iterator[Deployment]:
    """Two `serve` processes on a throwaway Postgres database behind a proxy and a Redis of
    their own."""
    redis = RedisOfOwn(work / "redis")
    redis.directory.mkdir(parents=True, exist_ok=True)
    redis.start()
    procs: list[ServerProcess] = []
    try:
        with fresh_database() as database_url, TcpProxy.before(database_url) as proxy:
            env = {
                **shared_runs_env(work / "shared"),
                "GOOGLE_GEMINI_BASE_URL": sim.base_url,
                "LATS_DATABASE_URL": proxy.through(database_url),
                "LATS_REDIS_URL": redis.url,
                "LATS_STORE_OUTAGE_S": str(config.store_outage_s),
                "LATS_LEASE_TTL_S": str(config.lease_ttl_s),
            }
            start_side_by_side(procs, env, ("serve",), ("serve",))
            yield Deployment(procs, redis=redis, proxy=proxy)
    finally:
        for proc in procs:
            proc.kill()  # SIGKILL ends a stopped process too
        redis.kill()


@contextmanager
def disk_deployment(sim: GeminiSimulator, work: Path) -> Iterator[Deployment | str]:
    """One `serve` on the embedded store, its data on a small tmpfs; why not, when it cannot
    be mounted."""
    mount = work / "disk"
    why = mount_tmpfs(mount, DISK)
    if why is not None:
        yield why
        return
    procs: list[ServerProcess] = []
    try:
        env = {
            **shared_runs_env(work / "embedded"),
            "GOOGLE_GEMINI_BASE_URL": sim.base_url,
            "LATS_DATA_DIR": str(mount / "data"),
            "LATS_STORAGE_RESERVE_BYTES": str(RESERVE_BYTES),
        }
        start_side_by_side(procs, env, ("serve",))
        yield Deployment(procs, disk=mount)
    finally:
        for proc in procs:
            proc.kill()
        unmount(mount)


def run_faults(config: FaultsConfig, work: Path) -> dict[str, Any]:
    """Every fault of `config` in turn; the table as bench/results/faults.json holds it."""
    faults = _faults(config)
    unknown = set(config.faults) - set(faults)
    if unknown:
        raise ValueError(f"unknown faults: {sorted(unknown)}; known: {', '.join(FAULTS)}")
    rows: list[dict[str, Any]] = []
    tracebacks = 0
    with GeminiSimulator(research_scenario(), latency_s=config.sim_latency_s) as sim:
        shared = [name for name in config.faults if name != "disk_full"]
        if shared:
            with shared_deployment(config, sim, work) as dep:
                for name in shared:
                    rows.append(strike_once(dep, name, faults[name], config))
                tracebacks += sum(proc.log().count("Traceback") for proc in dep.procs)
        if "disk_full" in config.faults:
            with disk_deployment(sim, work) as embedded:
                if isinstance(embedded, str):
                    logger.warning("faults: disk_full not run: %s", embedded)
                    rows.append({"fault": "disk_full", "not_run": embedded})
                else:
                    rows.append(strike_once(embedded, "disk_full", faults["disk_full"], config))
                    tracebacks += embedded.procs[0].log().count("Traceback")
    return {
        "config": {
            "runs": config.runs,
            "strike_after_s": config.strike_after_s,
            "hold_s": config.hold_s,
            "past_wait_s": config.past_wait_s,
            "store_outage_s": config.store_outage_s,
            "lease_ttl_s": config.lease_ttl_s,
            "sim_latency_s": config.sim_latency_s,
            "silent_readers": config.silent_readers,
        },
        "rows": rows,
        "tracebacks": tracebacks,
    }


def summary(faults: dict[str, Any]) -> list[str]:
    """One line per fault, for the bench's closing summary."""
    lines = []
    for row in faults["rows"]:
        if "not_run" in row:
            lines.append(f"fault {row['fault']:<24} not run: {row['not_run']}")
            continue
        ends = ", ".join(f"{k} {v}" for k, v in row["terminals"].items())
        lines.append(
            f"fault {row['fault']:<24} in flight {row['in_flight']}/{row['runs']}  {ends}  "
            f"whole {row['whole']}  lost {row['lost']}  duplicated {row['duplicated']}  "
            f"accepting after {row['accepting_s']} s  ended after {row['ended_s']} s "
            f"({row['struck_to_end_s']} s after the strike)"
        )
    return lines
