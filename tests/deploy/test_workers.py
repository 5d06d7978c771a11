"""API replicas and workers as separate containers: a run stored through one API replica and
followed through the other is executed by a worker container, and a run whose worker container
is killed is finished by the other worker once the lease has expired."""

from __future__ import annotations

import json
import re
import threading
import time

from tests.support.deploy import (
    DOCKER,
    FIGURES,
    Stack,
    follow,
    new_task,
    run,
    start_executing,
)

RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

# Run inside an API replica: each reaches that replica alone, on its own loopback.
CREATE = """
import json, sys, httpx
reply = httpx.post("http://127.0.0.1:8000/runs", json=json.loads(sys.argv[1]), timeout=30)
reply.raise_for_status()
print(reply.json()["run_id"])
"""
FOLLOW = """
import sys, httpx
from app.http.sse import frames
url = f"http://127.0.0.1:8000/runs/{sys.argv[1]}/events"
with httpx.stream("GET", url, headers={"Last-Event-ID": "0"}, timeout=120) as reply:
    for frame in frames(reply.iter_lines()):
        print(frame.event, flush=True)
"""


def owner_of(stack: Stack, run_id: str) -> str:
    """The worker holding the run's lease now ('' when none does)."""
    assert RUN_ID.fullmatch(run_id), run_id
    return stack.sql(f"SELECT coalesce(owner, '') FROM lats_runs WHERE id = '{run_id}'")


def host_of(owner: str) -> str:
    """A worker identity is `<host name>-<pid>-<random>`; a container's host name is its id's
    first 12 digits."""
    return owner.rsplit("-", 2)[0]


def claimed_in(stack: Stack, container: str, run_id: str) -> bool:
    logs = run([DOCKER, "logs", container], stack.env)  # the service logs to stderr
    return f"run={run_id} claimed by owner=" in logs.stdout + logs.stderr


def test_a_run_stored_by_one_replica_and_followed_through_another_runs_on_a_worker(
    stack: Stack,
) -> None:
    run_id = stack.in_replica(2, CREATE, json.dumps(new_task())).strip()
    followed: list[str] = []
    follower = threading.Thread(
        target=lambda: followed.extend(stack.in_replica(1, FOLLOW, run_id).split()), daemon=True
    )
    follower.start()
    owners: set[str] = set()
    while follower.is_alive():
        owner = owner_of(stack, run_id)
        if owner:
            owners.add(owner)
        time.sleep(0.2)
    follower.join()
    workers, apis = stack.containers("worker"), stack.containers("api")
    claimers = [host for host, cid in workers.items() if claimed_in(stack, cid, run_id)]

    assert followed[-1] == "done", followed
    assert "error" not in followed
    assert len(owners) == 1, owners  # one worker held it from start to end
    (owner,) = owners
    assert host_of(owner) in workers, (owner, workers)
    assert host_of(owner) not in apis
    assert claimers == [host_of(owner)]


def test_a_killed_workers_run_is_finished_by_the_other_worker(stack: Stack) -> None:
    workers = stack.containers("worker")
    run_id = start_executing(stack.url, new_task())
    owner = owner_of(stack, run_id)
    assert host_of(owner) in workers, (owner, workers)
    killed = workers[host_of(owner)]
    try:
        stack.engine.docker("kill", killed)
        start = time.monotonic()
        events = follow(stack.url, run_id, timeout=120)
        FIGURES["killed worker: kill to the run's end (s)"] = round(time.monotonic() - start, 1)
        others = [cid for cid in workers.values() if cid != killed]
        finisher = [cid for cid in others if claimed_in(stack, cid, run_id)]
    finally:
        stack.compose("up", "-d", "--no-build", "--wait", timeout=240)  # the worker back
    kinds = [kind for _, kind, _ in events]

    assert kinds[-1] == "done", json.dumps(events[-3:])
    assert len(finisher) == 1, others
