"""Live steering through POST /runs/{id}/commands (the real app, its SQLite store, scripted
models): a pruned subtree never runs, a boosted node gets the highest prior, an added step
runs, each command is a `steered` event with the sender's key name, and a command for a run
that has ended is a 409."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from app.http.sse import frames
from app.runs import manager
from testkit.fakes import executed_steps
from testkit.gate import Gate
from testkit.scenario import Scenario
from tests.support.held_runs import start_held
from tests.support.makers import ServiceMaker

ALICE = "alice-secret-4d1c"
KEYS = {"api_keys": [SecretStr(f"alice:{ALICE}")]}
AS_ALICE = {"Authorization": f"Bearer {ALICE}"}
BODY = {"task": "t", "max_paths": 5, "max_concurrency": 1, "strategy": "mcts"}


# A -> B, C, E; a gate on it holds B's executor, so commands sent meanwhile land before the
# next round.
TREE = Scenario(plan=["A"], replans={"A": ["B", "C", "E"]})


async def events_to_end(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/runs/{run_id}/events", headers=AS_ALICE, timeout=30)
    return [frame.json() for frame in frames(response.text.splitlines())]


async def test_a_pruned_subtree_never_runs_and_an_added_step_runs(
    service_for: ServiceMaker,
) -> None:
    gate = Gate(TREE)
    async with service_for(gate, **KEYS) as svc:
        run_id = await start_held(svc.client, gate, BODY, headers=AS_ALICE, within_s=20)
        nodes = {
            n["step"]: n["id"]
            for n in (await svc.client.get(f"/runs/{run_id}", headers=AS_ALICE)).json()["nodes"]
        }
        sent = [
            await svc.client.post(f"/runs/{run_id}/commands", json=body, headers=AS_ALICE)
            for body in (
                {"command": "prune", "node_id": nodes["C"]},
                {"command": "boost", "node_id": nodes["E"]},
                {"command": "add_step", "node_id": nodes["A"], "step": "D"},
                {"command": "boost", "node_id": nodes["A"]},
            )
        ]
        gate.release.set()
        events = await events_to_end(svc.client, run_id)
        run = (await svc.client.get(f"/runs/{run_id}", headers=AS_ALICE)).json()
        late = await svc.client.post(
            f"/runs/{run_id}/commands", json={"command": "prune", "node_id": "n1"}, headers=AS_ALICE
        )

    executed = executed_steps(svc.models)
    assert [r.status_code for r in sent] == [202] * 4
    assert [r.json()["command_id"] for r in sent] == [1, 2, 3, 4]
    assert "C" not in executed
    assert "D" in executed
    steered = [e for e in events if e["type"] == "steered"]
    assert [(e["command"], e["applied"], e["by"]) for e in steered] == [
        ("prune", True, "alice"),
        ("boost", True, "alice"),
        ("add_step", True, "alice"),
        ("boost", False, "alice"),
    ]
    assert steered[0]["pruned"] == [nodes["C"]]
    assert steered[2]["node"]["step"] == "D"
    assert steered[2]["node"]["parent_id"] == nodes["A"]
    assert "has run already" in steered[3]["reason"]
    by_step = {n["step"]: n for n in run["nodes"]}
    assert by_step["C"]["status"] == "pruned"
    assert by_step["E"]["prior"] == 1.0
    assert by_step["D"]["status"] == "done"
    assert events[-1]["type"] == "done"
    assert late.status_code == 409
    assert late.json()["code"] == "run_ended"


async def test_a_command_for_an_unknown_node_is_refused_in_its_event(
    service_for: ServiceMaker,
) -> None:
    gate = Gate(TREE)
    async with service_for(gate) as svc:
        run_id = await start_held(svc.client, gate, BODY, within_s=20)
        sent = await svc.client.post(
            f"/runs/{run_id}/commands", json={"command": "prune", "node_id": "n9.9"}
        )
        gate.release.set()
        response = await svc.client.get(f"/runs/{run_id}/events", timeout=30)

    steered = [f.json() for f in frames(response.text.splitlines()) if f.event == "steered"]
    assert sent.status_code == 202
    assert [(e["applied"], e["reason"], e["by"]) for e in steered] == [
        (False, "no node n9.9", None)
    ]


async def test_malformed_commands_are_422_and_an_unknown_run_404(
    service_for: ServiceMaker,
) -> None:
    async with service_for(Scenario(plan=["A"])) as svc:
        run_id = (await svc.client.post("/runs", json={"task": "t"})).json()["run_id"]
        bad = [
            await svc.client.post(f"/runs/{run_id}/commands", json=body)
            for body in (
                {"command": "add_step", "node_id": "n1"},
                {"command": "prune", "node_id": "n1", "step": "x"},
                {"command": "prune", "node_id": "root"},
                {"command": "explode", "node_id": "n1"},
                {"command": "add_step", "node_id": "n1", "step": "x" * 501},
                {"command": "add_step", "node_id": "n1", "step": "   "},
            )
        ]
        missing = await svc.client.post(
            "/runs/nope/commands", json={"command": "prune", "node_id": "n1"}
        )

    assert [r.status_code for r in bad] == [422] * 6
    assert missing.status_code == 404


async def test_a_run_takes_at_most_its_share_of_commands(
    service_for: ServiceMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager, "MAX_COMMANDS_PER_RUN", 2)
    gate = Gate(TREE)
    async with service_for(gate) as svc:
        run_id = await start_held(svc.client, gate, BODY, within_s=20)
        sent = [
            await svc.client.post(
                f"/runs/{run_id}/commands", json={"command": "boost", "node_id": "n1.3"}
            )
            for _ in range(3)
        ]
        gate.release.set()

    assert [r.status_code for r in sent] == [202, 202, 429]
    assert sent[-1].json()["code"] == "too_many_commands"
