"""A step's state writes land with the checkpoint that ends it (app/store/saver_guard.py): the
store's checkpointers save no writes beside it, and a round whose checkpoint never landed is the
only one a resumed run executes again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.graph.state import CompiledStateGraph

from agents.errors import RunNotFound
from agents.graph import build_graph
from agents.params import RunParams
from app.settings import Settings
from app.store.backend import open_backend
from testkit.event_log import EventLog
from testkit.fakes import step_to_execute
from testkit.scenario import Scenario
from tests.support.makers import EngineMaker

TREE = Scenario(plan=["A"], replans={"A": ["B", "C", "D"]})
PARAMS = RunParams(strategy="mcts", max_paths=3)


def _successors(graph: CompiledStateGraph[Any, Any, Any, Any], node: str) -> list[str]:
    builder = graph.builder
    plain = [end for start, end in builder.edges if start == node]
    return plain + [f"branch:{name}" for name in builder.branches.get(node, {})]


def test_every_node_of_the_engine_graph_goes_on_to_one_successor() -> None:
    # What leaving a step's writes to its checkpoint relies on: one task per step.
    graph = build_graph()
    for node in graph.builder.nodes:
        assert len(_successors(graph, node)) == 1, node


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_run_on_the_store_leaves_no_writes_beside_its_checkpoints(
    backend: str,
    settings: Settings,
    make_engine: EngineMaker,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    where: dict[str, Any] = {"data_dir": tmp_path}
    if backend == "postgres":
        where = {"database_url": request.getfixturevalue("postgres_url")}
    async with open_backend(settings.model_copy(update=where)) as (_, saver):
        engine, _ = make_engine(TREE, checkpointer=saver)
        result = await engine.run("task?", PARAMS, run_id="r1")
        checkpoints = [t async for t in saver.alist({"configurable": {"thread_id": "r1"}})]

    assert result.status == "done"
    assert len(checkpoints) > 3  # the plan, the rounds, the finish
    assert min(t.metadata["step"] for t in checkpoints) == 1  # the plan's: none before it
    assert all(not t.pending_writes for t in checkpoints)


async def test_only_the_round_whose_checkpoint_failed_runs_again_on_resume(
    settings: Settings, make_engine: EngineMaker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = settings.model_copy(update={"data_dir": tmp_path})
    executed_at_checkpoint: list[int] = []
    async with open_backend(local) as (_, saver):
        first, first_models = make_engine(TREE, checkpointer=saver)
        put = saver.aput

        async def put_until_the_database_goes(*args: Any, **kwargs: Any) -> Any:
            # It goes away at the end of the first round that ran steps after one that did.
            executed = len(first_models.recorder.by_role("executor"))
            if executed_at_checkpoint and 0 < executed_at_checkpoint[-1] < executed:
                raise ConnectionError("the checkpoint database went away")
            executed_at_checkpoint.append(executed)
            return await put(*args, **kwargs)

        monkeypatch.setattr(saver, "aput", put_until_the_database_goes)
        failed = await first.run("task?", PARAMS, run_id="r2")
    first_steps = [step_to_execute(c) for c in first_models.recorder.by_role("executor")]
    checkpointed = first_steps[: executed_at_checkpoint[-1]]
    lost = first_steps[executed_at_checkpoint[-1] :]

    async with open_backend(local) as (_, saver):
        second, second_models = make_engine(TREE, checkpointer=saver)
        result = await second.resume("r2", sink=EventLog())
    again = [step_to_execute(c) for c in second_models.recorder.by_role("executor")]

    assert failed.status == "failed"
    assert result.status == "done"
    assert checkpointed
    assert lost
    assert not set(checkpointed) & set(again)
    assert set(lost) <= set(again)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_new_runs_input_is_saved_with_its_plans_checkpoint_not_on_its_own(
    backend: str,
    settings: Settings,
    make_engine: EngineMaker,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    where: dict[str, Any] = {"data_dir": tmp_path}
    if backend == "postgres":
        where = {"database_url": request.getfixturevalue("postgres_url")}
    run_id = f"input-{backend}-{tmp_path.name}"
    config: Any = {"configurable": {"thread_id": run_id}}
    async with open_backend(settings.model_copy(update=where)) as (_, saver):
        first, first_models = make_engine(TREE, checkpointer=saver)
        put = saver.aput
        sources: list[str] = []

        async def put_only_the_plan(*args: Any, **kwargs: Any) -> Any:
            # The database goes away after the first checkpoint that lands: the plan's.
            if sources.count("loop") == 2:
                raise ConnectionError("the checkpoint database went away")
            sources.append(args[2]["source"])
            return await put(*args, **kwargs)

        monkeypatch.setattr(saver, "aput", put_only_the_plan)
        failed = await first.run("task?", PARAMS, run_id=run_id)
        stored = [t async for t in saver.alist(config)]
        values = (await first.graph.aget_state(config)).values
        monkeypatch.undo()

        second, second_models = make_engine(TREE, checkpointer=saver)
        result = await second.resume(run_id, sink=EventLog())

    assert failed.status == "failed"
    # Offered: the request (step -1), the request applied (0), the plan (1); the plan's landed.
    assert sources == ["input", "loop", "loop"]
    assert [t.metadata["step"] for t in stored] == [1]
    # The request's channels landed with the plan's checkpoint.
    assert values["task"] == "task?"
    assert values["params"] == PARAMS.model_dump()
    assert [node["step"] for node in values["nodes"].values()] == ["A"]
    assert len(first_models.recorder.by_role("planner")) == 1
    assert not second_models.recorder.by_role("planner")  # the plan is not made again
    assert result.status == "done"
    assert result.metrics["paths_completed"] == PARAMS.max_paths


async def test_a_run_stopped_before_its_plan_landed_has_no_checkpoint_to_resume(
    settings: Settings, make_engine: EngineMaker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_backend(settings.model_copy(update={"data_dir": tmp_path})) as (_, saver):
        engine, _ = make_engine(TREE, checkpointer=saver)
        put = saver.aput

        async def put_inputs_only(*args: Any, **kwargs: Any) -> Any:
            if args[2]["source"] != "input":
                raise ConnectionError("the checkpoint database went away")
            return await put(*args, **kwargs)

        monkeypatch.setattr(saver, "aput", put_inputs_only)
        failed = await engine.run("task?", PARAMS, run_id="r3")
        stored = [t async for t in saver.alist({"configurable": {"thread_id": "r3"}})]
        monkeypatch.undo()
        with pytest.raises(RunNotFound):  # the service starts it from its record instead
            await engine.resume("r3")

    assert failed.status == "failed"
    assert stored == []
