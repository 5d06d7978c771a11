"""The service and the engine's checkpoints on the local PostgreSQL (LATS_DATABASE_URL)."""

from __future__ import annotations

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from agents.engine import Engine
from agents.params import RunParams
from app.http.sse import aframes
from app.settings import Settings
from testkit.fakes import FakeModels
from testkit.scenario import Scenario
from tests.support.held_runs import service_with_held_run
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"], replans={"A": ["B", "C"]})
BODY = {"task": "t", "max_paths": 2, "strategy": "mcts"}


async def test_solve_rejoin_and_list_on_postgres(
    service_for: ServiceMaker, postgres_url: str
) -> None:
    async with service_for(TREE, database_url=postgres_url) as svc:
        seqs: list[int | None] = []
        async with svc.client.stream("POST", "/solve", json=BODY) as response:
            async for frame in aframes(response.aiter_lines()):
                seqs.append(frame.id)
                run_id = frame.json()["run_id"]
        async with svc.client.stream(
            "GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": "2"}
        ) as response:
            replay = [frame.id async for frame in aframes(response.aiter_lines())]
        run = (await svc.client.get(f"/runs/{run_id}")).json()
        listed = (await svc.client.get("/runs?status=done")).json()
        ready = (await svc.client.get("/readyz")).json()

    assert seqs == list(range(1, len(seqs) + 1))
    assert replay == seqs[2:]
    assert run["status"] == "done"
    assert [n["id"] for n in run["nodes"]] == ["n1", "n1.1", "n1.2"]
    assert run_id in [r["run_id"] for r in listed["runs"]]
    assert ready["checks"]["database"] == "ok"


async def test_cancel_on_postgres(service_for: ServiceMaker, postgres_url: str) -> None:
    body = {"task": "t", "max_paths": 1, "use_cache": False}
    held = service_with_held_run(service_for, body, database_url=postgres_url)
    async with held as (svc, gate, run_id):
        cancelled = (await svc.client.post(f"/runs/{run_id}/cancel")).json()

    assert cancelled["status"] == "cancelled"
    assert gate.cancelled == 1


async def test_engine_resumes_from_a_postgres_checkpoint(
    settings: Settings, postgres_url: str
) -> None:
    async with AsyncPostgresSaver.from_conn_string(postgres_url) as saver:
        await saver.setup()
        first = Engine(settings=settings, models=FakeModels(TREE), tools=[], checkpointer=saver)
        done = await first.run("t", RunParams(max_paths=2), run_id="pg-run")
        models = FakeModels(TREE)
        second = Engine(settings=settings, models=models, tools=[], checkpointer=saver)
        again = await second.resume("pg-run")

    assert done.status == again.status == "done"
    assert again.answer == done.answer
    assert models.recorder.calls == []
